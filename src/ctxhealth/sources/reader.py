"""Dispatch: paths (files, directories, ``-`` for stdin, ``.gz``) -> sessions, format by content.

Each built-in format registers a :class:`ReaderSpec` (a content sniffer and a parser) in
``READERS``, in detection order; a third-party reader would register the same way.

Policy choices:

* An explicit file that is empty (or blank), that no reader recognises, or in which the reader
  (detected or forced with ``format``) understood no message and stepped over lines it could not
  read, raises :class:`TranscriptError` / :class:`UnknownFormatError` with the reader's reason: bad
  input is an error, never an empty "healthy" session. Inside a directory walk such files are
  skipped, and each skipped file is reported to the caller's ``on_skip(path, reason)`` (the CLI
  lists them on stderr) instead of being dropped silently.
* Only regular files are read: a FIFO, socket or device given as a transcript is refused at once
  (reading it could block forever).
* Invalid UTF-8 loses only the bad bytes: a file whose reading stepped over lines is checked, and
  if it is not valid UTF-8 it is read again with the bad bytes decoded as U+FFFD, one warning per
  line naming it; the rest of each line is read. (Valid files pay nothing for this.)
* Detection looks at the first 64 KB; when the first line is longer than that (a whole JSON
  document on one line, a huge first record), it looks at the complete first line.
* ``strict=True`` turns any reader warning (of the session or its sidechains) into
  :class:`StrictModeError`.
* Directories are walked by :func:`discover` (:mod:`ctxhealth.sources.walk`, the one walk every
  command shares): recursively, sorted, hidden files and folders left out; each reader registers
  its walk hooks in its :class:`ReaderSpec` (Claude Code: ``subagents/`` files are read as
  sidechains of the session next to them, never on their own; OpenHands: a folder of one-call
  files is one session).
* ``on_skip(SkippedFile)``, when given, hears of every file a directory walk steps over (empty,
  not a transcript, unreadable) and of every file in it that fails to read, which is then skipped
  instead of ending the walk (a caller summarising many sessions lists them; nothing else is lost).
"""

from __future__ import annotations

import io
import os
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import msgspec
from msgspec.structs import replace

from ctxhealth.errors import InputError, StrictModeError, TranscriptError, UnknownFormatError, UsageError
from ctxhealth.model import Format, ReadWarning, Session
from ctxhealth.sources import anthropic_messages, claude_code, openai_chat, sniff
from ctxhealth.sources.claude_code import layout
from ctxhealth.sources.lines import valid_utf8
from ctxhealth.sources.walk import Source, WalkHooks, file_source, walk

#: Bytes of (decompressed) content the detectors look at.
HEAD_BYTES = 64 * 1024

#: Bytes of the end of a file that ``ReaderSpec.detect_tail`` looks at.
TAIL_BYTES = 4096

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
_FORMAT_NAMES = ", ".join(f.value for f in Format)


class ReaderSpec(msgspec.Struct, frozen=True):
    """One transcript format: how to recognise it and how to read it.

    ``parse_all`` is set for formats that hold several sessions in one file (tau-bench results,
    OpenHands ``output.jsonl``); ``detect_tail`` for formats whose head alone cannot tell (one
    JSON object whose first field is megabytes long): it sees the head and the last bytes.
    """

    format: Format
    detect: Callable[[bytes], bool]
    parse: Callable[[bytes, str], Session]
    parse_all: Callable[[bytes, str], list[Session]] | None = None
    detect_tail: Callable[[bytes, bytes], bool] | None = None
    walk: WalkHooks | None = None
    """How this format's files group in a directory walk (companion files, one-call-per-file folders)."""


def _parse_claude_code(data: bytes, path: str) -> Session:
    return claude_code.parse(data, path, _subagent_files(path))


# The readers below are imported when a file of their format is read (their sniffers are in
# ``sniff``): a run over Claude Code sessions loads none of them.


def _parse_codex(data: bytes, path: str) -> Session:
    from ctxhealth.sources import codex

    return codex.parse(data, path)


def _parse_mini_swe_agent(data: bytes, path: str) -> Session:
    from ctxhealth.sources import mini_swe_agent

    return mini_swe_agent.parse(data, path)


