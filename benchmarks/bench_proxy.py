"""Benchmark: the proxy under load on loopback, against calling the upstream directly in the same run.

Run: ``python benchmarks/bench_proxy.py [--requests 200] [--rounds 3] [--ramp 4] [--gap 300] [--mode M]``

Three processes on 127.0.0.1: a local upstream (this script with ``--serve-upstream``) that streams the
recorded Anthropic SSE response (``tests/fixtures/wire/anthropic-messages.sse``) one event every
``--gap`` ms; the proxy (``ctxhealth proxy``, a real uvicorn process, ``--mode``); and this client.
Each round sends ``--requests`` streaming ``POST /v1/messages`` at once in flight (their starts spread
evenly over ``--ramp`` seconds; ``--ramp 0`` is a burst), first straight to the upstream, then through
the proxy. Every request is a session of its own (``x-ctxhealth-session``); a first, unmeasured round
sends each session's ``--history`` turns through the proxy (first contact: the whole history is
observed), then each measured round grows every conversation by one turn, so the proxy matches the
known prefix and observes only the new messages, as with a real agent. The proxy keeps its ledger
in a temporary directory (``--no-ledger``: none).

Per request: time to first byte (TTFB) and to the last byte; per proxied request, the proxy process's
CPU time (steadier than wall time on a shared machine). Printed per path: errors, p50 / p99 of
both; and the proxy's added latency, p50 and p99 of (proxy - direct) for TTFB and for the whole
stream (the same percentile of each distribution); the proxy's resident memory at the end. A table
goes to stderr; the last line on stdout is one JSON object. The aim: p99 added latency under 5 ms in
observe mode.

``--streams 1 10 100`` measures, in one run, the added first-byte latency at each number of
concurrent streams (each level: ``--samples`` requests per path at least, the starts spread over one
stream's length so that level is in flight throughout; the direct and the proxied streams of a round
run at the same time, the ``i``-th of each started together, so both meet the same machine at each
moment; besides the difference of the two p99s, the p99 of the per-pair difference), with the proxy's CPU per
request (its child processes included), the machine's CPU use and the load average beside each
level; ``--proxy-args`` passes flags to the proxy (``--guard-inline`` assesses observe-mode requests
before sending them, as before the guard moved beside the relay; ``--workers 2``).

``--scaling`` measures only, in process, the guard's CPU per request in steady state (two new
messages on a known prefix) at 20, 200 and 1,000 turns, against observing the whole conversation
afresh, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
SSE = ROOT / "tests" / "fixtures" / "wire" / "anthropic-messages.sse"


def serve_upstream(port: int, gap_ms: float) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    events = [e + b"\n\n" for e in SSE.read_bytes().split(b"\n\n") if e.strip()]

    async def messages(request: Request) -> Response:
        await request.body()

        async def stream() -> Any:
            for event in events:
                yield event
                await asyncio.sleep(gap_ms / 1000)

        return StreamingResponse(stream(), media_type="text/event-stream")

    app = Starlette(
        routes=[
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/raw/messages", messages, methods=["POST"]),  # a path the proxy only relays
        ]
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False, lifespan="off")


def history(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix the failing parser test in src/parser.py and run the test suite."}
    ]
    for i in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"Step {i}: reading the parser module to find the failing case.",
                    },
                    {
                        "type": "tool_use",
                        "id": f"toolu_{i:05d}",
                        "name": "Read",
                        "input": {"file_path": "src/parser.py"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i:05d}",
                        "content": "def parse(text):\n" * 40,
                    }
                ],
            }
        )
    return messages


async def one(client: Any, url: str, body: bytes, session: str, delay: float) -> tuple[float, float] | str:
    await asyncio.sleep(delay)
    started = time.perf_counter()
    first = None
    try:
        async with client.stream(
            "POST",
            url,
            content=body,
            headers={"content-type": "application/json", "x-ctxhealth-session": session},
        ) as response:
            if response.status_code != 200:
                return f"status {response.status_code}"
            async for chunk in response.aiter_raw():
                if first is None and chunk:
                    first = time.perf_counter()
        end = time.perf_counter()
    except Exception as exc:  # a benchmark counts every failure, whatever it is
        return repr(exc)
    return ((first or end) - started, end - started)


async def run_round(
    base: str, n: int, ramp: float, turns: int, label: str
) -> tuple[list[tuple[float, float]], list[str]]:
    import httpx

    body = {"model": "claude-sonnet-4-5", "max_tokens": 256, "stream": True, "messages": history(turns)}
    raw = json.dumps(body).encode()
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        tasks = [
            one(client, base + "/v1/messages", raw, f"{label}-{i}", ramp * i / max(1, n - 1) if ramp else 0.0)
            for i in range(n)
        ]
        results = await asyncio.gather(*tasks)
    ok = [r for r in results if isinstance(r, tuple)]
    errors = [r for r in results if isinstance(r, str)]
    return ok, errors


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def plan_scaling(sizes: list[int], repeat: int) -> dict[str, Any]:
    """In process: CPU per request of ``Guard.plan`` in steady state (two new messages on a known
    prefix) at each conversation size, against observing the whole conversation afresh (what a
    guard without prefix matching would do), in the same run."""
    from ctxhealth.integrations.guard import Guard, Mode
    from ctxhealth.integrations.wire import ApiStyle

    out: dict[str, Any] = {}
    for turns in sizes:
        bodies = [
            json.dumps(
                {"model": "claude-sonnet-4-5", "max_tokens": 256, "messages": history(turns + r)}
            ).encode()
            for r in range(repeat + 1)
        ]
        guard = Guard(Mode.OBSERVE)
        guard.plan(ApiStyle.ANTHROPIC_MESSAGES, bodies[0], {"x-ctxhealth-session": "s"})
        started = time.process_time()
        for body in bodies[1:]:
            guard.plan(ApiStyle.ANTHROPIC_MESSAGES, body, {"x-ctxhealth-session": "s"})
        steady = (time.process_time() - started) / repeat
        started = time.process_time()
        for i, body in enumerate(bodies[1:]):
            Guard(Mode.OBSERVE).plan(ApiStyle.ANTHROPIC_MESSAGES, body, {"x-ctxhealth-session": f"f{i}"})
        afresh = (time.process_time() - started) / repeat
        out[str(turns)] = {
            "body_kib": round(len(bodies[-1]) / 1024, 1),
            "steady_ms": round(steady * 1000, 3),
            "afresh_ms": round(afresh * 1000, 3),
        }
    return out


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine so far (``/proc/stat``)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


async def both(
    direct: str, proxied: str, n: int, ramp: float, turns: int, label: str
) -> list[tuple[tuple[float, float] | str, tuple[float, float] | str]]:
    """One round of ``n`` direct and ``n`` proxied streams at once, the ``i``-th of each started at
    the same moment: per pair, (direct result, proxied result)."""
    import httpx

    body = {"model": "claude-sonnet-4-5", "max_tokens": 256, "stream": True, "messages": history(turns)}
    raw = json.dumps(body).encode()
    limits = httpx.Limits(max_connections=2 * n + 10, max_keepalive_connections=2 * n + 10)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        delays = [ramp * i / max(1, n - 1) if ramp else 0.0 for i in range(n)]
        pairs = [
            asyncio.gather(
                one(client, direct + "/v1/messages", raw, f"direct{label}-{i}", delay),
                one(client, proxied + "/v1/messages", raw, f"proxy{label}-{i}", delay),
            )
            for i, delay in enumerate(delays)
        ]
        return [(a, b) for a, b in await asyncio.gather(*pairs)]


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and of its child processes (``--workers 2``'s guard process)."""
    total = cpu_seconds(pid)
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            total += tree_cpu_seconds(int(child))
    return total


