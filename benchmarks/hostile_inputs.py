"""Hostile inputs: one probe per finding of the hostile-input review, run against the installed
ctxhealth (or another checkout: ``PYTHONPATH=OTHER/src``), each in its own process with a timeout.

    python benchmarks/hostile_inputs.py            # a table: probe, result
    python benchmarks/hostile_inputs.py --json     # one JSON object per probe
    python benchmarks/hostile_inputs.py --before-src OTHER/src   # before | after, in one run

Each probe prints ``ok`` when ctxhealth behaved (no leak, a clean error, nothing destroyed) or what
went wrong. Run it twice, once per checkout, to compare before and after in the same run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

TIMEOUT = 20.0
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from hostile_cases import claude_transcript, write_jsonl  # noqa: E402

PEAK_RSS_MB: list[float] = []
"""Peak RSS of the last child :func:`run` waited for (MB; Linux reports ru_maxrss in kB)."""


def run(
    *args: str, env: dict[str, str] | None = None, timeout: float = TIMEOUT
) -> tuple[int | str, str, str]:
    """(exit code or "hung", stdout, stderr) of ``ctxhealth ARGS`` in a child process."""
    code = "import sys; from ctxhealth.cli.main import main; sys.argv[0] = 'ctxhealth'; main()"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                return "hung", "", ""
            time.sleep(0.02)
        PEAK_RSS_MB[:] = [usage.ru_maxrss / 1024]
        out.seek(0)
        err.seek(0)
        returncode = os.waitstatus_to_exitcode(status)
        return returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")


def turns_of(path: Path, *extra: str) -> int | str:
    code, out, _err = run("check", str(path), "--json", *extra)
    if code not in (0, 1):
        return f"exit {code}"
    return int(json.loads(out.splitlines()[0]).get("turns", -1))


# ------------------------------------------------------------------------------------------ probes


def probe_pack_committed_symlink(tmp: Path) -> str:
    outside = tmp / "outside.key"
    outside.write_text("PRIVATEKEYWORDQZX = 1\n")
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def login():\n    return 1\n")
    (repo / "login_key.py").symlink_to(outside)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, env={**os.environ, **env}, check=True
        )
    code, out, _ = run(
        "pack",
        str(repo),
        "--task",
        "fix login key",
        "--budget",
        "5000",
        env={"CTXHEALTH_HOME": str(tmp / "h")},
    )
    if code != 0:
        return f"exit {code}"
    return "LEAK: private key in payload" if "PRIVATEKEYWORDQZX" in out else "ok"


def probe_pack_untracked_index(tmp: Path) -> str:
    outside = tmp / "secret.txt"
    outside.write_text("untrackedsecretwordqzx\n")
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def login():\n    return 1\n")
    (repo / "notes.py").symlink_to(outside)
    home = tmp / "h"
    code, out, _ = run(
        "pack", str(repo), "--task", "login", "--budget", "5000", env={"CTXHEALTH_HOME": str(home)}
    )
    if code != 0:
        return f"exit {code}"
    leaked = [p for p in home.rglob("*") if p.is_file() and b"untrackedsecretwordqzx" in p.read_bytes()]
    if "untrackedsecretwordqzx" in out:
        return "LEAK: in payload"
    return f"LEAK: in {len(leaked)} pack-index file(s)" if leaked else "ok"


def probe_pack_fifo(tmp: Path) -> str:
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def login():\n    return 1\n")
    os.mkfifo(repo / "pipe.py")
    code, _, _ = run(
        "pack",
        str(repo),
        "--task",
        "login",
        "--budget",
        "5000",
        env={"CTXHEALTH_HOME": str(tmp / "h")},
        timeout=30,
    )
    return "ok" if code == 0 else f"exit {code}"


def probe_bare_tokens(tmp: Path) -> str:
    code = (
        "from canaries import bare_tokens\n"
        "from ctxhealth.redact import redact\n"
        "t = bare_tokens()\n"
        "print(sum(1 for v in t.values() if redact(v) == v), len(t))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=str(Path(__file__).resolve().parents[1] / "tests"),
    )
    leaked, total = done.stdout.split()
    return "ok" if leaked == "0" else f"LEAK: {leaked} of {total} bare formats unredacted"


def probe_canaries_everywhere(tmp: Path) -> str:
    code = (
        "import sys; from pathlib import Path\n"
        "from canary_paths import drive_every_writer, find_canaries\n"
        "tmp = Path(sys.argv[1]); home = tmp / 'home'\n"
        "root, printed = drive_every_writer(tmp, home)\n"
        "found = find_canaries(home, root, printed)\n"
        "print(sum(1 for p in found.values() if p), len(found))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(Path(__file__).resolve().parents[1] / "tests"),
    )
    leaked, total = done.stdout.split()[-2:]
    return "ok" if leaked == "0" else f"LEAK: {leaked} of {total} canaries found on disk or in outputs"


def probe_report_redacted(tmp: Path) -> str:
    token = "ghp" + "_" + "Zq7Xr2Lm9Tb4Kw8Np3Vd6Hs1Jc5Fg0ab12"
    lines = claude_transcript(3)
    lines[0]["message"] = {"role": "user", "content": f"use {token} to push"}
    path = write_jsonl(tmp / "s.jsonl", lines)
    code, _, _err = run("report", str(path), "-o", str(tmp / "r.html"))
    if code != 0:
        return f"exit {code}"
    return "LEAK: token in report" if token in (tmp / "r.html").read_text() else "ok"


def probe_huge_number(tmp: Path) -> str:
    path = write_jsonl(tmp / "s.jsonl", claude_transcript(15))
    text = path.read_text().replace('"input_tokens": 1005', '"input_tokens": 1' + "0" * 320, 1)
    path.write_text(text)
    turns = turns_of(path)
    return "ok" if turns == 15 else f"turns {turns} (of 15)"


def probe_nan(tmp: Path) -> str:
    path = write_jsonl(tmp / "s.jsonl", claude_transcript(15))
    path.write_text(path.read_text().replace('"output_tokens": 10', '"output_tokens": NaN'))
    turns = turns_of(path)
    return "ok" if turns == 15 else f"turns {turns} (of 15)"


def probe_deep(tmp: Path) -> str:
    traj = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "fix it"}]}
    for t in range(5):
        traj["messages"] += [
            {"role": "assistant", "content": f"THOUGHT\n```bash\nls {t}\n```"},
            {"role": "user", "content": "<returncode>0</returncode><output>x</output>"},
        ]
    traj["info"] = {"exit_status": "Submitted", "deep": "DEEP"}
    raw = json.dumps(traj).replace('"DEEP"', "[" * 3000 + "]" * 3000)
    path = tmp / "x.traj.json"
    path.write_text(raw)
    turns = turns_of(path)
    return "ok" if isinstance(turns, int) and turns >= 5 else f"{turns}"


def probe_parent_uuid(tmp: Path) -> str:
    lines = claude_transcript(15)
    lines[15]["parentUuid"] = 12345
    path = write_jsonl(tmp / "s.jsonl", lines)
    code, out, err = run("check", str(path), "--json")
    turns = int(json.loads(out.splitlines()[0])["turns"]) if code in (0, 1) else f"exit {code}"
    warned = "parent" in out + err
    return "ok" if turns == 15 and warned else f"turns {turns} (of 15), warned: {warned}"


def probe_write_fifo(tmp: Path) -> str:
    path = write_jsonl(tmp / "s.jsonl", claude_transcript(3))
    fifo = tmp / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def drain() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    time.sleep(0.2)
    code, _, _ = run("report", str(path), "-o", str(fifo))
    reader.join(5)
    if not fifo.is_fifo():
        return "DESTROYED: the FIFO was replaced by a regular file"
    return "ok" if code == 0 and got and b"<html" in got[0].lower() else f"exit {code}"


def probe_write_symlink(tmp: Path) -> str:
    path = write_jsonl(tmp / "s.jsonl", claude_transcript(3))
    real = tmp / "real.html"
    real.write_text("old")
    link = tmp / "link.html"
    link.symlink_to(real)
    code, _, _ = run("report", str(path), "-o", str(link))
    if not link.is_symlink():
        return "DESTROYED: the link was replaced by a regular file"
    return "ok" if code == 0 and real.read_text() != "old" else f"exit {code}"


def probe_missing_folder(tmp: Path) -> str:
    path = write_jsonl(tmp / "s.jsonl", claude_transcript(3))
    code, _, err = run("report", str(path), "-o", str(tmp / "nope" / "r.html"))
    if (tmp / "nope").exists():
        return "folder created silently"
    return "ok" if code == 4 and "Traceback" not in err else f"exit {code}"


def probe_output_is_dir(tmp: Path) -> str:
    path = write_jsonl(tmp / "s.jsonl", claude_transcript(3))
    (tmp / "d").mkdir()
    code, _, err = run("report", str(path), "-o", str(tmp / "d"))
    return (
        "ok"
        if code == 4 and "Traceback" not in err
        else f"exit {code}{' (traceback)' if 'Traceback' in err else ''}"
    )


def probe_stdout(tmp: Path) -> str:
    path = write_jsonl(tmp / "s.jsonl", claude_transcript(3))
    code, out, _ = run("report", str(path), "-o", "-", env={"PWD": str(tmp)})
    if (Path.cwd() / "-").exists():
        (Path.cwd() / "-").unlink()
        return "wrote a file named '-'"
    return "ok" if code == 0 and "<html" in out.lower() else f"exit {code}"


def probe_gzip_bomb(tmp: Path) -> str:
    path = tmp / "bomb.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=9) as handle:
        chunk = b" " * (1 << 20)
        for _ in range(1024):  # 1 GiB of spaces
            handle.write(chunk)
    code, _, err = run("check", str(path), env={"CTXHEALTH_MAX_INPUT_BYTES": str(256 << 20)}, timeout=60)
    peak = f"peak RSS {PEAK_RSS_MB[0]:,.0f} MB" if code != "hung" else "killed at 60 s"
    clear = code == 3 and "CTXHEALTH_MAX_INPUT_BYTES" in err
    return f"ok ({peak})" if clear else f"exit {code}, {peak}"


def probe_multi_member_gzip(tmp: Path) -> str:
    lines = claude_transcript(15)
    text = "".join(json.dumps(line) + "\n" for line in lines).encode()
    cut = text.index(b"\n", len(text) // 3) + 1
    path = tmp / "s.jsonl.gz"
    path.write_bytes(gzip.compress(text[:cut]) + gzip.compress(text[cut:]))
    turns = turns_of(path)
    return "ok" if turns == 15 else f"turns {turns} (of 15)"


def probe_fleet_fifo_folder(tmp: Path) -> str:
    folder = tmp / "in"
    folder.mkdir()
    write_jsonl(folder / "s.jsonl", claude_transcript(3))
    os.mkfifo(folder / "p.jsonl")
    code, _, _ = run("fleet", str(folder), "--out", str(tmp / "f.duckdb"), timeout=60)
    return "ok" if code in (0, 1) else f"{code}"


def probe_task_file_fifo(tmp: Path) -> str:
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    os.mkfifo(tmp / "task")
    code, _, _err = run("pack", str(repo), "--task-file", str(tmp / "task"), "--budget", "2000", timeout=30)
    return "ok" if code == 3 else f"{code}"


def probe_duckdb_mode(tmp: Path) -> str:
    folder = tmp / "in"
    folder.mkdir()
    write_jsonl(folder / "s.jsonl", claude_transcript(3))
    code, _, _ = run("fleet", str(folder), "--out", str(tmp / "f.duckdb"), timeout=60)
    if code not in (0, 1):
        return f"exit {code}"
    mode = (tmp / "f.duckdb").stat().st_mode & 0o777
    return "ok" if mode == 0o600 else f"mode {mode:o}"


def probe_home_is_file(tmp: Path) -> str:
    (tmp / "home").write_text("x")
    _code, out, _ = run("doctor", env={"CTXHEALTH_HOME": str(tmp / "home")})
    return "says [ok] home" if re.search(r"\[ok *\] home", out) else "ok"


def probe_ctrl_c(tmp: Path) -> str:
    import signal

    folder = tmp / "in"
    folder.mkdir()
    for n in range(400):
        write_jsonl(folder / f"s{n}.jsonl", claude_transcript(40, session=f"s{n}"))
    code = "import sys; from ctxhealth.cli.main import main; sys.argv[0] = 'ctxhealth'; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "check", str(folder), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a shell's foreground job
    )
    time.sleep(2.5)
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    return "ok" if proc.returncode == 130 else f"exit {proc.returncode}"


def probe_audit_junk(tmp: Path) -> str:
    (tmp / "junk.bin").write_bytes(os.urandom(2000))
    _code, _, err = run("audit", str(tmp / "junk.bin"))
    return "suggests --format (audit has none)" if "pass --format" in err else "ok"


def probe_long_line(tmp: Path) -> str:
    lines = claude_transcript(15)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    pad = json.dumps({"type": "progress", "pad": "x" * (8 << 20)})
    cut = text.index("\n", len(text) // 2) + 1
    path = tmp / "s.jsonl"
    path.write_text(text[:cut] + pad + "\n" + text[cut:])
    code, out, err = run("check", str(path), "--json", env={"CTXHEALTH_MAX_LINE_BYTES": str(1 << 20)})
    if code not in (0, 1):
        return f"exit {code}"
    turns = int(json.loads(out.splitlines()[0])["turns"])
    warned = "CTXHEALTH_MAX_LINE_BYTES" in out + err
    peak = f"peak RSS {PEAK_RSS_MB[0]:,.0f} MB"
    return f"ok ({peak})" if turns == 15 and warned else f"turns {turns} (of 15), warned: {warned}, {peak}"


def _hook_run(
    event: str, home: Path, transcript: Path, preexec: Callable[[], None] | None = None, **extra: object
) -> subprocess.CompletedProcess[bytes]:
    body = {"hook_event_name": event, "session_id": "s", "transcript_path": str(transcript), **extra}
    return subprocess.run(
        [sys.executable, "-m", "ctxhealth.cli.hook", event],
        input=json.dumps(body).encode(),
        capture_output=True,
        env={**os.environ, "CTXHEALTH_HOME": str(home), "CTXHEALTH_HELPER": "off"},
        timeout=TIMEOUT,
        preexec_fn=preexec,
    )


def _disk_full() -> None:
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def probe_newer_ledger(tmp: Path) -> str:
    import sqlite3

    path = write_jsonl(tmp / "t.jsonl", claude_transcript(15))
    home = tmp / "home"
    home.mkdir()
    con = sqlite3.connect(home / "ledger.db", isolation_level=None)
    con.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    con.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', 'x')")
    con.close()
    before = (home / "ledger.db").read_bytes()
    compact = _hook_run("PreCompact", home, path, trigger="auto")
    start = _hook_run("SessionStart", home, path, source="compact")
    saved = b"checkpoint saved" in compact.stdout
    injected = b"fix the parser" in start.stdout
    kept = (home / "ledger.db").read_bytes() == before
    if saved and injected and kept:
        return "ok"
    return f"checkpoint saved: {saved}, injected: {injected}, ledger left alone: {kept}"


def probe_full_disk_hooks(tmp: Path) -> str:
    path = write_jsonl(tmp / "t.jsonl", claude_transcript(15))
    home = tmp / "home"
    _hook_run("UserPromptSubmit", home, path, prompt="go")
    _hook_run("PreCompact", home, path, trigger="auto")
    with path.open("a") as handle:
        handle.write(json.dumps(claude_transcript(16)[-1] | {"uuid": "new"}) + "\n")
    compact = _hook_run("PreCompact", home, path, _disk_full, trigger="auto")
    start = _hook_run("SessionStart", home, path, _disk_full, source="compact")
    said = b"no checkpoint saved" in compact.stdout
    injected = b"fix the parser" in start.stdout
    if compact.returncode == start.returncode == 0 and said and injected:
        return "ok"
    return f"PreCompact says why: {said}, SessionStart injects: {injected}"


def probe_full_disk_report(tmp: Path) -> str:
    path = write_jsonl(tmp / "s.jsonl", claude_transcript(3))
    old = tmp / "r.html"
    old.write_text("old")
    code = "import sys; from ctxhealth.cli.main import main; sys.argv[0] = 'ctxhealth'; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "report", str(path), "-o", str(old)],
        capture_output=True,
        timeout=TIMEOUT,
        preexec_fn=_disk_full,
    )
    clean = done.returncode == 4 and b"Traceback" not in done.stderr and old.read_text() == "old"
    return "ok" if clean else f"exit {done.returncode}, old file kept: {old.read_text() == 'old'}"


def probe_fleet_kill_parquet(tmp: Path) -> str:
    import signal

    folder = tmp / "in"
    folder.mkdir()
    for n in range(40):
        write_jsonl(folder / f"s{n:03d}.jsonl", claude_transcript(15, session=f"s{n}"))
    store = tmp / "f.parquet"
    code, _, _ = run("fleet", str(folder), "--out", str(store), "-j", "1", timeout=120)
    if code not in (0, 1):
        return f"first run exit {code}"
    meta = (store / "meta.json").read_bytes()
    listed = {Path(p).name for parts in json.loads(meta)["parts"].values() for p in parts}
    cli = "import sys; from ctxhealth.cli.main import main; sys.argv[0] = 'ctxhealth'; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", cli, "fleet", str(folder), "--out", str(store), "--full", "-j", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if len([p for p in store.glob("*/*.parquet") if p.name not in listed]) > 8:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    if proc.returncode != -signal.SIGKILL:
        return "run ended before the kill (not measured)"
    intact = (store / "meta.json").read_bytes() == meta and all(
        (store / p).is_file() for parts in json.loads(meta)["parts"].values() for p in parts
    )
    again, _, _ = run("fleet", str(folder), "--out", str(store), "--full", "-j", "1", timeout=120)
    return (
        "ok" if intact and again in (0, 1) else f"previous generation intact: {intact}, next run exit {again}"
    )


def probe_fleet_lock_without_fcntl(tmp: Path) -> str:
    code = (
        "import sys; sys.modules['fcntl'] = None\n"
        "from ctxhealth.fleet.store import open_store\n"
        "a = open_store(sys.argv[1])\n"
        "try:\n"
        "    open_store(sys.argv[1])\n"
        "    print('interleaved')\n"
        "except Exception as exc:\n"
        "    print('refused' if 'another ctxhealth fleet run' in str(exc) else repr(exc))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp / "f.parquet")], capture_output=True, text=True, timeout=TIMEOUT
    )
    result = (done.stdout.strip() or done.stderr.strip().splitlines()[-1])[:60]
    return "ok" if result == "refused" else f"second run {result}"


PROBES: dict[str, tuple[str, Callable[[Path], str]]] = {
    "pack: committed symlink to a key": ("1", probe_pack_committed_symlink),
    "pack: untracked symlink, pack-index": ("1", probe_pack_untracked_index),
    "pack: FIFO in the repository": ("7", probe_pack_fifo),
    "redact: bare tokens of every format": ("2", probe_bare_tokens),
    "report: token in transcript text": ("2", probe_report_redacted),
    "canaries through every writing path": ("2", probe_canaries_everywhere),
    "309-digit token count": ("3", probe_huge_number),
    "NaN (json.dump) in usage": ("3", probe_nan),
    "value nested 3,000 deep": ("3", probe_deep),
    "report -o FIFO": ("4", probe_write_fifo),
    "report -o symlink": ("4", probe_write_symlink),
    "report -o missing/folder/r.html": ("4", probe_missing_folder),
    "report -o -": ("4", probe_stdout),
    "fleet: DuckDB file mode": ("5", probe_duckdb_mode),
    "fleet --full SIGKILLed (Parquet)": ("5", probe_fleet_kill_parquet),
    "fleet: second run, no fcntl": ("5", probe_fleet_lock_without_fcntl),
    "one bad parentUuid": ("6", probe_parent_uuid),
    "1 GiB gzip bomb (cap 256 MiB)": ("7", probe_gzip_bomb),
    "two-member gzip": ("7", probe_multi_member_gzip),
    "fleet: FIFO inside a folder": ("7", probe_fleet_fifo_folder),
    "pack --task-file FIFO": ("7", probe_task_file_fifo),
    "8 MiB line (line cap 1 MiB)": ("7", probe_long_line),
    "hooks beside a newer ledger": ("8", probe_newer_ledger),
    "hooks on a full disk": ("8", probe_full_disk_hooks),
    "report -o on a full disk": ("10", probe_full_disk_report),
    "report -o an existing folder": ("10", probe_output_is_dir),
    "CTXHEALTH_HOME=<file> doctor": ("10", probe_home_is_file),
    "audit junk.bin": ("10", probe_audit_junk),
    "Ctrl-C during check": ("10", probe_ctrl_c),
}


def _results(name_filter: str | None) -> list[dict[str, object]]:
    rows = []
    for name, (item, probe) in PROBES.items():
        if name_filter and name_filter not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            try:
                result = probe(Path(tmp))
            except Exception as exc:  # a probe's own failure is a result too
                result = f"probe error: {type(exc).__name__}: {exc}"
            seconds = time.perf_counter() - started
        rows.append({"item": item, "probe": name, "result": result, "seconds": round(seconds, 2)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-k", help="only probes whose name contains this")
    parser.add_argument(
        "--before-src", help="another checkout's src folder: run every probe on it too, side by side"
    )
    args = parser.parse_args()
    before: dict[str, str] = {}
    if args.before_src:
        command = [sys.executable, __file__, "--json", *(["-k", args.k] if args.k else [])]
        env = {**os.environ, "PYTHONPATH": str(Path(args.before_src).resolve())}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        for line in done.stdout.splitlines():
            row = json.loads(line)
            before[row["probe"]] = row["result"]
    rows = _results(args.k)
    for row in rows:
        if args.json:
            print(json.dumps(row))
        elif args.before_src:
            was = before.get(str(row["probe"]), "-")[:58]
            print(f"{row['item']:>3}  {row['probe']:38} {was:60} {row['result']}")
        else:
            print(f"{row['item']:>3}  {row['probe']:38} {row['result']}")


if __name__ == "__main__":
    main()
