"""Hostile inputs (round two): links leaving a packed repository, special files, huge numbers,
writes onto devices and links, unbounded reads. Each test fails on the code before the fix."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from canaries import bare_tokens, canaries
from canary_paths import needles
from conftest import invoke
from ctxhealth.atomic import write_atomic
from ctxhealth.redact import redact
from ctxhealth.sources import read_session, read_sessions
from hostile_cases import TURNS, claude_transcript, write_jsonl
from pack_repo import write_repo

SECRET_WORD = "zqxwvulnerablesecretword"


def _outside_secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    key = outside / "id_rsa"
    key.write_text(f"def login_key():\n    return '{SECRET_WORD}'\n")
    (outside / "dir").mkdir()
    (outside / "dir" / "leak.py").write_text(f"LEAK = '{SECRET_WORD}'\n")
    return outside


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.mark.parametrize("kind", ["committed", "untracked", "no-git"])
def test_pack_never_reads_through_a_link_leaving_the_repository(
    tmp_path: Path, kind: str, _isolated_home: Path
) -> None:
    outside = _outside_secret(tmp_path)
    repo = write_repo(tmp_path / "repo")
    if kind != "no-git":
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "init")
    (repo / "login_key.py").symlink_to(outside / "id_rsa")
    (repo / "linked").symlink_to(outside / "dir")
    (repo / "inside_link.py").symlink_to(repo / "billing" / "tax.py")
    if kind == "committed":
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "links")
    result = invoke(
        ["pack", str(repo), "--task", f"fix login key {SECRET_WORD}", "--budget", "20000", "--json"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.stdout)
    assert SECRET_WORD not in json.dumps([f for f in manifest["files"]])
    skipped = {row["path"]: row["reason"] for row in manifest["excluded"]}
    assert "leaving the repository" in skipped["login_key.py"]
    assert "leaving the repository" in skipped["linked"]
    # a link that stays inside the repository is read like any file
    assert "leaving" not in skipped.get("inside_link.py", "")
    payload = invoke(["pack", str(repo), "--task", "fix login key leak", "--budget", "20000"])
    assert payload.exit_code == 0, payload.output
    assert SECRET_WORD not in payload.stdout
    for file in (_isolated_home / "pack-index").rglob("*"):
        if file.is_file():
            assert SECRET_WORD.encode() not in file.read_bytes(), file


def test_pack_skips_fifos_and_devices_in_a_folder(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    os.mkfifo(repo / "pipe.py")
    (repo / "zero.py").symlink_to("/dev/zero")
    result = invoke(["pack", str(repo), "--task", "pipe zero", "--budget", "5000", "--json"])
    assert result.exit_code == 0, result.output
    skipped = {row["path"]: row["reason"] for row in json.loads(result.stdout)["excluded"]}
    assert "not a regular file" in skipped["pipe.py"]
    assert "zero.py" in skipped


# ------------------------------------------------------------------ 2: redaction with no holes


@pytest.mark.parametrize("name", sorted(bare_tokens()))
def test_every_key_format_is_redacted_as_a_bare_token(name: str) -> None:
    token = bare_tokens()[name]
    clean = redact(token)
    assert clean != token and "[REDACTED:" in clean
    for needle in needles(token):
        assert needle.decode() not in clean, (name, clean)


def test_prose_cookie_and_url_forms_are_redacted() -> None:
    for name in ("aws-secret-prose", "cookie-header", "redis-no-user", "azure-sas-url", "sentry-dsn"):
        text, secret = canaries()[name]
        assert secret not in redact(text), name
    # prose that merely names a secret stays as it is
    for text in ("the token expired yesterday", "secret key for 8 users", "max_tokens 4096"):
        assert redact(text) == text


def _transcript_with_every_secret(path: Path) -> Path:
    lines = claude_transcript(3)
    everything = "\n".join(text for text, _ in canaries().values())
    lines[0]["message"] = {"role": "user", "content": "Deploy it. Notes:\n" + everything}
    lines[-1]["message"]["content"] = [{"type": "text", "text": "Using " + everything}]
    return write_jsonl(path, lines)


def _leaks(blob: str | bytes) -> list[str]:
    data = blob.encode() if isinstance(blob, str) else blob
    return [name for name, (_, secret) in canaries().items() if any(n in data for n in needles(secret))]


def test_report_check_json_and_watch_redact_by_default(tmp_path: Path) -> None:
    transcript = _transcript_with_every_secret(tmp_path / "s.jsonl")
    report = tmp_path / "r.html"
    done = invoke(["report", str(transcript), "-o", str(report)])
    assert done.exit_code == 0, done.output
    assert _leaks(report.read_bytes()) == []
    checked = invoke(["check", str(transcript), "--json"])
    assert checked.exit_code in (0, 1) and _leaks(checked.stdout) == []
    watched = invoke(["watch", str(transcript), "--once"])
    assert watched.exit_code == 0 and _leaks(watched.stdout) == []
    # --no-redact shows the text as it is (the report holds the transcript's words)
    raw = tmp_path / "raw.html"
    invoke(["report", str(transcript), "-o", str(raw), "--no-redact"])
    assert _leaks(raw.read_bytes())


def test_the_proxy_ledger_holds_no_secret_and_no_secret_session_id(tmp_path: Path) -> None:
    from ctxhealth.integrations.guard import Guard, LedgerStore, Mode
    from ctxhealth.integrations.wire import ApiStyle

    everything = "\n".join(text for text, _ in canaries().values())
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "You deploy services.",
        "messages": [
            {"role": "user", "content": "Deploy it. Notes:\n" + everything},
            {"role": "assistant", "content": "Using " + everything},
            {"role": "user", "content": "continue " + everything},
        ],
    }
    secret_id = bare_tokens()["anthropic"]
    store = LedgerStore(tmp_path)
    guard = Guard(Mode.ADVISE, store=store)
    for headers in ({}, {"x-ctxhealth-session": secret_id}):
        guard.plan(ApiStyle.ANTHROPIC_MESSAGES, json.dumps(body).encode(), headers)
    status = json.dumps(guard.status())
    guard.flush()
    store.close()
    on_disk = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert on_disk, "the ledger was written"
    assert _leaks(on_disk) == []
    assert _leaks(on_disk.lower()) == []  # the drift word list is lower-cased
    assert secret_id not in status and secret_id.encode() not in on_disk


# ------------------------------------------------------------------ 3: bad numbers cost their field


@pytest.mark.parametrize(
    "damage",
    [
        ('"input_tokens": 1005', '"input_tokens": 1' + "0" * 320),
        ('"output_tokens": 10', '"output_tokens": NaN'),
        ('"output_tokens": 10', '"output_tokens": -Infinity'),
        ('"command": "make test7"', '"command": ' + "[" * 3000 + "]" * 3000),
    ],
    ids=["309-digits", "nan", "infinity", "3000-deep"],
)
def test_a_bad_value_costs_its_field_never_the_session(tmp_path: Path, damage: tuple[str, str]) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", claude_transcript())
    text = path.read_text()
    assert damage[0] in text
    path.write_text(text.replace(damage[0], damage[1], 1))
    session = read_session(path)
    assert sum(1 for m in session.messages if m.role.value == "assistant") == TURNS
    result = invoke(["check", str(path), "--json"])
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["turns"] == TURNS


def test_loads_keeps_the_rest_of_a_document_nested_too_deep() -> None:
    from ctxhealth.sources.lines import loads

    doc = loads(('{"a": ' + "[" * 3000 + '"x]\\""' + "]" * 3000 + ', "b": [1, NaN]}').encode())
    assert doc["b"] == [1, None] and isinstance(doc["a"], list)


# ------------------------------------------------------------------ 4: writes never destroy


def test_write_atomic_writes_into_a_fifo_and_through_a_link(tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    deadline = 50
    while deadline and not got:
        try:
            write_atomic(fifo, "payload")
            break
        except OSError:  # the reader has not opened its end yet
            deadline -= 1
            threading.Event().wait(0.05)
    reader.join(5)
    assert fifo.is_fifo() and got == [b"payload"]
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    write_atomic(link, '{"a": 1}')
    assert link.is_symlink() and real.read_text() == '{"a": 1}'
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path, "x")


def test_report_output_rules(tmp_path: Path) -> None:
    transcript = write_jsonl(tmp_path / "s.jsonl", claude_transcript(3))
    missing = tmp_path / "no-such-folder" / "r.html"
    done = invoke(["report", str(transcript), "-o", str(missing)])
    assert done.exit_code == 4 and not missing.parent.exists()
    assert "no-such-folder" in done.stderr and "Traceback" not in done.output
    folder = tmp_path / "a-folder"
    folder.mkdir()
    done = invoke(["report", str(transcript), "-o", str(folder)])
    assert done.exit_code == 4 and folder.is_dir()
    done = invoke(["report", str(transcript), "-o", "-"])
    assert done.exit_code == 0 and "<html" in done.stdout.lower()


# ------------------------------------------------------------------ 5: crash-safe fleet store


def _job_options() -> Any:
    from ctxhealth.accounting.registry import ModelRegistry
    from ctxhealth.fleet.jobs import JobOptions
    from ctxhealth.policy.profile import default_profile

    return JobOptions(ModelRegistry.default(), default_profile())


def test_fleet_duckdb_is_private_and_one_run_is_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("duckdb")
    from ctxhealth.fleet import run as fleet_run

    folder = tmp_path / "in"
    folder.mkdir()
    for n in range(6):
        write_jsonl(folder / f"s{n}.jsonl", claude_transcript(3, session=f"s{n}"))
    out = tmp_path / "f.duckdb"
    first = fleet_run.run_fleet([folder], out, _job_options(), jobs=1)
    assert first.sessions == 6 and out.stat().st_mode & 0o777 == 0o600
    # a run that dies after its first batch leaves the store exactly as it was
    for n in range(6):
        write_jsonl(folder / f"s{n}.jsonl", claude_transcript(4, session=f"s{n}"))
    real = fleet_run._local

    def dying(*args: object, **kwargs: object) -> object:
        stream = real(*args, **kwargs)  # type: ignore[arg-type]
        yield next(stream)
        raise KeyboardInterrupt

    monkeypatch.setattr(fleet_run, "_local", dying)
    with pytest.raises(KeyboardInterrupt):
        fleet_run.run_fleet([folder], out, _job_options(), jobs=6, full=True)
    monkeypatch.setattr(fleet_run, "_local", real)
    import duckdb

    with duckdb.connect(str(out), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM sessions").fetchone() == (6,)
        assert con.execute("SELECT max(turns) FROM sessions").fetchone() == (3,)


@pytest.mark.parametrize("suffix", [".duckdb", ".parquet"])
def test_a_second_fleet_run_on_one_store_is_refused(tmp_path: Path, suffix: str) -> None:
    pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    from ctxhealth.errors import EnvironmentProblem
    from ctxhealth.fleet.store import open_store

    out = tmp_path / f"f{suffix}"
    holder = open_store(out)
    try:
        with pytest.raises(EnvironmentProblem, match="another ctxhealth fleet run"):
            open_store(out)
    finally:
        holder.close()
    open_store(out).close()  # free again once the first run ends


# ------------------------------------------------------------------ 6: one bad parentUuid


@pytest.mark.parametrize("damage", ["number", "missing", "misspelled", "unknown"])
def test_one_bad_parent_link_never_cuts_the_session(tmp_path: Path, damage: str) -> None:
    lines = claude_transcript()
    line = lines[15]
    if damage == "number":
        line["parentUuid"] = 12345
    elif damage == "missing":
        del line["parentUuid"]
    elif damage == "misspelled":
        line["parentUUID"] = line.pop("parentUuid")
    else:
        line["parentUuid"] = "no-such-uuid"
    session = read_session(write_jsonl(tmp_path / "s.jsonl", lines))
    assert sum(1 for m in session.messages if m.role.value == "assistant") == TURNS
    assert any("continues from the line before" in w.reason for w in session.warnings)


# ------------------------------------------------------------------ 7: bounded reads


def test_a_gzip_bomb_stops_at_the_size_cap_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxhealth.errors import TranscriptError

    monkeypatch.setenv("CTXHEALTH_MAX_INPUT_BYTES", str(1 << 20))
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(b" " * (8 << 20)))
    with pytest.raises(TranscriptError, match="more than 1,048,576 bytes") as caught:
        read_session(path)
    assert "CTXHEALTH_MAX_INPUT_BYTES" in caught.value.hint
    plain = tmp_path / "big.jsonl"
    plain.write_bytes(b" " * (2 << 20))
    with pytest.raises(TranscriptError, match="size limit"):
        read_session(plain)


def test_every_member_of_a_concatenated_gzip_is_read(tmp_path: Path) -> None:
    text = "".join(json.dumps(line) + "\n" for line in claude_transcript()).encode()
    cut = text.index(b"\n", len(text) // 3) + 1
    path = tmp_path / "s.jsonl.gz"
    path.write_bytes(gzip.compress(text[:cut]) + gzip.compress(text[cut:]))
    session = read_session(path)
    assert sum(1 for m in session.messages if m.role.value == "assistant") == TURNS


def test_fifos_are_refused_at_once_on_every_input_path(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "s.jsonl", claude_transcript(3))
    os.mkfifo(folder / "p.jsonl")
    skipped: list[str] = []
    sessions = list(read_sessions([folder], on_skip=lambda s: skipped.append(s.reason)))
    assert len(sessions) == 1 and any("FIFO" in r for r in skipped)
    from ctxhealth.fleet.files import discover
    from ctxhealth.fleet.jobs import analyse_file

    outcomes = [analyse_file(e, _job_options()) for e in discover([folder])]
    assert sorted(o.status for o in outcomes) == ["ok", "skipped"]
    fifo = tmp_path / "task.fifo"
    os.mkfifo(fifo)
    repo = write_repo(tmp_path / "repo")
    for args in (
        ["pack", str(repo), "--task-file", str(fifo), "--budget", "2000"],
        ["pack", str(repo), "--task", "x", "--errors", str(fifo), "--budget", "2000"],
        ["state", "checkpoint", "--root", str(tmp_path / "root"), "--update", str(fifo)],
    ):
        done = invoke(args)
        assert done.exit_code in (2, 3) and "FIFO" in done.output, (args, done.output)


# ------------------------------------------------------------------ 8: hooks


def _hook(event: str, home: Path, transcript: Path, **extra: object) -> subprocess.CompletedProcess[bytes]:
    body = {"hook_event_name": event, "session_id": "s", "transcript_path": str(transcript), **extra}
    return subprocess.run(
        [sys.executable, "-m", "ctxhealth.cli.hook", event],
        input=json.dumps(body).encode(),
        capture_output=True,
        env={**os.environ, "CTXHEALTH_HOME": str(home)},
        timeout=30,  # a hook that blocks fails the test
    )


@pytest.mark.parametrize("damage", ["fifo-tail-cache", "foreign-ledger"])
def test_hooks_do_their_work_when_their_own_files_are_damaged(tmp_path: Path, damage: str) -> None:
    transcript = write_jsonl(tmp_path / "t.jsonl", claude_transcript())
    home = tmp_path / "home"
    home.mkdir()
    if damage == "foreign-ledger":
        (home / "ledger.db").write_bytes(b"not a database at all " * 64)
    else:
        assert _hook("UserPromptSubmit", home, transcript, prompt="go").returncode == 0
        for cache in (home / "claude-code" / "tails").glob("*.json"):
            cache.unlink()
            os.mkfifo(cache)
    assert _hook("UserPromptSubmit", home, transcript, prompt="go").returncode == 0
    compact = _hook("PreCompact", home, transcript, trigger="auto")
    assert compact.returncode == 0
    assert json.loads(compact.stdout)["systemMessage"].startswith("ctxhealth: checkpoint saved"), compact
    start = _hook("SessionStart", home, transcript, source="compact")
    assert start.returncode == 0
    assert "fix the parser" in json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]


# ------------------------------------------------------------------ 9: proxy


def test_proxy_upstream_credentials_are_never_shown() -> None:
    pytest.importorskip("aiohttp")
    from ctxhealth.integrations.proxy.config import ProxyConfig

    config = ProxyConfig(upstream="http://user:" + "pw" + "Secret9@127.0.0.1:9/v1", host="0.0.0.0")
    assert "pwSecret9" not in config.shown_upstream and config.shown_upstream.startswith("http://user:")
    assert config.upstream_base == "http://127.0.0.1:9/v1"
    assert config.upstream_auth is not None and config.upstream_auth.startswith("Basic ")
    assert config.exposed and not ProxyConfig(upstream="http://x").exposed


# ------------------------------------------------------------------ 10: one error path


def test_write_failures_and_ctrl_c_have_clean_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxhealth.cli import report as report_cmd

    transcript = write_jsonl(tmp_path / "s.jsonl", claude_transcript(3))
    under_a_file = tmp_path / "s.jsonl" / "r.html"
    for args in (
        ["report", str(transcript), "-o", str(under_a_file)],
        [
            "pack",
            str(write_repo(tmp_path / "repo")),
            "--task",
            "x",
            "--budget",
            "2000",
            "-o",
            str(under_a_file),
        ],
    ):
        done = invoke(args)
        assert done.exit_code == 4 and "error" in done.stderr, (args, done.output)

    def interrupted(*args: object, **kwargs: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(report_cmd, "_render", interrupted)
    out = tmp_path / "r.html"
    done = invoke(["report", str(transcript), "-o", str(out)])
    assert done.exit_code == 130 and not out.exists()


def test_doctor_fails_a_home_that_is_a_file_and_audit_suggests_no_missing_option(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("x")
    done = invoke(["doctor"], env={"CTXHEALTH_HOME": str(home)})
    assert "not a folder" in done.output and "[ok  ] home" not in done.output
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    done = invoke(["audit", str(junk)])
    assert "pass --format" not in done.output


def test_proxy_answers_408_to_a_client_that_stalls_mid_body(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp")
    import anyio
    import httpx

    from ctxhealth.integrations.proxy.app import create_app
    from ctxhealth.integrations.proxy.config import ProxyConfig

    app = create_app(ProxyConfig(upstream="http://127.0.0.1:9", body_timeout=0.2))

    async def stalled() -> Any:
        yield b'{"model": "claude-sonnet-4-5", '
        await anyio.sleep(5)
        yield b'"messages": []}'

    async def send() -> int:
        transport = httpx.ASGITransport(app=app)
        with anyio.fail_after(4):
            async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
                response = await client.post("/v1/messages", content=stalled())
                return response.status_code

    assert anyio.run(send) == 408


def test_a_bad_field_in_a_state_update_is_blamed_on_the_update(tmp_path: Path) -> None:
    root = tmp_path / "root"
    assert invoke(["state", "ensure", "--root", str(root), "--goal", "ship it"]).exit_code == 0
    update = tmp_path / "u.json"
    update.write_text('{"completed_steps": "not a list"}')
    done = invoke(["state", "checkpoint", "--root", str(root), "--update", str(update)])
    assert done.exit_code == 3
    assert "the update's field `completed_steps`" in done.stderr
    assert "task-state.json" not in done.stderr and "state archive" not in done.stderr


def test_install_apply_writes_through_a_symlinked_settings_file(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text('{"theme": "dark"}\n')
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "settings.json").symlink_to(real)
    done = invoke(["install", "claude-code", "--claude-dir", str(claude), "--apply"])
    assert done.exit_code == 0, done.output
    assert (claude / "settings.json").is_symlink()
    written = json.loads(real.read_text())
    assert written["theme"] == "dark" and "hooks" in written


def test_a_309_digit_count_never_stops_the_hooks(tmp_path: Path) -> None:
    transcript = write_jsonl(tmp_path / "t.jsonl", claude_transcript())
    transcript.write_text(
        transcript.read_text().replace('"input_tokens": 1005', '"input_tokens": 1' + "0" * 320)
    )
    home = tmp_path / "home"
    compact = _hook("PreCompact", home, transcript, trigger="auto")
    assert compact.returncode == 0 and compact.stderr == b"", compact.stderr
    assert json.loads(compact.stdout)["systemMessage"].startswith("ctxhealth: checkpoint saved")


# ------------------------------------------------------------------ 7 (round three): bounded lines


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_an_over_long_line_costs_that_line_only_with_a_clear_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    if fmt == "claude-code":
        original = "".join(json.dumps(line) + "\n" for line in claude_transcript()).encode()
    else:
        original = (Path(__file__).parent / "fixtures" / "codex-rollout.jsonl").read_bytes()
    lines = original.splitlines(keepends=True)
    at = len(lines) // 2
    long_line = json.dumps({"type": "progress", "pad": "x" * (3 << 20)}).encode() + b"\n"
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines[:at]) + long_line + b"".join(lines[at:]))
    (tmp_path / "o.jsonl").write_bytes(original)
    expected = read_session(tmp_path / "o.jsonl")
    monkeypatch.setenv("CTXHEALTH_MAX_LINE_BYTES", str(1 << 20))
    session = read_session(path)
    assert [(m.role, m.text) for m in session.messages] == [(m.role, m.text) for m in expected.messages]
    long = [w for w in session.warnings if "CTXHEALTH_MAX_LINE_BYTES" in w.reason]
    assert len(long) == 1 and long[0].line == at + 1 and long[0].path == str(path), session.warnings
    assert "more than the line limit of 1,048,576" in long[0].reason
    # the default fits it: the same file reads with no such warning
    monkeypatch.delenv("CTXHEALTH_MAX_LINE_BYTES")
    assert not any("line limit" in w.reason for w in read_session(path).warnings)


def test_a_gzip_bomb_peaks_near_the_cap_not_at_twice_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracemalloc

    from ctxhealth.errors import TranscriptError
    from ctxhealth.sources.reader import _decompress

    cap = 24 << 20
    monkeypatch.setenv("CTXHEALTH_MAX_INPUT_BYTES", str(cap))
    bomb = gzip.compress(b" " * (64 << 20), compresslevel=1)
    fits = gzip.compress(b"y" * (cap - 1), compresslevel=1)
    for data, raises in ((bomb, True), (fits, False)):
        tracemalloc.start()
        try:
            if raises:
                with pytest.raises(TranscriptError, match="size limit"):
                    _decompress(data, "bomb.gz")
            else:
                out, warning = _decompress(data, "fits.gz")
                assert len(out) == cap - 1 and warning is None
                del out
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1.4 * cap, (raises, peak / cap)


# ------------------------------------------------------------------ 8 (round three): newer ledger, full disk


def _future_ledger(home: Path) -> bytes:
    """A ledger written by a newer ctxhealth (one migration we do not know); its bytes."""
    import sqlite3

    from ctxhealth.state.ledger import Ledger

    home.mkdir(parents=True, exist_ok=True)
    Ledger.open(home).close()
    con = sqlite3.connect(home / "ledger.db", isolation_level=None)
    con.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_from_the_future', 'x')")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA journal_mode = DELETE")  # a newer version may journal otherwise: keep it so
    con.close()
    return (home / "ledger.db").read_bytes()


def _ledger_rows(home: Path) -> list[tuple[Any, ...]]:
    import sqlite3

    con = sqlite3.connect(f"file:{home / 'ledger.db'}?mode=ro", uri=True)
    try:
        rows = list(con.execute("SELECT name FROM _migrations ORDER BY rowid"))
        rows += list(con.execute("SELECT count(*) FROM hook_events"))
        rows += list(con.execute("SELECT count(*) FROM sessions"))
    finally:
        con.close()
    return rows


def test_hooks_work_beside_a_newer_ledger_and_leave_it_alone(tmp_path: Path) -> None:
    transcript = write_jsonl(tmp_path / "t.jsonl", claude_transcript())
    home = tmp_path / "home"
    before = _future_ledger(home)
    rows = _ledger_rows(home)
    for event, extra in (
        ("UserPromptSubmit", {"prompt": "go"}),
        ("PreCompact", {"trigger": "auto"}),
        ("SessionStart", {"source": "compact"}),
    ):
        done = _hook(event, home, transcript, **extra)
        assert done.returncode == 0, done.stderr
        lines = done.stderr.decode().splitlines()
        assert len(lines) == 1 and "newer ctxhealth" in lines[0] and "ledger" in lines[0], lines
        if event == "PreCompact":
            assert json.loads(done.stdout)["systemMessage"].startswith("ctxhealth: checkpoint saved")
        if event == "SessionStart":
            context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            assert "fix the parser" in context
    assert _ledger_rows(home) == rows  # never migrated, downgraded or written to
    assert (home / "ledger.db").read_bytes() == before


def _disk_full() -> None:
    """In the child: every write to a regular file fails (EFBIG, as ENOSPC would), and the signal
    that would kill the writer is ignored, so the program sees the error as on a full disk."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_on_a_full_disk_hooks_and_the_status_line_still_work_and_nothing_is_half_written(
    tmp_path: Path,
) -> None:
    transcript = write_jsonl(tmp_path / "t.jsonl", claude_transcript())
    home = tmp_path / "home"
    assert _hook("UserPromptSubmit", home, transcript, prompt="go").returncode == 0
    assert _hook("PreCompact", home, transcript, trigger="auto").returncode == 0
    with transcript.open("a") as handle:  # a new turn: the hooks have something to write
        handle.write(json.dumps(claude_transcript(16)[-1] | {"uuid": "new"}) + "\n")
    before = _files(home)
    env = {**os.environ, "CTXHEALTH_HOME": str(home), "CTXHEALTH_HELPER": "off"}
    outputs = {}
    for event, extra in (
        ("UserPromptSubmit", {"prompt": "go"}),
        ("PreCompact", {"trigger": "auto"}),
        ("SessionStart", {"source": "compact"}),
    ):
        body = {"hook_event_name": event, "session_id": "s", "transcript_path": str(transcript), **extra}
        done = subprocess.run(
            [sys.executable, "-m", "ctxhealth.cli.hook", event],
            input=json.dumps(body).encode(),
            capture_output=True,
            env=env,
            timeout=30,
            preexec_fn=_disk_full,
        )
        assert done.returncode == 0 and b"Traceback" not in done.stderr
        assert len(done.stderr.decode().splitlines()) == 1, done.stderr
        outputs[event] = done.stdout
    message = json.loads(outputs["PreCompact"])["systemMessage"]
    assert message.startswith("ctxhealth: no checkpoint saved (cannot write it"), message
    context = json.loads(outputs["SessionStart"])["hookSpecificOutput"]["additionalContext"]
    assert "fix the parser" in context
    status_body = {
        "session_id": "s",
        "transcript_path": str(transcript),
        "model": {"id": "claude-sonnet-4-5"},
    }
    status = subprocess.run(
        [sys.executable, "-m", "ctxhealth.cli.statusline", "--no-color"],
        input=json.dumps(status_body).encode(),
        capture_output=True,
        env=env,
        timeout=30,
        preexec_fn=_disk_full,
    )
    assert status.returncode == 0 and "green" in status.stdout.decode(), status
    after = _files(home)
    # nothing half-written: every file is as it was; new files (locks, refused temporaries) are empty
    assert {k: v for k, v in after.items() if k in before} == before
    assert all(not after[k] for k in after.keys() - before.keys()), sorted(after.keys() - before.keys())


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_checkpoint_and_report_on_a_full_disk_exit_4_and_keep_the_old_file(tmp_path: Path) -> None:
    transcript = write_jsonl(tmp_path / "t.jsonl", claude_transcript())
    root = tmp_path / "root"
    old = tmp_path / "r.html"
    old.write_text("the old report")
    env = {**os.environ, "CTXHEALTH_HOME": str(tmp_path / "home")}
    code = "import sys; from ctxhealth.cli.main import main; sys.argv[0] = 'ctxhealth'; main()"
    assert invoke(["checkpoint", str(transcript), "--root", str(root)]).exit_code == 0
    saved = _files(root)
    for args in (
        ["checkpoint", str(transcript), "--root", str(root)],
        ["report", str(transcript), "-o", str(old)],
    ):
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            env=env,
            timeout=60,
            preexec_fn=_disk_full,
        )
        err = done.stderr.decode()
        assert done.returncode == 4 and "Traceback" not in err and "error" in err, (args, err)
        assert len(err.strip().splitlines()) <= 2, err
    assert old.read_text() == "the old report"
    assert {k: v for k, v in _files(root).items() if v} == saved


