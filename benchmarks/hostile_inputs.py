"""Hostile inputs: one probe per finding of the hostile-input review, run against the installed
ctxhealth (or another checkout: ``PYTHONPATH=OTHER/src``), each in its own process with a timeout.

    python benchmarks/hostile_inputs.py            # a table: probe, result
    python benchmarks/hostile_inputs.py --json     # one JSON object per probe

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
    "one bad parentUuid": ("6", probe_parent_uuid),
    "1 GiB gzip bomb (cap 256 MiB)": ("7", probe_gzip_bomb),
    "two-member gzip": ("7", probe_multi_member_gzip),
    "fleet: FIFO inside a folder": ("7", probe_fleet_fifo_folder),
    "pack --task-file FIFO": ("7", probe_task_file_fifo),
    "report -o an existing folder": ("10", probe_output_is_dir),
    "CTXHEALTH_HOME=<file> doctor": ("10", probe_home_is_file),
    "audit junk.bin": ("10", probe_audit_junk),
    "Ctrl-C during check": ("10", probe_ctrl_c),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-k", help="only probes whose name contains this")
    args = parser.parse_args()
    for name, (item, probe) in PROBES.items():
        if args.k and args.k not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            try:
                result = probe(Path(tmp))
            except Exception as exc:  # a probe's own failure is a result too
                result = f"probe error: {type(exc).__name__}: {exc}"
            seconds = time.perf_counter() - started
        if args.json:
            print(json.dumps({"item": item, "probe": name, "result": result, "seconds": round(seconds, 2)}))
        else:
            print(f"{item:>3}  {name:38} {result}")


if __name__ == "__main__":
    main()
