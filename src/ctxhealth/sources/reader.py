"""Dispatch: paths (files, directories, ``-`` for stdin, ``.gz``) -> sessions, format by content.

Each built-in format registers a :class:`ReaderSpec` (a content sniffer and a parser) in
``READERS``, in detection order; a third-party reader would register the same way.

Policy choices:

* An explicit file that is empty (or blank) raises :class:`TranscriptError`; inside a directory
  walk, empty and unrecognised files are skipped (a project directory holds other files too).
* ``strict=True`` turns any reader warning (of the session or its sidechains) into
  :class:`StrictModeError`.
* Directories are searched recursively in sorted order; ``subagents/`` folders are not entered
  (their files are read as sidechains of the Claude Code session next to them).
* ``on_skip(SkippedFile)``, when given, hears of every file a directory walk steps over (empty,
  not a transcript, unreadable) and of every file in it that fails to read, which is then skipped
  instead of ending the walk (a caller summarising many sessions lists them; nothing else is lost).
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ctxhealth.errors import InputError, StrictModeError, TranscriptError, UnknownFormatError
from ctxhealth.model import Format, ReadWarning, Session
from ctxhealth.sources import (
    anthropic_messages,
    claude_code,
    codex,
    mini_swe_agent,
    openai_chat,
)

#: Bytes of (decompressed) content the detectors look at.
HEAD_BYTES = 64 * 1024

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
_FORMAT_NAMES = ", ".join(f.value for f in Format)


@dataclass(frozen=True, slots=True)
class ReaderSpec:
    """One transcript format: how to recognise it and how to read it."""

    format: Format
    detect: Callable[[bytes], bool]
    parse: Callable[[bytes, str], Session]


def _parse_claude_code(data: bytes, path: str) -> Session:
    return claude_code.parse(data, path, _subagent_files(path))


READERS: tuple[ReaderSpec, ...] = (
    ReaderSpec(Format.CLAUDE_CODE, claude_code.detect, _parse_claude_code),
    ReaderSpec(Format.CODEX, codex.detect, codex.parse),
    ReaderSpec(Format.MINI_SWE_AGENT, mini_swe_agent.detect, mini_swe_agent.parse),
    ReaderSpec(Format.ANTHROPIC_MESSAGES, anthropic_messages.detect, anthropic_messages.parse),
    ReaderSpec(Format.OPENAI_CHAT, openai_chat.detect, openai_chat.parse),
)
_BY_FORMAT = {spec.format: spec for spec in READERS}


def detect_format(head: bytes, name: str = "") -> Format | None:
    """The format of a transcript from its first bytes (content, not ``name``), or ``None``.

    ``head`` should be the first few KB of the (decompressed) content; a cut-off last line
    is fine. ``name`` is accepted for error messages and future tie-breaking only.
    """
    head = head.removeprefix(_BOM)
    if not head or head.isspace():
        return None
    for spec in READERS:
        if spec.detect(head):
            return spec.format
    return None


def _subagent_files(path: str) -> list[tuple[str, bytes]]:
    """``<session>/subagents/*.jsonl`` next to a Claude Code ``<session>.jsonl`` file."""
    if path.startswith("<"):
        return []
    p = Path(path)
    folder = p.with_name(p.name.removesuffix(".gz").removesuffix(".jsonl")) / "subagents"
    if not folder.is_dir():
        return []
    found: list[tuple[str, bytes]] = []
    for child in sorted(folder.iterdir()):
        if child.is_file() and child.name.endswith(_TRANSCRIPT_SUFFIXES):
            try:
                found.append((str(child), _decompress(child.read_bytes(), str(child))[0]))
            except (OSError, TranscriptError):
                continue
    return found


def _decompress(data: bytes, path: str) -> tuple[bytes, ReadWarning | None]:
    """Gunzip when ``data`` is gzip (by magic bytes); a truncated stream keeps what it yields."""
    if not data.startswith(_GZIP_MAGIC):
        return data, None
    decoder = zlib.decompressobj(wbits=47)
    try:
        out = decoder.decompress(data)
        out += decoder.flush()
    except zlib.error as exc:
        raise TranscriptError(
            f"corrupt gzip data ({exc})", hint="check the file, or gunzip it to see what is left", path=path
        ) from None
    if not decoder.eof:
        return out, ReadWarning(path, None, "gzip stream is truncated; read what was there")
    return out, None


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise TranscriptError(
            "no such file or directory", hint="check the path (use - to read stdin)", path=str(path)
        ) from None
    except IsADirectoryError:
        raise TranscriptError("is a directory", hint="pass the directory itself", path=str(path)) from None
    except OSError as exc:
        raise TranscriptError(
            f"cannot read file ({exc.strerror or exc})", hint="check permissions", path=str(path)
        ) from None


def read_data(data: bytes, name: str, *, format: Format | None = None, strict: bool = False) -> Session:
    """Read one transcript held in memory (already read from disk, a pipe or a socket)."""
    content, warning = _decompress(data, name)
    content = content.removeprefix(_BOM)
    if not content or content.isspace():
        raise TranscriptError("transcript is empty", hint="pass a file an agent has written to", path=name)
    spec = _BY_FORMAT[format] if format is not None else None
    if spec is None:
        detected = detect_format(content[:HEAD_BYTES], name)
        if detected is None:
            raise UnknownFormatError(
                "no reader recognises this content",
                hint=f"pass --format with one of: {_FORMAT_NAMES}",
                path=name,
            )
        spec = _BY_FORMAT[detected]
    session = spec.parse(content, name)
    if warning is not None:
        session = _with_warning(session, warning)
    if strict:
        _check_strict(session)
    return session


def _with_warning(session: Session, warning: ReadWarning) -> Session:
    return Session(
        path=session.path,
        format=session.format,
        messages=session.messages,
        session_id=session.session_id,
        model=session.model,
        sidechains=session.sidechains,
        warnings=(warning, *session.warnings),
        context_window=session.context_window,
        reported_fill=session.reported_fill,
    )


def _all_warnings(session: Session) -> list[ReadWarning]:
    found = list(session.warnings)
    for side in session.sidechains:
        found.extend(_all_warnings(side))
    return found


def _check_strict(session: Session) -> None:
    found = _all_warnings(session)
    if found:
        first = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise StrictModeError(
            f"{first.reason}{more}",
            hint="fix the transcript, or drop --strict to read it leniently",
            path=first.path,
            line=first.line,
        )


def _walk(root: Path) -> Iterator[Path]:
    """Files under ``root``, sorted, not entering ``subagents`` or hidden folders."""
    for current, dirs, files in os.walk(root, onerror=None):
        dirs[:] = sorted(d for d in dirs if d != "subagents" and not d.startswith("."))
        for name in sorted(files):
            yield Path(current) / name


def _sniff(file: Path) -> tuple[Format | None, bool, str]:
    """(detected format, has content, why it cannot be read) of a file, reading only its head
    unless it is gzip."""
    try:
        with file.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
            if head.startswith(_GZIP_MAGIC):
                head = _decompress(head + handle.read(), str(file))[0][:HEAD_BYTES]
    except OSError as exc:
        return None, False, f"cannot read file ({exc.strerror or exc})"
    except TranscriptError as exc:
        return None, False, exc.message
    if not head or head.isspace():
        return None, False, ""
    return detect_format(head, file.name), True, ""


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file a directory walk stepped over: ``error`` when it looked like a transcript but failed
    to read (bad input), not when it simply is not one."""

    path: str
    reason: str
    error: bool = False


SkipHandler = Callable[[SkippedFile], None]
"""``on_skip(skipped)``: told of each file a directory walk skips."""


def _read_directory(
    root: Path, format: Format | None, strict: bool, on_skip: SkipHandler | None = None
) -> Iterator[Session]:
    count = 0

    def skip(path: str, reason: str) -> None:
        if on_skip is not None:
            on_skip(SkippedFile(path, reason))

    for file in _walk(root):
        detected, has_content, problem = _sniff(file)
        if not has_content:
            if on_skip is not None:
                on_skip(SkippedFile(str(file), problem or "empty file", error=bool(problem)))
            continue
        if format is None:
            if detected is None:
                skip(str(file), "not a transcript (no reader recognises the content)")
                continue
        elif detected != format and not (detected is None and file.name.endswith(_TRANSCRIPT_SUFFIXES)):
            skip(str(file), f"not a {format.value} transcript")
            continue
        try:
            raw = file.read_bytes()
        except OSError as exc:
            if on_skip is not None:
                on_skip(SkippedFile(str(file), f"cannot read file ({exc.strerror or exc})", error=True))
            continue
        count += 1
        if on_skip is None:
            yield read_data(raw, str(file), format=format or detected, strict=strict)
            continue
        try:
            session = read_data(raw, str(file), format=format or detected, strict=strict)
        except InputError as exc:
            where = f"line {exc.line}: " if exc.line is not None else ""
            hint = f" ({exc.hint})" if exc.hint else ""
            on_skip(SkippedFile(str(file), f"{where}{exc.message}{hint}", error=True))
            continue
        yield session
    if count == 0:
        raise TranscriptError(
            "no transcripts found in this directory",
            hint=f"point at a transcript file or pass --format ({_FORMAT_NAMES})",
            path=str(root),
        )


def read_sessions(
    paths: Iterable[str | Path],
    *,
    format: Format | None = None,
    strict: bool = False,
    stdin: BinaryIO | None = None,
    on_skip: SkipHandler | None = None,
) -> Iterator[Session]:
    """Every session in ``paths``: files, directories (recursive), ``-`` (stdin), ``.gz``.

    The format is detected from content unless ``format`` is given. Lenient by default:
    problems become ``Session.warnings``; with ``strict`` any warning raises
    :class:`StrictModeError`. ``stdin`` replaces ``sys.stdin.buffer`` for ``-`` (tests).
    ``on_skip`` hears of files a directory walk skips (see the module notes); files named
    explicitly still raise.
    """
    for item in paths:
        if str(item) == "-":
            stream = stdin if stdin is not None else sys.stdin.buffer
            try:
                data = stream.read()
            except OSError as exc:
                raise TranscriptError(f"cannot read stdin ({exc})", hint="pipe a transcript in") from None
            yield read_data(data, "<stdin>", format=format, strict=strict)
            continue
        path = Path(item)
        if path.is_dir():
            yield from _read_directory(path, format, strict, on_skip)
        else:
            yield read_data(_read_bytes(path), str(path), format=format, strict=strict)


def read_session(
    path: str | Path,
    *,
    format: Format | None = None,
    strict: bool = False,
    stdin: BinaryIO | None = None,
) -> Session:
    """Exactly one session from ``path`` (a file, ``-``, or a directory holding one transcript)."""
    sessions = list(read_sessions([path], format=format, strict=strict, stdin=stdin))
    if len(sessions) != 1:
        raise TranscriptError(
            f"expected one session, found {len(sessions)}",
            hint="pass a single transcript file, or use read_sessions for many",
            path=str(path),
        )
    return sessions[0]
