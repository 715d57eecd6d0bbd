"""Benchmark: hook and status-line time on hostile transcripts, beside an ordinary one, in one run.

Run: ``python benchmarks/bench_hooks_hostile.py [--data DIR] [--before-src DIR] [--kill-after S]``

Each command runs as Claude Code runs it (``python -m ctxhealth.cli.hook EVENT`` / ``python -m
ctxhealth.cli.statusline``, the JSON payload on stdin, a fresh ``CTXHEALTH_HOME`` per run) on:

* ``small``: a 5-turn transcript (the baseline), and ``real``: the largest real Claude Code session
  of ``--data`` (skipped when absent);
* ``generated-50mb``: a 50 MB Claude Code transcript of short-line tool output (the worst case for
  building a checkpoint), and ``one-line-50mb``: one 50 MB line without a line break;
* ``sparse-1gb`` (a 1 GB sparse file), ``fifo`` (a named pipe nobody writes), ``dev-zero`` and
  ``dev-urandom`` (symlinks to the devices), ``directory``.

Commands: PreCompact (writes a checkpoint), SessionStart ``compact`` without a PreCompact
checkpoint (builds one from the transcript), UserPromptSubmit and the status line (read the tail).
A run still going after ``--kill-after`` seconds (default 90; Claude Code stops a hook at 60 s) is
killed and reported as ``killed``; each run's address space is capped at ``--memory-cap-mb``
(default 2048), so code that reads a device until memory runs out fails there (a non-zero exit)
instead of taking the machine's memory. With ``--before-src`` the same table is measured for another
checkout (``PYTHONPATH=<dir>``) in the same run, for a before / after comparison.

Also measured: reading the real session and the generated one whole and building their checkpoint
in one process, in seconds per MB (``checkpoint_s_per_mb``, for both checkouts), the cost that the
windows and the budget bound.

Prints a table (wall seconds, and the child's peak RSS in MB) to stderr and, last, one JSON line:
``{"after": {file: {command: {"s": .., "rss_mb": .., "exit": .., "killed": ..}}}, "before": ..,
"worst_after_s": .., "files_mb": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "claude-code"
MB = 1024 * 1024
COMMANDS = ("PreCompact", "SessionStart", "UserPromptSubmit", "statusline")


# Runs a module as ``python -m`` does and, at exit, writes its peak RSS (``VmHWM``, kB: the
# process's own, not the forked parent's, which ``ru_maxrss`` would include) to the file in argv[1].
PEAK_RSS_WRAPPER = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                with open(out, "w") as handle:
                    handle.write(line.split()[1])
atexit.register(peak)
module = sys.argv.pop(1)
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def _line(kind: str, n: int, message: dict[str, Any]) -> str:
    parent = f"u{n - 1}" if n else None
    return json.dumps(
        {"type": kind, "uuid": f"u{n}", "parentUuid": parent, "sessionId": "bench", "message": message}
    )


def _write_transcript(path: Path, target_bytes: int, short_lines: int = 200) -> Path:
    """A Claude Code transcript of ``target_bytes``: Bash calls whose results are many short lines."""
    with path.open("w") as out:
        out.write(
            _line("user", 0, {"role": "user", "content": "Find why the build of src/ fails and fix it"})
            + "\n"
        )
        n, size, turn = 1, 0, 0
        while size < target_bytes:
            usage = {"input_tokens": 10, "cache_read_input_tokens": 20_000 + turn, "output_tokens": 30}
            call = {
                "type": "tool_use",
                "id": f"t{turn}",
                "name": "Bash",
                "input": {"command": f"grep -rn x src/{turn}"},
            }
            text = {"type": "text", "text": f"Looking at module {turn} next."}
            message = {"id": f"m{turn}", "role": "assistant", "model": "claude-sonnet-4-5-20250929"}
            lines = [_line("assistant", n, {**message, "content": [text, call], "usage": usage})]
            output = "\n".join(f"src/m{turn}/f{j}.py:{j}: x = call_{j}()" for j in range(short_lines))
            result = {"type": "tool_result", "tool_use_id": f"t{turn}", "content": output}
            lines.append(_line("user", n + 1, {"role": "user", "content": [result]}))
            chunk = "\n".join(lines) + "\n"
            out.write(chunk)
            size += len(chunk)
            n, turn = n + 2, turn + 1
    return path


def _files(tmp: Path, data: Path) -> dict[str, Path]:
    files: dict[str, Path] = {"small": _write_transcript(tmp / "small.jsonl", 1, short_lines=5)}
    real = sorted(data.rglob("*.jsonl"), key=lambda p: p.stat().st_size) if data.is_dir() else []
    if real:
        files["real"] = real[-1]
    files["generated-50mb"] = _write_transcript(tmp / "generated.jsonl", 50 * MB)
    one_line = tmp / "one-line.jsonl"
    with one_line.open("wb") as handle:
        handle.write(b'{"type": "user", "message": {"content": "' + b"x" * (50 * MB) + b'"}}')
    files["one-line-50mb"] = one_line
    sparse = tmp / "sparse.jsonl"
    with sparse.open("wb") as handle:
        handle.truncate(1024 * MB)
    files["sparse-1gb"] = sparse
    fifo = tmp / "fifo.jsonl"
    os.mkfifo(fifo)
    files["fifo"] = fifo
    for name, device in (("dev-zero", "/dev/zero"), ("dev-urandom", "/dev/urandom")):
        link = tmp / f"{name}.jsonl"
        link.symlink_to(device)
        files[name] = link
    directory = tmp / "directory.jsonl"
    directory.mkdir()
    files["directory"] = directory
    return files


def _payload(command: str, transcript: Path) -> bytes:
    body: dict[str, Any] = {"session_id": "bench", "transcript_path": str(transcript)}
    if command == "statusline":
        body["model"] = {"id": "claude-sonnet-4-5"}
    else:
        body["hook_event_name"] = command
        body.update(
            {"PreCompact": {"trigger": "auto"}, "SessionStart": {"source": "compact"}}.get(command, {})
        )
        if command == "UserPromptSubmit":
            body["prompt"] = "go on"
    return json.dumps(body).encode()


def _cap_memory(megabytes: int) -> Any:
    def cap() -> None:
        import resource

        limit = megabytes * MB
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


def _run_one(
    command: str, transcript: Path, src: Path | None, kill_after: float, cap_mb: int
) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="ctxhealth-bench-home-"))
    env = {**os.environ, "CTXHEALTH_HOME": str(home)}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    args = ["ctxhealth.cli.statusline"] if command == "statusline" else ["ctxhealth.cli.hook", command]
    started = time.perf_counter()
    peak_file = home / "peak-rss-kb"
    proc = subprocess.Popen(
        [sys.executable, "-c", PEAK_RSS_WRAPPER, str(peak_file), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        preexec_fn=_cap_memory(cap_mb),
    )
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        proc.kill()

    timer = threading.Timer(kill_after, kill)
    timer.start()
    try:
        assert proc.stdin is not None
        try:
            proc.stdin.write(_payload(command, transcript))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        proc.wait()
        elapsed = time.perf_counter() - started
        peak_kb = int(peak_file.read_text()) if peak_file.exists() else 0
    finally:
        timer.cancel()
        shutil.rmtree(home, ignore_errors=True)
    return {
        "s": round(elapsed, 3),
        "rss_mb": round(peak_kb / 1024, 1),
        "exit": proc.returncode,
        "killed": killed.is_set(),
    }


def _measure(
    files: dict[str, Path], src: Path | None, kill_after: float, cap_mb: int
) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for name, path in files.items():
        table[name] = {}
        for command in COMMANDS:
            table[name][command] = _run_one(command, path, src, kill_after, cap_mb)
    return table


# Reads a transcript whole and builds its redacted checkpoint, in a fresh process; prints seconds.
CHECKPOINT_TIMER = """
import sys, time
from ctxhealth.sources.reader import read_session
from ctxhealth.state.checkpoint import checkpoint_document
started = time.perf_counter()
session = read_session(sys.argv[1])
checkpoint_document(session, budget_tokens=500, created_at="now", encoding=None)
print(time.perf_counter() - started)
"""


def _checkpoint_seconds_per_mb(files: dict[str, Path], src: Path | None) -> dict[str, float]:
    """Whole-file read + checkpoint seconds per MB (no window, no budget) of the real session and
    the generated 50 MB one: the cost the hooks' windows and budget bound."""
    env = {**os.environ}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    out: dict[str, float] = {}
    for name in ("real", "generated-50mb"):
        if name not in files:
            continue
        done = subprocess.run(
            [sys.executable, "-c", CHECKPOINT_TIMER, str(files[name])],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=True,
        )
        out[name] = round(float(done.stdout.strip()) / (files[name].stat().st_size / MB), 3)
    return out