def streams_levels(
    base_direct: str, proxy: Any, levels: list[int], samples: int, gap_ms: float, turns: int
) -> dict[str, Any]:
    """The added first-byte latency at each level of concurrent streams, in one run."""
    events = len([e for e in SSE.read_bytes().split(b"\n\n") if e.strip()])
    ramp = events * gap_ms / 1000  # one stream's length: the level stays in flight
    out: dict[str, Any] = {}
    for n in levels:
        rounds = max(2, -(-samples // n))
        label = f"s{n}"
        asyncio.run(run_round(proxy.url, n, ramp, turns, f"proxy{label}"))  # first contact, unmeasured
        data: dict[str, list[float]] = {"direct": [], "proxy": [], "paired": []}
        errors = 0
        cpu = relay_cpu = 0.0
        busy0, total0 = machine_cpu()
        for r in range(1, rounds + 1):
            # direct and proxied streams at the same time: both see the same machine at each moment
            before, relay_before = tree_cpu_seconds(proxy.process.pid), cpu_seconds(proxy.process.pid)
            pairs = asyncio.run(both(base_direct, proxy.url, n, ramp, turns + r, label))
            cpu += tree_cpu_seconds(proxy.process.pid) - before
            relay_cpu += cpu_seconds(proxy.process.pid) - relay_before
            for a, b in pairs:
                if isinstance(a, tuple):
                    data["direct"].append(a[0])
                if isinstance(b, tuple):
                    data["proxy"].append(b[0])
                if isinstance(a, tuple) and isinstance(b, tuple):
                    data["paired"].append(b[0] - a[0])
                errors += isinstance(a, str) + isinstance(b, str)
        busy1, total1 = machine_cpu()
        ms = 1000.0
        out[str(n)] = {
            "samples": len(data["proxy"]),
            "errors": errors,
            "direct_ttfb_p50_ms": round(pct(data["direct"], 50) * ms, 3),
            "direct_ttfb_p99_ms": round(pct(data["direct"], 99) * ms, 3),
            "proxy_ttfb_p50_ms": round(pct(data["proxy"], 50) * ms, 3),
            "proxy_ttfb_p99_ms": round(pct(data["proxy"], 99) * ms, 3),
            "added_ttfb_p50_ms": round((pct(data["proxy"], 50) - pct(data["direct"], 50)) * ms, 3),
            "added_ttfb_p99_ms": round((pct(data["proxy"], 99) - pct(data["direct"], 99)) * ms, 3),
            # the added time per pair (a proxied stream minus the direct one started with it): the
            # client's and the machine's stalls that hit both cancel out
            "paired_added_ttfb_p50_ms": round(pct(data["paired"], 50) * ms, 3),
            "paired_added_ttfb_p99_ms": round(pct(data["paired"], 99) * ms, 3),
            "proxy_cpu_ms_per_request": round(cpu / max(1, len(data["proxy"])) * ms, 3),
            # the process that relays (without the guard's own process, when there is one)
            "relay_cpu_ms_per_request": round(relay_cpu / max(1, len(data["proxy"])) * ms, 3),
            "machine_cpu_busy": round((busy1 - busy0) / max(1.0, total1 - total0), 3),
            "load_average_1m": os.getloadavg()[0],
        }
        r = out[str(n)]
        print(
            f"{n:>4} streams: direct p99 {r['direct_ttfb_p99_ms']:8.2f} ms, proxy p99 "
            f"{r['proxy_ttfb_p99_ms']:8.2f} ms, added p50 {r['added_ttfb_p50_ms']:7.2f} / p99 "
            f"{r['added_ttfb_p99_ms']:7.2f} ms; paired added p50 {r['paired_added_ttfb_p50_ms']:7.2f} / p99 "
            f"{r['paired_added_ttfb_p99_ms']:7.2f} ms; "
            f"proxy CPU {r['proxy_cpu_ms_per_request']:.2f} ms/request "
            f"(relay {r['relay_cpu_ms_per_request']:.2f}); "
            f"machine busy {r['machine_cpu_busy']:.0%}; load {r['load_average_1m']:.2f}; "
            f"{r['samples']} samples, {r['errors']} errors",
            file=sys.stderr,
        )
    return out


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--ramp", type=float, default=4.0, help="seconds over which a round's starts are spread"
    )
    parser.add_argument("--gap", type=float, default=300.0, help="ms between the upstream's events")
    parser.add_argument("--history", type=int, default=20, help="turns in each conversation at the start")
    parser.add_argument("--mode", default="observe", choices=["observe", "advise", "enforce"])
    parser.add_argument("--no-ledger", action="store_true", help="run the proxy without its ledger")
    parser.add_argument(
        "--scaling", action="store_true", help="only the in-process cost of a request by conversation size"
    )
    parser.add_argument("--streams", type=int, nargs="*", help="levels of concurrent streams, e.g. 1 10 100")
    parser.add_argument(
        "--samples", type=int, default=60, help="--streams: requests per path per level, at least"
    )
    parser.add_argument("--proxy-args", default="", help="extra flags for the proxy, e.g. --guard-inline")
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream, args.gap)
        return
    if args.scaling:
        result = plan_scaling([20, 200, 1000], 20)
        for turns, r in result.items():
            print(
                f"{turns:>5} turns, {r['body_kib']:>8} KiB: steady {r['steady_ms']:8.3f} ms, "
                f"afresh {r['afresh_ms']:9.3f} ms",
                file=sys.stderr,
            )
        print(json.dumps({"plan_cpu_by_turns": result}))
        return

    import subprocess

    import httpx

    from proxy_process import ProxyProcess
    from wire_upstream import free_port

    port = free_port()
    upstream = subprocess.Popen(
        [sys.executable, __file__, "--serve-upstream", str(port), "--gap", str(args.gap)]
    )
    direct = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.post(direct + "/v1/messages", content=b"{}", timeout=2)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    home = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    extra = args.proxy_args.split()
    proxy = ProxyProcess(direct, "--mode", args.mode, *extra, home=None if args.no_ledger else home)
    if args.streams:
        try:
            levels = streams_levels(direct, proxy, args.streams, args.samples, args.gap, args.history)
        finally:
            proxy.stop()
            upstream.terminate()
            upstream.wait()
            shutil.rmtree(home, ignore_errors=True)
        print(json.dumps({"mode": args.mode, "gap_ms": args.gap, "proxy_args": extra, "levels": levels}))
        return
    data: dict[str, dict[str, list[float]]] = {p: {"ttfb": [], "total": []} for p in ("direct", "proxy")}
    errors: dict[str, list[str]] = {"direct": [], "proxy": []}
    try:
        # first contact: every session's history is observed once (not measured as latency)
        cpu_before = cpu_seconds(proxy.process.pid)
        asyncio.run(run_round(proxy.url, args.requests, args.ramp, args.history, "proxy"))
        first_cpu = cpu_seconds(proxy.process.pid) - cpu_before
        proxy_cpu = 0.0
        for r in range(1, args.rounds + 1):
            for path, base in (("direct", direct), ("proxy", proxy.url)):
                cpu_before = cpu_seconds(proxy.process.pid)
                ok, errs = asyncio.run(run_round(base, args.requests, args.ramp, args.history + r, path))
                if path == "proxy":
                    proxy_cpu += cpu_seconds(proxy.process.pid) - cpu_before
                data[path]["ttfb"] += [t for t, _ in ok]
                data[path]["total"] += [t for _, t in ok]
                errors[path] += errs
        memory = rss_kib(proxy.process.pid)
        status = proxy.status()
    finally:
        proxy_log = proxy.stop()
        upstream.terminate()
        upstream.wait()
        shutil.rmtree(home, ignore_errors=True)

    ms = 1000.0
    summary: dict[str, Any] = {
        "requests_per_round": args.requests,
        "rounds": args.rounds,
        "ramp_s": args.ramp,
        "gap_ms": args.gap,
        "mode": args.mode,
        "history_turns": args.history,
    }
    for path in ("direct", "proxy"):
        d = data[path]
        summary[path] = {
            "ok": len(d["total"]),
            "errors": len(errors[path]),
            "error_examples": errors[path][:3],
            "ttfb_p50_ms": round(pct(d["ttfb"], 50) * ms, 3),
            "ttfb_p99_ms": round(pct(d["ttfb"], 99) * ms, 3),
            "total_p50_ms": round(pct(d["total"], 50) * ms, 3),
            "total_p99_ms": round(pct(d["total"], 99) * ms, 3),
        }
    for key in ("ttfb", "total"):
        for q in (50, 99):
            name = f"added_{key}_p{q}_ms"
            summary[name] = round((pct(data["proxy"][key], q) - pct(data["direct"][key], q)) * ms, 3)
    summary["proxy_rss_mib_at_end"] = round(memory / 1024, 1)
    proxied = args.requests * args.rounds
    summary["proxy_cpu_ms_per_request"] = round(proxy_cpu / proxied * ms, 3)
    summary["proxy_cpu_ms_first_contact"] = round(first_cpu / args.requests * ms, 3)
    summary["ledger"] = not args.no_ledger
    summary["load_average_1m"] = os.getloadavg()[0]
    summary["proxy_sessions"] = len(status["sessions"])  # type: ignore[arg-type]
    if errors["proxy"]:
        summary["proxy_log_tail"] = proxy_log[-3000:]
    summary["meets_target"] = (
        summary["added_ttfb_p99_ms"] < 5.0
        and summary["added_total_p99_ms"] < 5.0
        and summary["proxy"]["errors"] == 0
    )

    print(
        f"{'':8} {'ok':>5} {'err':>4} {'ttfb p50':>9} {'ttfb p99':>9} {'total p50':>10} {'total p99':>10}",
        file=sys.stderr,
    )
    for path in ("direct", "proxy"):
        s = summary[path]
        print(
            f"{path:8} {s['ok']:5d} {s['errors']:4d} {s['ttfb_p50_ms']:9.2f} {s['ttfb_p99_ms']:9.2f} "
            f"{s['total_p50_ms']:10.2f} {s['total_p99_ms']:10.2f}",
            file=sys.stderr,
        )
    print(
        f"added   ttfb p50 {summary['added_ttfb_p50_ms']:.2f} ms, p99 {summary['added_ttfb_p99_ms']:.2f} ms; "
        f"total p50 {summary['added_total_p50_ms']:.2f} ms, p99 {summary['added_total_p99_ms']:.2f} ms; "
        f"proxy RSS {summary['proxy_rss_mib_at_end']} MiB",
        file=sys.stderr,
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
