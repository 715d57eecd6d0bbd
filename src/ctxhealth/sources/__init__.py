"""Readers: turn a transcript source (file, directory, stdin, .gz) into :class:`ctxhealth.model.Session`.

Public entry points (implemented in ``ctxhealth.sources.reader``):

* ``read_sessions(paths, *, format=None, strict=False, on_skip=None) -> Iterator[Session]`` — every
  session in the given paths (files, directories searched recursively, ``-`` for stdin, ``.gz``),
  the format detected from content unless ``format`` is given. Lenient: problems become
  ``Session.warnings``.
* ``read_session(path, *, format=None, strict=False) -> Session`` — exactly one session.
* ``detect_format(head: bytes, name: str) -> Format | None``.
* ``discover(paths, *, absolute=False) -> list[Source]`` — the one directory walk every command
  shares (``ctxhealth.sources.walk``; readers register their grouping hooks in ``ReaderSpec.walk``).

An explicit file that is empty, or in which the reader understood no message, raises
``TranscriptError``; an unrecognised one ``UnknownFormatError`` (both exit 3, with the reader's
reason and a hint). Inside a directory such files are skipped and reported to ``on_skip(SkippedFile)``
(path, reason, and whether it was bad input). A FIFO, socket or device is refused without being read.

One module per format (``claude_code``, ``codex``, ``mini_swe_agent``, ``openai_chat``,
``anthropic_messages``, ...), each with ``parse(data, path) -> Session``; the content sniffer of each
(``detect(head) -> bool``) is in its module for Claude Code and the two chat formats, in ``sniff``
for the others, whose modules ``reader`` imports only to read a file of theirs; ``reader``
registers them all; ``lines`` holds the shared JSON / line / warning helpers;
``claude_code.ClaudeCodeTail`` parses a growing Claude Code transcript incrementally (hooks);
``writers`` turns sessions back into provider message lists.
"""

from __future__ import annotations

from typing import Any

from ctxhealth.lazy import load_export

_EXPORTS = {
    "detect_format": "ctxhealth.sources.reader",
    "discover": "ctxhealth.sources.reader",
    "read_session": "ctxhealth.sources.reader",
    "read_sessions": "ctxhealth.sources.reader",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    # Lazy so that hooks importing one reader (e.g. claude_code.ClaudeCodeTail) load only that.
    return load_export(globals(), _EXPORTS, __name__, name)
