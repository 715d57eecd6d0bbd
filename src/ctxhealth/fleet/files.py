"""Which files a fleet run looks at, and the fingerprint that tells a changed file from an unchanged one.

Directories are walked as the readers walk them (sorted, recursively, not entering ``subagents``
or hidden folders; hidden files, such as a writer's temporary files, are left out too); files
named on the command line are taken as they are. A Claude Code
transcript's fingerprint covers its ``<session>/subagents/`` files too, so a sub-agent that wrote
more lines makes the session change.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxhealth.errors import TranscriptError, UsageError


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A file to analyse: absolute path, total size and latest mtime (its own and its sub-agents')."""

    path: str
    size: int
    mtime_ns: int

    @property
    def fingerprint(self) -> tuple[int, int]:
        return (self.size, self.mtime_ns)


def _walk(root: Path) -> Iterator[Path]:
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "subagents" and not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(current) / name


def _entry(file: Path) -> FileEntry | None:
    try:
        st = file.stat()
    except OSError:
        return None
    size, mtime = st.st_size, st.st_mtime_ns
    sub = file.with_name(file.name.removesuffix(".gz").removesuffix(".jsonl")) / "subagents"
    if sub.is_dir():
        for child in sub.iterdir():
            try:
                cst = child.stat()
            except OSError:
                continue
            size += cst.st_size
            mtime = max(mtime, cst.st_mtime_ns)
    return FileEntry(str(file.resolve()), size, mtime)


def discover(paths: Iterable[str | Path]) -> list[FileEntry]:
    """Every file under ``paths`` (files and directories), each once, in a stable order.

    Raises :class:`UsageError` for ``-`` (a fleet run reads files, not a stream) and
    :class:`TranscriptError` for a path that does not exist.
    """
    found: dict[str, FileEntry] = {}
    for item in paths:
        if str(item) == "-":
            raise UsageError(
                "fleet reads files and folders, not stdin", hint="pass the folder of transcripts"
            )
        root = Path(item)
        if root.is_dir():
            candidates: Iterable[Path] = _walk(root)
        elif root.exists():
            candidates = (root,)
        else:
            raise TranscriptError("no such file or directory", hint="check the path", path=str(root))
        for file in candidates:
            entry = _entry(file)
            if entry is not None:
                found.setdefault(entry.path, entry)
    return list(found.values())