def _parse_swe_agent(data: bytes, path: str) -> Session:
    from ctxhealth.sources import swe_agent

    return swe_agent.parse(data, path)


def _parse_tau_bench(data: bytes, path: str) -> Session:
    from ctxhealth.sources import tau_bench

    return tau_bench.parse(data, path)


def _parse_tau_bench_all(data: bytes, path: str) -> list[Session]:
    from ctxhealth.sources import tau_bench

    return tau_bench.parse_all(data, path)


def _parse_openhands(data: bytes, path: str) -> Session:
    from ctxhealth.sources import openhands

    return openhands.parse(data, path)


def _parse_gemini_cli(data: bytes, path: str) -> Session:
    from ctxhealth.sources import gemini_cli

    session = gemini_cli.parse(data, path)
    if path.startswith("<"):
        return session
    projects = Path(path).parent.parent.parent.parent / "projects.json"  # ~/.gemini/tmp/<p>/chats/x
    try:
        cwd = gemini_cli.project_path(path, projects.read_bytes())
    except OSError:
        return session
    return replace(session, cwd=cwd) if cwd else session


def _parse_openhands_all(data: bytes, path: str) -> list[Session]:
    from ctxhealth.sources import openhands

    if sniff.openhands_completion(data[:HEAD_BYTES]):
        return [openhands.parse(data, path)]
    return openhands.parse_all(data, path)


def _openhands_calls(folder: Path, files: Sequence[Path]) -> list[Path]:
    """The OpenHands one-call files of a folder (one session together); only a folder whose first
    ``.json`` file is a call is looked at further."""
    candidates = [f for f in files if f.name.endswith((".json", ".json.gz"))]
    if not candidates or not is_call_file(candidates[0]):
        return []
    return [candidates[0], *(f for f in candidates[1:] if is_call_file(f))]


READERS: tuple[ReaderSpec, ...] = (
    ReaderSpec(
        Format.CLAUDE_CODE,
        claude_code.detect,
        _parse_claude_code,
        walk=WalkHooks(companions=layout.subagent_files, is_companion_dir=layout.is_companion_dir),
    ),
    ReaderSpec(Format.CODEX, sniff.codex, _parse_codex),
    ReaderSpec(Format.GEMINI_CLI, sniff.gemini_cli, _parse_gemini_cli),
    ReaderSpec(Format.MINI_SWE_AGENT, sniff.mini_swe_agent, _parse_mini_swe_agent),
    ReaderSpec(Format.SWE_AGENT, sniff.swe_agent, _parse_swe_agent),
    ReaderSpec(Format.TAU_BENCH, sniff.tau_bench, _parse_tau_bench, _parse_tau_bench_all),
    ReaderSpec(
        Format.OPENHANDS,
        sniff.openhands,
        _parse_openhands,
        _parse_openhands_all,
        sniff.openhands_tail,
        walk=WalkHooks(group=_openhands_calls),
    ),
    ReaderSpec(Format.ANTHROPIC_MESSAGES, anthropic_messages.detect, anthropic_messages.parse),
    ReaderSpec(Format.OPENAI_CHAT, openai_chat.detect, openai_chat.parse),
)
_BY_FORMAT = {spec.format: spec for spec in READERS}
WALK_HOOKS: tuple[WalkHooks, ...] = tuple(spec.walk for spec in READERS if spec.walk is not None)
"""The readers' walk hooks, in registration order (what :func:`discover` walks with)."""
MANY_PER_FILE: frozenset[Format] = frozenset(spec.format for spec in READERS if spec.parse_all is not None)
"""Formats one file of which may hold several sessions (a session of such a file is named
``PATH#SESSION_ID``, see :data:`SESSION_SEPARATOR`)."""


def detect_format(head: bytes, name: str = "", tail: bytes = b"") -> Format | None:
    """The format of a transcript from its first bytes (content, not ``name``), or ``None``.

    ``head`` should be the first few KB of the (decompressed) content; a cut-off last line
    is fine. ``tail``, the last bytes, settles formats whose head cannot (see ``ReaderSpec``).
    ``name`` is accepted for error messages and future tie-breaking only.
    """
    head = head.removeprefix(_BOM)
    if not head or head.isspace():
        return None
    for spec in READERS:
        if spec.detect(head) or (spec.detect_tail is not None and tail and spec.detect_tail(head, tail)):
            return spec.format
    return None