def _print(label: str, table: dict[str, dict[str, Any]]) -> None:
    print(f"\n{label}: wall seconds (peak RSS MB)", file=sys.stderr)
    print("file".ljust(16) + "".join(c.rjust(22) for c in COMMANDS), file=sys.stderr)
    for name, row in table.items():
        cells = []
        for command in COMMANDS:
            r = row[command]
            if r["killed"]:
                cell = "killed"
            elif r["exit"] != 0:
                cell = f"exit {r['exit']} {r['s']:.1f}s"
            else:
                cell = f"{r['s']:.2f}s ({r['rss_mb']:.0f})"
            cells.append(cell.rjust(22))
        print(name.ljust(16) + "".join(cells), file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="Real Claude Code sessions.")
    parser.add_argument("--before-src", type=Path, help="Another checkout's src/ to measure in the same run.")
    parser.add_argument("--kill-after", type=float, default=90.0, help="Seconds before a run is killed.")
    parser.add_argument(
        "--memory-cap-mb", type=int, default=2048, help="Address-space cap per run (a run past it fails)."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxhealth-hostile-") as tmp:
        files = _files(Path(tmp), args.data)
        sizes = {n: round(p.stat().st_size / MB, 2) if p.is_file() else None for n, p in files.items()}
        per_mb = {"after": _checkpoint_seconds_per_mb(files, None)}
        if args.before_src:
            per_mb["before"] = _checkpoint_seconds_per_mb(files, args.before_src)
        after = _measure(files, None, args.kill_after, args.memory_cap_mb)
        before = (
            _measure(files, args.before_src, args.kill_after, args.memory_cap_mb) if args.before_src else None
        )
    _print("after (this checkout)", after)
    if before is not None:
        _print(f"before ({args.before_src})", before)
    hostile = [r for name, row in after.items() if name not in ("small", "real") for r in row.values()]
    result = {
        "files_mb": sizes,
        "after": after,
        "before": before,
        "checkpoint_s_per_mb": per_mb,
        "worst_after_s": max(r["s"] for r in hostile),
        "any_killed_after": any(r["killed"] for r in hostile),
        "any_nonzero_exit_after": any(r["exit"] != 0 for row in after.values() for r in row.values()),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
