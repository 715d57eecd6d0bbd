"""Which files a fleet run looks at, and the fingerprint that tells a changed file from an unchanged one.

Directories are walked as the readers walk them (sorted, recursively, not entering ``subagents``
or hidden folders; hidden files, such as a writer's temporary files, are left out too); files
named on the command line are taken as they are. A Claude Code
transcript's fingerprint covers its ``<session>/subagents/`` files too, so a sub-agent that wrote
more lines makes the session change. A folder of OpenHands completion calls (one file per model call)
is one entry, the folder, as the readers read it: one session; a new call changes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ctxhealth.errors import TranscriptError, UsageError
from ctxhealth.sources.reader import is_call_file


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A file to analyse: absolute path, total size and latest mtime (its own and its sub-agents');
    for a folder of OpenHands calls, the folder, with its call files as ``members``."""

    path: str
    size: int
    mtime_ns: int
    members: tuple[str, ...] = ()

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
        sub_size, sub_mtime = _size_and_mtime(sub.iterdir())
        size, mtime = size + sub_size, max(mtime, sub_mtime)
    return FileEntry(str(file.resolve()), size, mtime)


def _size_and_mtime(files: Iterable[Path]) -> tuple[int, int]:
    """Total bytes and latest modification time (ns) of ``files`` (those that can be read)."""
    size, mtime = 0, 0
    for file in files:
        try:
            st = file.stat()
        except OSError:
            continue
        size += st.st_size
        mtime = max(mtime, st.st_mtime_ns)
    return size, mtime


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
        for entry in _grouped(candidates) if root.is_dir() else map(_entry, candidates):
            if entry is not None:
                found.setdefault(entry.path, entry)
    return list(found.values())


def _grouped(files: Iterable[Path]) -> Iterator[FileEntry | None]:
    """Entries of a folder walk: one per file, but one per folder of OpenHands call files."""
    by_folder: dict[Path, list[Path]] = {}
    for file in files:
        by_folder.setdefault(file.parent, []).append(file)
    for folder, members in by_folder.items():
        calls = [f for f in members if f.name.endswith(".json")]
        if calls and is_call_file(calls[0]):
            yield _folder_entry(folder, calls)
            members = [f for f in members if not f.name.endswith(".json")]
        yield from map(_entry, members)


def _folder_entry(folder: Path, calls: list[Path]) -> FileEntry | None:
    size, mtime = _size_and_mtime(calls)
    resolved = tuple(str(c.resolve()) for c in calls)
    return FileEntry(str(folder.resolve()), size, mtime, resolved) if size else None