def _subagent_files(path: str) -> list[tuple[str, bytes]]:
    """``<session>/subagents/*.jsonl`` next to a Claude Code ``<session>.jsonl`` file, read."""
    if path.startswith("<"):
        return []
    found: list[tuple[str, bytes]] = []
    for child in layout.subagent_files(path):
        try:
            found.append((str(child), _decompress(read_regular_file(child), str(child))[0]))
        except (OSError, TranscriptError):
            continue
    return found


MAX_INPUT_ENV = "CTXHEALTH_MAX_INPUT_BYTES"
"""The environment variable that sets :func:`max_input_bytes`."""
DEFAULT_MAX_INPUT_BYTES = 512 << 20
"""The most bytes one input may hold, after decompression (512 MiB: the largest real transcripts
are a few MB; a gzip bomb or a sparse file stops here with an error instead of eating memory)."""


def max_input_bytes() -> int:
    """The size cap of one input (``CTXHEALTH_MAX_INPUT_BYTES``, else 512 MiB)."""
    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return DEFAULT_MAX_INPUT_BYTES


def _too_large(path: str, limit: int, what: str = "transcript", verb: str = "holds") -> TranscriptError:
    return TranscriptError(
        f"{verb} more than {limit:,} bytes (the {what} size limit)",
        hint=f"set {MAX_INPUT_ENV} to a larger number of bytes to read it",
        path=path,
    )


_INFLATE_CHUNK = 1 << 20
"""Bytes of output one inflate step may produce (a bomb stops within one step of the cap)."""


def _decompress(data: bytes, path: str) -> tuple[bytes, ReadWarning | None]:
    """Gunzip when ``data`` is gzip (by magic bytes): every member of a concatenated file, at most
    :func:`max_input_bytes` of output (more is an error); a truncated stream keeps what it yields.

    Output is produced in steps of at most 1 MiB into one growing buffer, which is returned
    without a copy: memory peaks near the cap (plus one step), never at twice it."""
    if not data.startswith(_GZIP_MAGIC):
        return data, None
    limit = max_input_bytes()
    out = io.BytesIO()
    size = 0
    rest = data
    while True:
        decoder = zlib.decompressobj(wbits=47)
        member_start = size
        pending = rest
        try:
            while True:
                piece = decoder.decompress(pending, _INFLATE_CHUNK)
                size += len(piece)
                if size > limit:
                    raise _too_large(path, limit, verb="decompresses to")
                out.write(piece)
                pending = decoder.unconsumed_tail
                if decoder.eof or (not pending and len(piece) < _INFLATE_CHUNK):
                    break
        except zlib.error as exc:
            if member_start:  # a later member is damaged: keep the members before it, and say so
                out.truncate(member_start)
                return out.getvalue(), ReadWarning(
                    path, None, f"gzip member is corrupt ({exc}); read what was before it"
                )
            raise TranscriptError(
                f"corrupt gzip data ({exc})",
                hint="check the file, or gunzip it to see what is left",
                path=path,
            ) from None
        if not decoder.eof:
            return out.getvalue(), ReadWarning(path, None, "gzip stream is truncated; read what was there")
        rest = decoder.unused_data
        if not rest.startswith(_GZIP_MAGIC):
            return out.getvalue(), None


def read_regular_file(path: Path | str, what: str = "transcript") -> bytes:
    """The bytes of ``path``, one rule for every file ctxhealth is given to read: a regular file
    only (checked on the open file; the open never blocks on a FIFO), at most
    :func:`max_input_bytes` of it. Raises :class:`TranscriptError` saying what is wrong."""
    name = str(path)
    limit = max_input_bytes()
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TranscriptError(
            "no such file or directory", hint="check the path (use - to read stdin)", path=name
        ) from None
    except OSError as exc:
        raise TranscriptError(
            f"cannot read file ({exc.strerror or exc})", hint="check permissions", path=name
        ) from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise TranscriptError("is a directory", hint="pass the directory itself", path=name)
        if not stat.S_ISREG(mode):
            raise TranscriptError(
                f"is a {_kind(mode)}, not a file",
                hint=f"pass a regular {what} file (a pipe's content can be given as -)",
                path=name,
            )
        size = os.fstat(fd).st_size
        if size > limit:  # refused before reading (a sparse file costs nothing)
            raise _too_large(name, limit, what)
        try:
            # a buffer of the file's size, not of the limit (half the cost of reading); a file
            # that grew since is read on to the limit as before
            data = handle.read(size + 1)
            if len(data) > size:
                data += handle.read(limit + 1 - len(data))
        except OSError as exc:
            raise TranscriptError(
                f"cannot read file ({exc.strerror or exc})", hint="check permissions", path=name
            ) from None
    if len(data) > limit:
        raise _too_large(name, limit, what)
    return data


