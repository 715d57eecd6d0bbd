"""Benchmark: the status line and each Claude Code hook as a whole process, cold and warm.

Run: ``python benchmarks/bench_hooks.py [--runs N] [--data DIR] [--gap SECONDS] [--json-only]``

A ~2 MB transcript is built in a temporary directory by repeating real Claude Code sessions (from
``../shared/data/claude-code`` or ``--data``) until it reaches 2 MB. Each command is run as Claude Code
runs it (the command each checkout's installer writes into the settings, ``statusline_command`` and
``hook_command``, with the JSON payload on stdin), side by side in the same run with bare
``python -c pass``:

* cold: a fresh ``CTXHEALTH_HOME`` for every run (nothing cached: the whole transcript is read);
* warm: the tail is cached (a priming run first), so only new bytes (none here) are read;
* turn (status line, UserPromptSubmit, PostToolUse, Stop: the commands that read the tail): warm,
  and one new assistant turn and its tool result are appended to the transcript before each run
  (``--gap`` seconds after the last run, 0.5 by default: an agent's turns are a model reply apart), so
  the run reads them and the session's monitor is restored, observes them and is saved again
  (PostToolUse, which the payload alone answered before its notices became the monitor's, reads the
  tail too and has the monitor assess the payload's call).

Two checkouts in the same run: ``after`` (this tree) and ``before`` (the code at ``--baseline``,
default ``main``, exported with ``git archive`` into the temporary directory and run from there with
``PYTHONPATH``; ``--baseline ''`` skips it). The status line and the per-turn hooks of this tree
start a helper process on demand (:mod:`ctxhealth.integrations.claude_code.helper`), so ``cold``
(a fresh home each run) is a command doing its own work and then starting a helper, while ``warm``
and ``turn`` are answered by the helper the priming run started. ``after_no_helper`` and
``before_no_helper`` (``CTXHEALTH_HELPER=off``, turn only) show each tree without it: the whole
work of a turn in the command's own CPU. Every helper started is stopped
(by the pid it records) before the temporary directory is removed.

Prints one JSON document (milliseconds: wall-clock medians and p90, and the child's CPU time, which
is steadier than wall time on a busy machine; with a helper most of a turn's work is done in the
helper, so compare wall times) and a table. The aim: turn under 3x bare Python start-up.
PreCompact reads the whole transcript by design (the checkpoint needs all of it), so its cold and
warm figures are alike.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from baseline_tree import export

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "claude-code"
TARGET_BYTES = 2 * 1024 * 1024
PY = sys.executable

EVENTS = {
    "statusline": None,
    "PostToolUse": {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make test"},
        "tool_response": {"stdout": "ok", "stderr": ""},
        "tool_use_id": "toolu_bench_1",
    },
    "PostToolUseFailure": {
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "make build"},
        "tool_use_id": "toolu_bench_2",
        "error": "exit 2",
    },
    "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "prompt": "carry on"},
    "Stop": {"hook_event_name": "Stop", "stop_hook_active": False},
    "PreCompact": {"hook_event_name": "PreCompact", "trigger": "auto"},
    "SessionStart": {"hook_event_name": "SessionStart", "source": "compact"},
}


def build_transcript(data: Path, out: Path) -> Path:
    sessions = sorted(data.rglob("*.jsonl"), key=lambda p: p.stat().st_size, reverse=True)
    if not sessions:
        raise SystemExit(f"no Claude Code sessions under {data}")
    target = out / "bench-session.jsonl"
    with target.open("wb") as sink:
        while target.stat().st_size < TARGET_BYTES:
            for source in sessions:
                sink.write(source.read_bytes())
                sink.flush()
                if target.stat().st_size >= TARGET_BYTES:
                    break
    return target


TURN_COMMANDS = ("statusline", "UserPromptSubmit", "PostToolUse", "Stop")


def settle(home: Path, wait: float = 5.0) -> None:
    """Wait for the helper a command started under ``home`` to come up, then stop it and wait until
    it is gone (it imports the whole pipeline as it starts: CPU the next measurement must not share)."""
    pid_file = home / "claude-code" / "helper.pid"
    deadline = time.monotonic() + wait
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        if Path(f"/proc/{pid}/stat").is_file() and ") Z" in Path(f"/proc/{pid}/stat").read_text():
            return  # exited; its parent (the finished command) is gone, init reaps it
        time.sleep(0.01)


def stop_helpers(tmp: Path) -> int:
    """Stop the helpers started under ``tmp`` (each records its pid in its home); return how many."""
    stopped = 0
    for pid_file in tmp.glob("*/claude-code/helper.pid"):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            stopped += 1
    return stopped


def one_turn(transcript: Path) -> bytes:
    """The transcript's last assistant line that calls a tool, and the line with its result."""
    lines = transcript.read_bytes().splitlines(keepends=True)
    for i in range(len(lines) - 1, 0, -1):
        if b'"tool_result"' in lines[i] and b'"type":"user"' in lines[i].replace(b" ", b""):
            for j in range(i - 1, -1, -1):
                if b'"tool_use"' in lines[j] and b'"type":"assistant"' in lines[j].replace(b" ", b""):
                    return lines[j] + lines[i]
    raise SystemExit("no tool call and result found in the benchmark transcript")


