"""Dispatch: detection, gz, stdin, directories, --format override, strict mode, errors with hints."""

from __future__ import annotations

import gzip
import io
import shutil
from pathlib import Path

import pytest

from conftest import invoke
from ctxhealth.errors import CtxHealthError, StrictModeError, TranscriptError, UnknownFormatError
from ctxhealth.model import Format
from ctxhealth.sources import detect_format, read_session, read_sessions

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
EXAMPLE = REPO / "examples" / "claude-code-session.jsonl"
ALL_FIXTURES = {
    EXAMPLE: Format.CLAUDE_CODE,
    FIXTURES / "codex-rollout.jsonl": Format.CODEX,
    FIXTURES / "openai-chat.json": Format.OPENAI_CHAT,
    FIXTURES / "anthropic-messages.json": Format.ANTHROPIC_MESSAGES,
}


@pytest.mark.parametrize(
    ("path", "expected"), list(ALL_FIXTURES.items()), ids=lambda v: getattr(v, "name", v)
)
def test_detect_by_content_not_name(path: Path, expected: Format) -> None:
    assert detect_format(path.read_bytes()[:4096], "misleading.traj.json") is expected
    assert read_session(path).format is expected


def test_detect_real_data(claude_code_data: Path, mini_swe_data: Path) -> None:
    for file in claude_code_data.rglob("*.jsonl"):
        assert detect_format(file.read_bytes()[:8192], file.name) is Format.CLAUDE_CODE
    for file in sorted(mini_swe_data.rglob("*.traj.json"))[:20]:
        assert detect_format(file.read_bytes()[:8192], file.name) is Format.MINI_SWE_AGENT
    assert detect_format(b"", "x") is None
    assert detect_format(b"hello world\n", "x.jsonl") is None


def test_gzip_is_transparent(tmp_path: Path) -> None:
    packed = tmp_path / "session.jsonl.gz"
    packed.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    plain = read_session(EXAMPLE)
    unpacked = read_session(packed)
    assert unpacked.messages == plain.messages
    assert unpacked.path == str(packed)


def test_truncated_gzip_keeps_what_it_can(tmp_path: Path) -> None:
    data = gzip.compress(EXAMPLE.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    session = read_session(cut)
    assert session.messages and "truncated" in session.warnings[0].reason
    with pytest.raises(StrictModeError):
        read_session(cut, strict=True)
    corrupt = tmp_path / "bad.gz"
    corrupt.write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    with pytest.raises(TranscriptError):
        read_session(corrupt)


def test_stdin() -> None:
    stream = io.BytesIO(EXAMPLE.read_bytes())
    session = read_session("-", stdin=stream)
    assert session.path == "<stdin>"
    assert session.assistant_turns == read_session(EXAMPLE).assistant_turns
    gz = io.BytesIO(gzip.compress((FIXTURES / "codex-rollout.jsonl").read_bytes()))
    assert read_session("-", stdin=gz).format is Format.CODEX


def test_directory_recursion_skips_other_files(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    shutil.copy(EXAMPLE, tmp_path / "a" / "one.jsonl")
    shutil.copy(FIXTURES / "codex-rollout.jsonl", tmp_path / "a" / "b" / "rollout.jsonl")
    (tmp_path / "a" / "b" / "two.json.gz").write_bytes(
        gzip.compress((FIXTURES / "openai-chat.json").read_bytes())
    )
    (tmp_path / "notes.txt").write_text("not a transcript")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / ".hidden").mkdir()
    shutil.copy(EXAMPLE, tmp_path / ".hidden" / "x.jsonl")
    sessions = list(read_sessions([tmp_path]))
    assert [Path(s.path).name for s in sessions] == ["one.jsonl", "rollout.jsonl", "two.json.gz"]
    assert [s.format for s in sessions] == [Format.CLAUDE_CODE, Format.CODEX, Format.OPENAI_CHAT]
    only_codex = list(read_sessions([tmp_path], format=Format.CODEX))
    assert [Path(s.path).name for s in only_codex] == ["rollout.jsonl"]


def test_format_override(tmp_path: Path) -> None:
    # plain role/content lists read as either chat format; the override decides
    doc = tmp_path / "conversation.json"
    doc.write_text('{"messages": [{"role": "user", "content": "hi"}], "system": "s"}')
    assert read_session(doc).format is Format.ANTHROPIC_MESSAGES
    assert read_session(doc, format=Format.OPENAI_CHAT).format is Format.OPENAI_CHAT
    odd = tmp_path / "odd.log"
    odd.write_text("no json here\n")
    with pytest.raises(UnknownFormatError) as info:
        read_session(odd)
    assert "--format" in info.value.hint
    with pytest.raises(TranscriptError, match="no readable message as claude-code: invalid JSON") as forced:
        read_session(odd, format=Format.CLAUDE_CODE)
    assert forced.value.line == 1 and forced.value.exit_code == 3


def test_errors_have_hints(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError) as missing:
        read_session(tmp_path / "nope.jsonl")
    assert missing.value.hint and missing.value.exit_code == 3
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"  \n\n")
    with pytest.raises(TranscriptError, match="empty"):
        read_session(empty)
    with pytest.raises(TranscriptError, match="no transcripts"):
        list(read_sessions([tmp_path]))
    (tmp_path / "a.jsonl").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "b.jsonl").write_bytes(EXAMPLE.read_bytes())
    with pytest.raises(TranscriptError, match="expected one session"):
        read_session(tmp_path)