def check_regular_file(path: Path, what: str = "transcript") -> None:
    """Raise :class:`TranscriptError` unless ``path`` is a regular file (or missing: the caller's
    read says so). A FIFO, socket or device would block the read or never end."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise TranscriptError(
            f"is a {_kind(mode)}, not a file",
            hint=f"pass a regular {what} file (a pipe's content can be given as -)",
            path=str(path),
        )


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def _read_bytes(path: Path) -> bytes:
    return read_regular_file(path)


UNRECOGNISED = "no reader recognises this content"
NOT_A_TRANSCRIPT = "not a transcript (no reader recognises the content)"
"""How a folder walk and the fleet name a file no reader recognises (:func:`skip_reason`)."""


def unrecognised(head: bytes, name: str) -> UnknownFormatError:
    """The error for content no reader recognises: what it is when it is a log known not to be a
    transcript (the event stream Codex CLI's ``exec --json`` or Gemini CLI's ``-p --output-format
    stream-json`` prints: no prompt, usage summed), with the session's log to read instead; else the
    formats that are read."""
    session = sniff.gemini_stream_events(head)
    if session is not None:
        return UnknownFormatError(
            "a Gemini CLI `--output-format stream-json` event stream, not a transcript: it holds the "
            "messages but not the prompts sent, and only the run's total usage, so no fill can be read "
            "from it",
            hint="read the session's chat instead, which Gemini CLI writes as "
            f"~/.gemini/tmp/<project>/chats/session-*-{session[:8] or '<id>'}.jsonl",
            path=name,
        )
    thread = sniff.codex_exec_events(head)
    if thread is not None:
        return UnknownFormatError(
            "a Codex CLI `exec --json` event stream, not a transcript: it holds no prompt and one "
            "usage per turn, summed over the turn's requests, so no fill can be read from it",
            hint="read the session's rollout instead, which Codex writes as "
            f"$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-{thread or '<thread_id>'}.jsonl "
            "(CODEX_HOME is ~/.codex unless set)",
            path=name,
        )
    return UnknownFormatError(
        UNRECOGNISED,
        hint=f"check that it is a transcript; formats read: {_FORMAT_NAMES} (a command's --format, "
        "where it has one, forces one)",
        path=name,
    )


def skip_reason(error: UnknownFormatError) -> str:
    """The reason a folder walk or the fleet gives for skipping a file no reader recognises."""
    return NOT_A_TRANSCRIPT if error.message == UNRECOGNISED else f"{error.message}. {error.hint}"


def read_data(data: bytes, name: str, *, format: Format | None = None, strict: bool = False) -> Session:
    """Read one transcript held in memory (already read from disk, a pipe or a socket); a file
    holding several sessions gives its first."""
    return read_data_all(data, name, format=format, strict=strict)[0]


def read_data_all(
    data: bytes, name: str, *, format: Format | None = None, strict: bool = False
) -> list[Session]:
    """Every session of one transcript held in memory (most formats hold exactly one)."""
    content, warning = _decompress(data, name)
    content = content.removeprefix(_BOM)
    if not content or content.isspace():
        raise TranscriptError("transcript is empty", hint="pass a file an agent has written to", path=name)
    spec = _BY_FORMAT[format] if format is not None else None
    if spec is None:
        detected = detect_head(content)
        if detected is None:
            raise unrecognised(content[:HEAD_BYTES], name)
        spec = _BY_FORMAT[detected]
    sessions = _parse(spec, content, name)
    if any(s.warnings for s in sessions) and not content.isascii() and not valid_utf8(content):
        # only a file the reader stepped over lines of is checked: invalid UTF-8 costs those lines
        # (JSON must be UTF-8), so read it again with just the bad bytes replaced
        content, utf8_warnings = repair_utf8(content, name)
        sessions = _parse(spec, content, name)
    else:
        utf8_warnings = []
    own = sessions[0].warnings
    extra = [*([warning] if warning is not None else []), *utf8_warnings]
    if extra:
        sessions[0] = _with_warnings(sessions[0], extra)
    if not any(_has_messages(s) for s in sessions) and sessions[0].warnings:
        first = own[0] if own else sessions[0].warnings[0]  # the reader's own reason first
        count = len(sessions[0].warnings)
        more = f" ({count - 1} more)" if count > 1 else ""
        raise TranscriptError(
            f"no readable message as {spec.format.value}: {first.reason}{more}",
            hint=(
                "check the file, or pass the right --format"
                if format is not None
                else f"check the file (formats read: {_FORMAT_NAMES})"
            ),
            path=name,
            line=first.line,
        )
    if strict:
        for session in sessions:
            check_strict(session)
    return sessions


def _parse(spec: ReaderSpec, content: bytes, name: str) -> list[Session]:
    """Every session ``spec`` reads from ``content`` (most formats hold exactly one)."""
    sessions = spec.parse_all(content, name) if spec.parse_all is not None else [spec.parse(content, name)]
    return sessions or [Session(path=name, format=spec.format, messages=())]


def _has_messages(session: Session) -> bool:
    return bool(session.messages) or any(_has_messages(s) for s in session.sidechains)


def detect_head(content: bytes, tail: bytes | None = None) -> Format | None:
    """The format of ``content`` from its first 64 KB (and ``tail``, the file's last bytes: by
    default those of ``content``), or from its whole first line when that line is longer (a JSON
    document on one line, a huge first record)."""
    head = content[:HEAD_BYTES]
    detected = detect_format(head, "", content[-TAIL_BYTES:] if tail is None else tail)
    if detected is None and len(content) > HEAD_BYTES:
        start = len(content) - len(content.lstrip())
        end = content.find(b"\n", start)
        if end == -1 or end >= HEAD_BYTES:
            detected = detect_format(content[: end if end != -1 else len(content)])
    return detected


def repair_utf8(content: bytes, name: str) -> tuple[bytes, list[ReadWarning]]:
    """``content`` with invalid UTF-8 bytes replaced by U+FFFD, and a warning per line that had them
    (the rest of each line is kept)."""
    if valid_utf8(content):
        return content, []
    text = content.decode("utf-8", errors="replace")
    warnings: list[ReadWarning] = []
    line_no = 0
    for line_no, line in enumerate(content.split(b"\n"), start=1):
        if not valid_utf8(line):
            bad = len(line.decode("utf-8", errors="replace")) - len(line.decode("utf-8", errors="ignore"))
            warnings.append(
                ReadWarning(
                    name,
                    line_no,
                    f"invalid UTF-8: {bad} byte sequence(s) that are not text were replaced with \ufffd",
                )
            )
            if len(warnings) >= _MAX_UTF8_WARNINGS:
                warnings.append(ReadWarning(name, None, "invalid UTF-8 on more lines; not listed"))
                break
    return text.encode("utf-8"), warnings


_MAX_UTF8_WARNINGS = 50


def _with_warnings(session: Session, warnings: list[ReadWarning]) -> Session:
    return replace(session, warnings=(*warnings, *session.warnings))


def _all_warnings(session: Session) -> list[ReadWarning]:
    found = list(session.warnings)
    for side in session.sidechains:
        found.extend(_all_warnings(side))
    return found


def check_strict(session: Session) -> None:
    """Raise :class:`StrictModeError` on the first reader warning of ``session`` or its sidechains."""
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


def discover(paths: Iterable[str | Path], *, absolute: bool = False) -> list[Source]:
    """Every source under ``paths`` (files and folders), each once, in a stable order: the one
    directory walk (see :mod:`ctxhealth.sources.walk`) with every reader's hooks.

    A file named explicitly is taken as it is (with its companions). ``absolute`` names sources by
    resolved path. Raises :class:`UsageError` for ``-`` (a stream is not on disk) and
    :class:`TranscriptError` for a path that does not exist.
    """
    found: dict[str, Source] = {}
    for item in paths:
        if str(item) == "-":
            raise UsageError("stdin is not a folder to search", hint="pass transcript files or folders")
        root = Path(item)
        if root.is_dir():
            sources: Iterable[Source] = walk(root, WALK_HOOKS, absolute=absolute)
        elif root.exists():
            sources = (file_source(root, WALK_HOOKS, absolute=absolute),)
        else:
            raise TranscriptError("no such file or directory", hint="check the path", path=str(root))
        for source in sources:
            found.setdefault(source.path, source)
    return list(found.values())


def _sniff(file: Path) -> tuple[Format | None, bytes]:
    """(detected format, head) of a file, reading only its head (and last bytes) unless it is gzip
    or its first line is longer than the head; the head is empty when the file holds only blanks."""
    tail: bytes | None = None
    with file.open("rb") as handle:
        head = handle.read(HEAD_BYTES)
        if head.startswith(_GZIP_MAGIC):
            head = _decompress(head + handle.read(max_input_bytes()), str(file))[0]
        elif len(head) == HEAD_BYTES and b"\n" not in head.lstrip():
            # one line longer than the head: detection needs the whole line (bounded)
            head += handle.read(max_input_bytes())
        elif len(head) == HEAD_BYTES:
            handle.seek(max(handle.seek(0, os.SEEK_END) - TAIL_BYTES, HEAD_BYTES))
            tail = handle.read(TAIL_BYTES)
    if not head or head.isspace():
        return None, b""
    head = head.removeprefix(_BOM)
    return detect_head(head, tail), head


class SkippedFile(msgspec.Struct, frozen=True):
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

    def skip(file: Path, reason: str, error: bool = False) -> None:
        if on_skip is not None:
            on_skip(SkippedFile(str(file), reason, error))

    for source in walk(root, WALK_HOOKS):
        if source.grouped:
            if format is not None and format is not Format.OPENHANDS:
                for member in source.members:
                    skip(Path(member), f"not a {format.value} transcript (read as openhands)")
                continue
            try:
                session = read_call_folder(source.members, strict=strict)
            except OSError as exc:
                skip(Path(source.path), f"cannot read file ({exc.strerror or exc})", error=True)
                continue
            except InputError as exc:
                skip(Path(source.path), _skip_reason(exc), error=True)
                continue
            count += 1
            yield session
            continue
        file = Path(source.path)
        try:
            check_regular_file(file)
            detected, head = _sniff(file)
        except OSError as exc:
            skip(file, f"cannot read file ({exc.strerror or exc})", error=True)
            continue
        except TranscriptError as exc:
            skip(file, exc.message, error=True)
            continue
        if not head:
            skip(file, "empty file")
            continue
        if format is None:
            if detected is None:
                skip(file, skip_reason(unrecognised(head[:HEAD_BYTES], str(file))))
                continue
        elif detected != format and not (detected is None and file.name.endswith(_TRANSCRIPT_SUFFIXES)):
            skip(
                file, f"not a {format.value} transcript (read as {detected.value if detected else 'unknown'})"
            )
            continue
        try:
            sessions = read_data_all(
                read_regular_file(file), str(file), format=format or detected, strict=strict
            )
        except OSError as exc:
            skip(file, f"cannot read file ({exc.strerror or exc})", error=True)
            continue
        except InputError as exc:
            # one bad file does not cost the others: it is skipped, and said to be bad input
            skip(file, _skip_reason(exc), error=True)
            continue
        count += 1
        yield from sessions
    if count == 0:
        raise TranscriptError(
            "no transcripts found in this directory",
            hint=f"point at a transcript file or pass --format ({_FORMAT_NAMES})",
            path=str(root),
        )


def _skip_reason(exc: InputError) -> str:
    where = f" at line {exc.line}" if exc.line is not None else ""
    hint = f" ({exc.hint})" if exc.hint else ""
    return f"{exc.message}{where}{hint}"


class _CallFolder:
    """Groups the one-call-per-file OpenHands completion logs of a folder into one session."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.folder: Path | None = None
        self.files: list[tuple[str, bytes]] = []

    def add(self, file: Path, content: bytes) -> Iterator[Session]:
        if self.folder is not None and file.parent != self.folder:
            yield from self.flush()
        self.folder = file.parent
        self.files.append((str(file), content))

    def flush(self) -> Iterator[Session]:
        if self.folder is None:
            return
        from ctxhealth.sources import openhands

        session = openhands.parse_calls(self.files, str(self.folder), session_id=self.folder.name)
        self.folder, self.files = None, []
        if self.strict:
            check_strict(session)
        yield session