# ------------------------------------------------------------------ 5 (round three): kills, portable lock


_CLI = "import sys; from ctxhealth.cli.main import main; sys.argv[0] = 'ctxhealth'; main()"


def _fleet_folder(folder: Path, files: int, turns: int = 30) -> Path:
    folder.mkdir()
    for n in range(files):
        write_jsonl(folder / f"s{n:03d}.jsonl", claude_transcript(turns, session=f"s{n}"))
    return folder


def _parquet_counts(store: Path) -> dict[str, int]:
    import pyarrow.parquet as pq

    from ctxhealth.fleet.store import parquet_files

    return {
        name: sum(pq.read_metadata(p).num_rows for p in parts) for name, parts in parquet_files(store).items()
    }


def test_a_fleet_run_killed_mid_write_leaves_the_parquet_store_as_it_was(tmp_path: Path) -> None:
    import signal
    import time

    pytest.importorskip("pyarrow")
    folder = _fleet_folder(tmp_path / "in", 40, turns=15)
    store = tmp_path / "f.parquet"
    env = {**os.environ, "CTXHEALTH_HOME": str(tmp_path / "home")}
    first = subprocess.run(
        [sys.executable, "-c", _CLI, "fleet", str(folder), "--out", str(store), "-j", "1"],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert first.returncode in (0, 1), first.stderr
    before = _parquet_counts(store)
    meta_before = (store / "meta.json").read_bytes()
    listed = {p.name for parts in json.loads(meta_before)["parts"].values() for p in map(Path, parts)}
    # every finished batch written at once (fleet gathers up to WRITE_BYTES before a write), so the run
    # writes parts of its own generation all along and a kill lands in the middle of them
    cli_writing_each_batch = "import ctxhealth.fleet.run as r; r.WRITE_BYTES = 1; " + _CLI
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            cli_writing_each_batch,
            "fleet",
            str(folder),
            "--out",
            str(store),
            "--full",
            "-j",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 120
    try:  # kill it once it has written parts of its own generation (mid-run, after the forget step)
        while time.monotonic() < deadline and proc.poll() is None:
            mine = [p for p in store.glob("*/*.parquet") if p.name not in listed]
            if len(mine) > 8:
                break
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert (store / "meta.json").read_bytes() == meta_before
    assert _parquet_counts(store) == before  # the previous generation, whole
    again = subprocess.run(
        [sys.executable, "-c", _CLI, "fleet", str(folder), "--out", str(store), "--full", "-j", "1"],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert again.returncode in (0, 1), again.stderr
    assert _parquet_counts(store) == before
    live = {p for parts in json.loads((store / "meta.json").read_text())["parts"].values() for p in parts}
    on_disk = {str(p.relative_to(store)) for p in store.glob("*/*.parquet")}
    assert on_disk == live  # the killed run's parts and the old generation are gone


@pytest.mark.parametrize("backend", ["fcntl", "owner-file"])
def test_the_exclusive_lock_holds_across_processes_and_frees_a_dead_owner(
    tmp_path: Path, backend: str
) -> None:
    from ctxhealth.atomic import ExclusiveLock

    path = tmp_path / "x.lock"
    probe = (
        "import sys; from ctxhealth.atomic import ExclusiveLock; "
        "print(ExclusiveLock(sys.argv[1], sys.argv[2]).acquire())"
    )

    def other() -> str:
        done = subprocess.run(
            [sys.executable, "-c", probe, str(path), backend], capture_output=True, timeout=30
        )
        return done.stdout.decode().strip()

    held = ExclusiveLock(path, backend)
    assert held.acquire()
    assert not ExclusiveLock(path, backend).acquire()
    assert other() == "False"
    held.release()
    assert other() == "True"  # that process has exited: its lock went with it
    if backend == "owner-file":
        import socket

        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
        path.write_text(f"{gone.stdout.decode().strip()} {socket.gethostname()} x\n")
        assert ExclusiveLock(path, backend).acquire()  # a dead owner's lock is taken over
        path.write_text("1 some-other-host x\n")
        refused = ExclusiveLock(path, backend)
        assert not refused.acquire() and refused.owner == "1 some-other-host"


def test_a_second_fleet_run_is_refused_where_fcntl_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")
    from ctxhealth.errors import EnvironmentProblem
    from ctxhealth.fleet.store import open_store

    monkeypatch.setitem(sys.modules, "fcntl", None)  # as on a platform without it
    out = tmp_path / "f.parquet"
    holder = open_store(out)
    try:
        with pytest.raises(EnvironmentProblem, match="another ctxhealth fleet run"):
            open_store(out)
    finally:
        holder.close()
    open_store(out).close()


def test_concurrent_fleet_runs_on_one_store_finish_or_are_refused_cleanly(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    folder = _fleet_folder(tmp_path / "in", 30, turns=10)
    store = tmp_path / "f.parquet"
    env = {**os.environ, "CTXHEALTH_HOME": str(tmp_path / "home")}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _CLI, "fleet", str(folder), "--out", str(store), "--full", "-j", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        for _ in range(4)
    ]
    results = [(run.wait(120), run.stderr.read().decode() if run.stderr else "") for run in runs]
    for code, err in results:
        assert "Traceback" not in err, err
        assert code in (0, 1) or (code == 4 and "another ctxhealth fleet run" in err), (code, err)
    assert any(code in (0, 1) for code, _ in results)
    assert _parquet_counts(store)["sessions"] == 30