def payload_for(name: str, transcript: Path) -> bytes:
    common = {
        "session_id": "bench-session",
        "transcript_path": str(transcript),
        "cwd": str(transcript.parent),
    }
    if name == "statusline":
        body = {
            **common,
            "model": {"id": "claude-opus-4-20250514", "display_name": "Opus 4"},
            "cost": {"total_cost_usd": 1.0},
            "context_window": {
                "context_window_size": 200000,
                "current_usage": {
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 500,
                    "cache_read_input_tokens": 90000,
                },
            },
        }
    else:
        body = {**common, **(EVENTS[name] or {})}
    return json.dumps(body).encode()


_ASK_COMMAND = (
    "import sys; from ctxhealth.integrations.claude_code import install as i; "
    "name = sys.argv[1]; "
    "print(i.statusline_command(sys.executable) + ' --no-color' if name == 'statusline' "
    "else i.hook_command(sys.executable, name))"
)
_commands: dict[tuple[str, str], list[str]] = {}


def command_for(name: str, env: dict[str, str]) -> list[str]:
    """The command the checkout of ``env`` writes into the settings for ``name`` (its own
    ``hook_command`` / ``statusline_command``), split as the agent's shell splits it."""
    key = (env.get("PYTHONPATH", ""), name)
    if key not in _commands:
        done = subprocess.run([PY, "-c", _ASK_COMMAND, name], capture_output=True, env=env, check=True)
        _commands[key] = shlex.split(done.stdout.decode().strip())
    return _commands[key]


Sample = tuple[float, float]  # (wall ms, CPU ms of the child: user + system)