def is_call_file(file: Path) -> bool:
    """Whether ``file`` is one model call of an OpenHands completion log (whose folder is one session).

    Reads the head and the last bytes only (what detection needs for a call file, see
    ``ReaderSpec.detect_tail``), never the whole file unless it is gzip."""
    try:
        if not file.is_file():  # a FIFO or device in a folder would block the open or never end
            return False
        with file.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
            tail = b""
            if head.startswith(_GZIP_MAGIC):
                content = _decompress(head + handle.read(max_input_bytes()), str(file))[0]
                head, tail = content[:HEAD_BYTES], content[-TAIL_BYTES:]
            elif len(head) == HEAD_BYTES:
                handle.seek(max(handle.seek(0, os.SEEK_END) - TAIL_BYTES, HEAD_BYTES))
                tail = handle.read(TAIL_BYTES)
    except (OSError, InputError):
        return False
    head = head.removeprefix(_BOM)
    if not sniff.openhands_completion(head):
        return False
    return detect_format(head, "", tail or head[-TAIL_BYTES:]) is Format.OPENHANDS


def read_call_folder(files: Iterable[str | Path], *, strict: bool = False) -> Session:
    """The one session of an OpenHands completion folder: its call files (one folder), read together as a
    directory walk reads them."""
    calls = _CallFolder(strict)
    for name in files:
        file = Path(name)
        for _ in calls.add(file, _decompress(_read_bytes(file), str(file))[0]):
            raise UsageError("call files of more than one folder", hint="pass the calls of one folder")
    sessions = list(calls.flush())
    if not sessions:
        raise UsageError("no call file given", hint="pass the calls of one folder")
    return sessions[0]


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
            yield from read_data_all(data, "<stdin>", format=format, strict=strict)
            continue
        path = Path(item)
        if path.is_dir():
            yield from _read_directory(path, format, strict, on_skip)
        else:
            yield from read_data_all(_read_bytes(path), str(path), format=format, strict=strict)


