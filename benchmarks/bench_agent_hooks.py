"""Benchmark: a Codex CLI and a Gemini CLI hook's CPU per call on a long session, beside a whole read.

Run: ``python benchmarks/bench_agent_hooks.py [--mb 4] [--turns 40] [--gemini-repeats 150]``

Codex: a rollout of ``--mb`` megabytes is built (:mod:`codex_rollout`, Codex 0.60's order; no real
log is copied) and all but its last ``--turns`` model requests are written to a file the hooks read
once (priming). Then, one request at a time, the rest is appended and a PostToolUse hook runs in
this process (:func:`ctxhealth.integrations.claude_code.hooks.run_hook`, as ``ctxhealth hook
--agent codex`` runs it, without the interpreter's start-up) in two homes side by side:

* ``incremental``: the hooks as they are, reading from the cut the last call left
  (``counters.reader``);
* ``whole``: the same hooks with that cut forgotten before each call, so the rollout is read whole,
  as every call did before the reader could resume.

Gemini: the recorded Gemini CLI 0.61 ``tools`` chat's turn repeated ``--gemini-repeats`` times (ids
made unique), its last ``--turns`` records appended one at a time, an AfterTool hook after each:
``incremental`` goes on from the monitor kept before the last response; ``whole`` has that forgotten,
so a fresh monitor is given every message (both read the chat whole: its records are upserts).

Prints the CPU time per call (median and p90, ms; ``time.process_time``) of each, and stops with an
error unless both gave the same output and the same assessment at every call.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codex_rollout import synthetic_rollout

from ctxhealth.integrations.claude_code.agents import Agent
from ctxhealth.integrations.claude_code.hooks import run_hook
from ctxhealth.integrations.claude_code.tailstate import load_counters, save_counters

GEMINI_FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/agents/gemini-0.61.0/tools/chat.jsonl"


def _requests(data: bytes) -> list[bytes]:
    """The rollout cut before each ``turn_context`` (one model request per piece)."""
    pieces: list[bytes] = []
    current: list[bytes] = []
    for line in data.splitlines(keepends=True):
        if b'"type":"turn_context"' in line.replace(b" ", b"") and current:
            pieces.append(b"".join(current))
            current = []
        current.append(line)
    pieces.append(b"".join(current))
    return pieces


def _gemini_chat(repeats: int) -> list[bytes]:
    """A long Gemini CLI 0.61 chat: the recorded ``tools`` chat's turn repeated ``repeats`` times, each
    repetition's ids made its own (a response is still written twice, the second time with its calls)."""
    lines = GEMINI_FIXTURE.read_bytes().splitlines(keepends=True)
    out = lines[:2]
    for n in range(repeats):
        out += [re.sub(rb'"id":"([^"]+)"', rb'"id":"\1-%d"' % n, line) for line in lines[2:]]
    return out


def _call(home: Path, rollout: Path, step: int, agent: Agent = Agent.CODEX) -> tuple[str, float]:
    event = "PostToolUse" if agent is Agent.CODEX else "AfterTool"
    payload = {
        "session_id": "bench",
        "transcript_path": str(rollout),
        "cwd": "/home/dev/proj",
        "hook_event_name": event,
        "model": "gpt-5-codex",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": "",
        "tool_use_id": f"bench-{step}",
    }
    start = time.process_time()
    result = run_hook(event, json.dumps(payload).encode(), home=str(home), agent=agent)
    return result.stdout, (time.process_time() - start) * 1000


def _forget(home: Path, path: Path, key: str | None) -> None:
    """Make the next call read as before: no cut (``key`` None) or no kept monitor (``key``)."""
    counters = load_counters(str(home), str(path))
    if counters is None or counters.reader is None:
        return
    if key is None:
        counters.reader = None
    else:
        counters.reader.pop(key, None)
    save_counters(str(home), counters)


def _side_by_side(
    head: bytes, rest: list[bytes], agent: Agent, forget: str | None, tmp: Path
) -> dict[str, list[float]]:
    homes = {name: tmp / agent.value / name for name in ("incremental", "whole")}
    files = {name: home / "transcript.jsonl" for name, home in homes.items()}
    cpu: dict[str, list[float]] = {name: [] for name in homes}
    for name, path in files.items():
        path.parent.mkdir(parents=True)
        path.write_bytes(head)
        _call(homes[name], path, -1, agent)
    for step, piece in enumerate(rest):
        outs = []
        for name, path in files.items():
            with path.open("ab") as f:
                f.write(piece)
            if name == "whole":
                _forget(homes[name], path, forget)
            out, ms = _call(homes[name], path, step, agent)
            outs.append(out)
            cpu[name].append(ms)
        states = [load_counters(str(homes[n]), str(files[n])) for n in homes]
        if (
            outs[0] != outs[1]
            or [getattr(c, "assessment", None) for c in states].count(states[0].assessment) != 2
        ):  # type: ignore[union-attr]
            raise SystemExit(f"{agent.value} call {step}: the two homes answered differently")
    return cpu


def _figures(cpu: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "cpu_ms_median": round(statistics.median(v), 2),
            "cpu_ms_p90": round(sorted(v)[max(int(len(v) * 0.9) - 1, 0)], 2),
        }
        for name, v in cpu.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0, help="rollout size in MB (default 4)")
    parser.add_argument("--turns", type=int, default=40, help="requests appended one by one (default 40)")
    parser.add_argument("--gemini-repeats", type=int, default=150, help="turns of the long Gemini chat")
    args = parser.parse_args()
    pieces = _requests(synthetic_rollout(int(args.mb * 1024 * 1024)))
    turns = min(args.turns, len(pieces) - 1)
    chat = _gemini_chat(args.gemini_repeats)
    records = min(args.turns, len(chat) - 3)
    with tempfile.TemporaryDirectory() as tmp:
        codex_cpu = _side_by_side(b"".join(pieces[:-turns]), pieces[-turns:], Agent.CODEX, None, Path(tmp))
        gemini_cpu = _side_by_side(
            b"".join(chat[:-records]), chat[-records:], Agent.GEMINI, "settled", Path(tmp)
        )
    report = {
        "codex": {"rollout_bytes": sum(map(len, pieces)), "calls": turns, **_figures(codex_cpu)},
        "gemini": {"chat_bytes": sum(map(len, chat)), "calls": records, **_figures(gemini_cpu)},
    }
    print(json.dumps(report, indent=2))
    for agent, what in (("codex", "rollout_bytes"), ("gemini", "chat_bytes")):
        figures = report[agent]
        size, calls = figures[what] / 1e6, figures["calls"]
        print(f"\n{agent} hook on a {size:.2f} MB transcript, {calls} calls, same answers:")
        for name in ("incremental", "whole"):
            median, p90 = figures[name]["cpu_ms_median"], figures[name]["cpu_ms_p90"]  # type: ignore[index]
            print(f"  {name:<12} CPU/call median {median:8.2f} ms   p90 {p90:8.2f} ms")


if __name__ == "__main__":
    main()