def run_once(cmd: list[str], stdin: bytes, env: dict[str, str]) -> Sample:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, capture_output=True, env=env, timeout=60, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or done.stderr.strip():
        raise SystemExit(f"{' '.join(cmd)} failed: rc={done.returncode} {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed * 1000, cpu * 1000


def summarise(samples: list[Sample]) -> dict[str, float]:
    wall = sorted(w for w, _ in samples)
    return {
        "median_ms": round(statistics.median(wall), 1),
        "p90_ms": round(wall[min(len(wall) - 1, int(0.9 * len(wall)))], 1),
        "min_ms": round(wall[0], 1),
        "cpu_median_ms": round(statistics.median(c for _, c in samples), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json-only", action="store_true")
    parser.add_argument("--only", nargs="*", choices=sorted(EVENTS), help="benchmark only these commands")
    parser.add_argument("--baseline", default="main", help="git revision measured as 'before' ('' to skip)")
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between two turns (0: back to back)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ctxhealth-bench-") as tmp_name:
        tmp = Path(tmp_name)
        transcript = build_transcript(args.data, tmp)
        extra = one_turn(transcript)
        # Bytecode caching on, as in any installed package (some environments turn it off), kept in a
        # private prefix so the source tree stays clean; the priming runs below fill it.
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PYTHONDONTWRITEBYTECODE")}
        env.pop("CTXHEALTH_HELPER", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        run_once([PY, "-c", "pass"], b"", env)
        bare: list[Sample] = []
        checkouts: dict[str, dict[str, str]] = {"after": env}
        if args.baseline:
            src = export(args.baseline, tmp / "baseline")
            checkouts = {"before": {**env, "PYTHONPATH": str(src)}, **checkouts}
        names = args.only or list(EVENTS)
        setup = Setup(args.runs, tmp, transcript, extra, args.gap)
        results: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
        try:
            for label, checkout_env in checkouts.items():
                results[label] = measure(setup, label, checkout_env, names, bare)
                off = {**checkout_env, "CTXHEALTH_HELPER": "off"}
                turns = [n for n in names if n in TURN_COMMANDS]
                no_helper = measure_turns(setup, f"{label}-off", off, turns)
                results[f"{label}_no_helper"] = {n: {"turn": f} for n, f in no_helper.items()}
        finally:
            stopped = stop_helpers(tmp)
            time.sleep(0.2)
        bare_summary = summarise(bare)
        base, base_cpu = bare_summary["median_ms"], bare_summary["cpu_median_ms"]
        for per_command in results.values():
            for figures in per_command.values():
                for mode in figures.values():
                    mode["x_bare"] = round(mode["median_ms"] / base, 2)
                    mode["cpu_x_bare"] = round(mode["cpu_median_ms"] / max(base_cpu, 0.1), 2)
        report = {
            "schema_version": 2,
            "python": sys.version.split()[0],
            "transcript_bytes": transcript.stat().st_size,
            "runs": args.runs,
            "baseline": args.baseline or None,
            "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
            "cpus": os.cpu_count(),
            "bare_python": bare_summary,
            "helpers_stopped": stopped,
            "checkouts": results,
        }
    print(json.dumps(report))
    if args.json_only:
        return
    mb = report["transcript_bytes"] / 1e6
    print(
        f"\ntranscript {mb:.2f} MB, {args.runs} runs; bare python {base} ms wall, {base_cpu} ms CPU (medians)"
    )
    head = ("checkout", "command", "cold ms", "cold x", "warm ms", "warm x", "turn ms", "turn p90", "turn x")
    print(f"{head[0]:<16}{head[1]:<20}" + "".join(f"{h:>10}" for h in head[2:]))
    for label, per_command in results.items():
        for name, figures in per_command.items():
            c, w, t = (figures.get(mode, {}) for mode in ("cold", "warm", "turn"))
            row = (c.get("median_ms"), c.get("x_bare"), w.get("median_ms"), w.get("x_bare"))
            row += (t.get("median_ms"), t.get("p90_ms"), t.get("x_bare"))
            print(f"{label:<16}{name:<20}" + "".join(f"{'-' if v is None else v:>10}" for v in row))


class Setup(NamedTuple):
    """What every measurement of a run shares: runs per figure, the temporary directory, the
    transcript, the turn appended before each turn run, and the seconds between two turns."""

    runs: int
    tmp: Path
    transcript: Path
    extra: bytes
    gap: float


def measure(
    setup: Setup, label: str, env: dict[str, str], names: list[str], bare: list[Sample]
) -> dict[str, dict[str, dict[str, float]]]:
    """Cold and warm runs of every command, and turns of the commands that read the tail."""
    runs, tmp, transcript = setup.runs, setup.tmp, setup.transcript
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name in names:
        cmd, stdin = command_for(name, env), payload_for(name, transcript)
        cold: list[Sample] = []
        warm: list[Sample] = []
        warm_home = tmp / f"home-{label}-warm-{name}"
        run_once(cmd, stdin, {**env, "CTXHEALTH_HOME": str(warm_home)})  # prime the tail and bytecode
        time.sleep(0.5)  # let the helper the priming run started come up
        for i in range(runs):
            cold_home = tmp / f"home-{label}-cold-{name}-{i}"
            bare.append(run_once([PY, "-c", "pass"], b"", env))
            cold.append(run_once(cmd, stdin, {**env, "CTXHEALTH_HOME": str(cold_home)}))
            if label == "after":
                settle(cold_home)  # the helper the cold run started must not compete with what follows
            warm.append(run_once(cmd, stdin, {**env, "CTXHEALTH_HOME": str(warm_home)}))
        stop_helpers(tmp)
        for i in range(runs):
            shutil.rmtree(tmp / f"home-{label}-cold-{name}-{i}", ignore_errors=True)
        results[name] = {"cold": summarise(cold), "warm": summarise(warm)}
    turn_names = [n for n in names if n in TURN_COMMANDS]
    turns = measure_turns(setup, label, env, turn_names)
    for name, figures in turns.items():
        results[name]["turn"] = figures
    return results


def measure_turns(
    setup: Setup, label: str, env: dict[str, str], names: list[str]
) -> dict[str, dict[str, float]]:
    """Warm runs, each after one new assistant turn and its tool result were appended, ``gap``
    seconds after the last one (an agent's turns are a model reply apart: the helper saves the last
    turn's counters after answering it, and back-to-back calls would wait for that instead)."""
    runs, tmp, transcript, extra, gap = setup
    out: dict[str, dict[str, float]] = {}
    for name in names:
        cmd = command_for(name, env)
        growing = tmp / f"growing-{label}-{name}.jsonl"
        shutil.copyfile(transcript, growing)
        turn_stdin, turn_home = payload_for(name, growing), tmp / f"home-{label}-turn-{name}"
        run_once(cmd, turn_stdin, {**env, "CTXHEALTH_HOME": str(turn_home)})
        time.sleep(0.5)
        turn: list[Sample] = []
        for _ in range(runs):
            time.sleep(gap)
            with growing.open("ab") as sink:
                sink.write(extra)
            turn.append(run_once(cmd, turn_stdin, {**env, "CTXHEALTH_HOME": str(turn_home)}))
        out[name] = summarise(turn)
    return out


if __name__ == "__main__":
    main()