SESSION_SEPARATOR = "#"
"""Names one session of a file holding several: ``PATH#SESSION_ID`` (also the fleet tables' key)."""

SESSIONS_NAMED = 5
"""Session ids an error about a file holding several names."""


def read_session(
    path: str | Path,
    *,
    format: Format | None = None,
    strict: bool = False,
    stdin: BinaryIO | None = None,
) -> Session:
    """Exactly one session from ``path`` (a file, ``-``, or a directory holding one transcript);
    ``PATH#SESSION_ID`` picks one session of a file holding several (tau-bench results, OpenHands
    ``output.jsonl``)."""
    source, wanted = str(path), None
    if source != "-" and not Path(source).exists() and SESSION_SEPARATOR in source:
        source, _, wanted = source.rpartition(SESSION_SEPARATOR)
    sessions = list(read_sessions([source], format=format, strict=strict, stdin=stdin))
    ids = [s.session_id or str(n) for n, s in enumerate(sessions)]
    more = len(ids) - SESSIONS_NAMED
    named = ", ".join(ids[:SESSIONS_NAMED]) + (f" and {more} more" if more > 0 else "")
    if wanted is not None:
        if wanted in ids:
            return sessions[ids.index(wanted)]
        raise TranscriptError(
            f"no session {wanted!r} here; it holds {len(ids)}: {named}",
            hint=f"name one as {source}{SESSION_SEPARATOR}{ids[0]}",
            path=source,
        )
    if len(sessions) != 1:
        hint = (
            f"name one as {source}{SESSION_SEPARATOR}{ids[0]}"
            if sessions and Path(source).is_file()
            else "pass a single transcript file"
        )
        raise TranscriptError(
            f"expected one session, found {len(sessions)}" + (f": {named}" if sessions else ""),
            hint=hint,
            path=source,
        )
    return sessions[0]
