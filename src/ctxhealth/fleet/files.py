"""Which files a fleet run looks at: the one directory walk (:func:`ctxhealth.sources.discover`), by
resolved path, and the fingerprint that tells a changed file from an unchanged one.

A Claude Code transcript's fingerprint covers its ``<session>/subagents/`` files too (its
companions), so a sub-agent that wrote more lines makes the session change. A folder of OpenHands
completion calls (one file per model call) is one entry, the folder, with its call files as
``members``: one session; a new call changes it. ``check``, ``report`` and ``audit`` read the same
sources, so every command lists the same sessions for a folder.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ctxhealth.errors import UsageError
from ctxhealth.sources.reader import discover as discover_sources
from ctxhealth.sources.walk import Source

FileEntry = Source
"""A fleet entry is a discovered source (path, size, mtime, members, companions)."""


def discover(paths: Iterable[str | Path]) -> list[FileEntry]:
    """Every source under ``paths`` (files and directories), each once, in a stable order, by
    resolved path.

    Raises :class:`UsageError` for ``-`` (a fleet run reads files, not a stream) and
    :class:`TranscriptError` for a path that does not exist.
    """
    items = list(paths)
    if any(str(item) == "-" for item in items):
        raise UsageError("fleet reads files and folders, not stdin", hint="pass the folder of transcripts")
    return discover_sources(items, absolute=True)