def test_strict_mode_raises_on_any_warning(tmp_path: Path) -> None:
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join([*lines[:5], b"{oops\n", *lines[5:]]))
    assert len(read_session(broken).warnings) == 1
    with pytest.raises(StrictModeError) as info:
        read_session(broken, strict=True)
    assert info.value.line == 6 and info.value.exit_code == 3
    assert read_session(EXAMPLE, strict=True).warnings == ()


def test_every_error_is_a_ctxhealth_error(tmp_path: Path) -> None:
    weird = tmp_path / "dir.jsonl"
    weird.mkdir()
    with pytest.raises(CtxHealthError):
        read_session(weird)


def test_cli_format_override_stdin_and_bad_input() -> None:

    codex_bytes = (FIXTURES / "codex-rollout.jsonl").read_bytes()
    piped = invoke(["check", "--json", "--format", "codex", "-"], input=codex_bytes)
    assert piped.exit_code in (0, 1), piped.output
    assert '"format":"codex"' in piped.output.replace(" ", "")
    wrong = invoke(["check", "--format", "openai-chat", str(FIXTURES / "codex-rollout.jsonl")])
    # nothing of a Codex rollout reads as a chat list: bad input with the reader's reason, not "healthy"
    assert wrong.exit_code == 3 and "no readable message as openai-chat" in wrong.output
    strict = invoke(["check", "--strict", "--format", "openai-chat", str(FIXTURES / "codex-rollout.jsonl")])
    assert strict.exit_code == 3 and "Traceback" not in strict.output
    junk = invoke(["check", "-"], input=b"\x00\xff garbage \x1f\x8b")
    assert junk.exit_code == 3 and "Traceback" not in junk.output


def test_bom_and_crlf_are_tolerated(tmp_path: Path) -> None:
    odd = tmp_path / "windows.jsonl"
    odd.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes().replace(b"\n", b"\r\n"))
    session = read_session(odd)
    assert session.warnings == ()
    assert session.messages == read_session(EXAMPLE).messages


def test_a_file_that_grew_after_its_size_was_taken_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the read is sized by fstat; bytes written after it (a live transcript) are still read
    import os

    from ctxhealth.sources import reader

    file = tmp_path / "live.jsonl"
    file.write_bytes(b"x" * 10_000)
    real = os.fstat

    def stale(fd: int) -> os.stat_result:
        found = list(real(fd))
        found[6] = 100  # st_size as it was before the writer appended
        return os.stat_result(found)

    monkeypatch.setattr(reader.os, "fstat", stale)
    assert reader.read_regular_file(file) == b"x" * 10_000
    monkeypatch.setenv("CTXHEALTH_MAX_INPUT_BYTES", "5000")
    with pytest.raises(TranscriptError, match=r"5,000|5000|limit|large"):
        reader.read_regular_file(file)
