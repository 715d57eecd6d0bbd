"""The one directory walk: which files under a path are sources to read, and how a format groups them.

Every command that takes folders (``check``, ``report``, ``audit``, ``fleet``, ``insights``) and the
readers list files through :func:`walk`, so they agree on what a folder holds:

* folders are searched recursively in sorted order; hidden folders and hidden files (a writer's
  temporary ``.partial.jsonl``, ``.DS_Store``) are left out;
* each format's reader may register :class:`WalkHooks` (the way the built-in readers register
  themselves in :data:`ctxhealth.sources.reader.READERS`, a third-party reader would too):
  ``companions`` names the files read *with* a file (Claude Code's ``<session>/subagents/``),
  ``is_companion_dir`` the folders the walk does not enter for that reason, and ``group`` the files
  of one folder that are read together as *one* source (OpenHands: one file per model call).

This module knows no format; it takes the hooks. :func:`ctxhealth.sources.discover` is the walk with
the built-in readers' hooks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import msgspec


class WalkHooks(msgspec.Struct, frozen=True):
    """How one format changes the walk (every field optional)."""

    companions: Callable[[Path], list[Path]] | None = None
    """The files read together with ``file`` (listed as its companions, never on their own)."""
    is_companion_dir: Callable[[str], bool] | None = None
    """Folders (by name) that hold companion files: not entered."""
    group: Callable[[Path, Sequence[Path]], list[Path]] | None = None
    """Of a folder's files, those read together as one source (none: no group here)."""


class Source(msgspec.Struct, frozen=True):
    """One thing to read: a file, or (``members`` set) a folder whose member files are one session.

    ``companions`` are files read along with it (a Claude Code session's sub-agent files). ``size``
    and ``mtime_ns`` cover the file, its companions and members: a fingerprint that changes when any
    of them does.
    """

    path: str
    size: int
    mtime_ns: int
    members: tuple[str, ...] = ()
    companions: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> tuple[int, int]:
        return (self.size, self.mtime_ns)

    @property
    def grouped(self) -> bool:
        return bool(self.members)


def is_hidden(name: str) -> bool:
    """A hidden file or folder (left out of every walk)."""
    return name.startswith(".")


def _files(root: Path, hooks: Sequence[WalkHooks]) -> Iterator[tuple[str, list[str]]]:
    """(folder, the names of its visible files sorted) for every folder under ``root``, in sorted
    order (names: the caller joins each to its folder once, where ``os.walk``'s folder would
    otherwise be made a path object twice per file)."""
    skips = [h.is_companion_dir for h in hooks if h.is_companion_dir is not None]
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not is_hidden(d) and not any(skip(d) for skip in skips))
        yield current, sorted(n for n in files if not is_hidden(n))


def _stat(files: Iterable[str | Path]) -> tuple[int, int, bool]:
    """Total bytes, latest mtime (ns), and whether any of ``files`` could be stat'ed."""
    size, mtime, seen = 0, 0, False
    for file in files:
        try:
            st = os.stat(file)
        except OSError:
            continue
        size, mtime, seen = size + st.st_size, max(mtime, st.st_mtime_ns), True
    return size, mtime, seen


def resolver() -> Callable[[Path], str]:
    """``str(path.resolve())``, each folder resolved once: a path whose last part is not a symbolic
    link resolves to its resolved folder joined with its name (the walk's folders hold many files,
    and resolving each file's path again looks up every folder above it). The folders are kept by
    their text, and the name joined to the resolved folder's text (a path object per file, made
    and printed again, cost more than the lookup)."""
    folders: dict[str, str] = {}

    def resolve(path: Path) -> str:
        text = os.fspath(path)
        name = os.path.basename(text)
        if name in ("", ".", "..") or os.path.islink(text):
            return str(Path(text).resolve())
        parent = os.path.dirname(text) or "."  # as Path.parent: "." for a bare name
        folder = folders.get(parent)
        if folder is None:
            folder = folders[parent] = str(Path(parent).resolve())
        return os.path.join(folder, name)

    return resolve


def file_source(
    file: Path,
    hooks: Sequence[WalkHooks],
    *,
    absolute: bool = False,
    resolve: Callable[[Path], str] | None = None,
) -> Source:
    """The source of one file (named on the command line, or found by the walk), with its companions.

    ``absolute`` names them by resolved path, through ``resolve`` (a :func:`resolver`) when given.
    """
    companions: list[Path] = []
    for hook in hooks:
        if hook.companions is not None:
            companions.extend(hook.companions(file))
    size, mtime, _ = _stat([file, *companions])
    name = (resolve or resolver()) if absolute else str
    return Source(name(file), size, mtime, companions=tuple(map(name, companions)))


def walk(root: Path, hooks: Sequence[WalkHooks], *, absolute: bool = False) -> Iterator[Source]:
    """Every source under the folder ``root``: per folder, its groups first, then its other files.

    ``absolute`` names them by resolved path (the fleet tables' keys); else as found under ``root``.
    """
    name = resolver() if absolute else str
    groups = [h.group for h in hooks if h.group is not None]
    for current, names in _files(root, hooks):
        folder = Path(current)
        rest = [folder / n for n in names]
        for group in groups:
            if not rest:
                break
            members = group(folder, rest)
            if not members:
                continue
            size, mtime, seen = _stat(members)
            if seen:
                yield Source(name(folder), size, mtime, members=tuple(name(m) for m in members))
            taken = set(members)
            rest = [f for f in rest if f not in taken]
        for file in rest:
            yield file_source(file, hooks, absolute=absolute, resolve=name)
