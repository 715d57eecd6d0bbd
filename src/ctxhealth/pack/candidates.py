"""Candidate files of a repository: what git tracks (or a walk honouring ``.gitignore``) minus the blacklist.

The blacklist (the spec: lockfiles, minified bundles, compiled files; plus binary files and vendored
trees) is decided from the path alone here (:func:`blacklist_reason`); content checks (NUL bytes,
undecodable text, minified lines) happen when a file is read (:func:`content_reason`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ctxhealth.errors import UsageError
from ctxhealth.pack.ignore import IgnoreRules

LOCKFILES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "poetry.lock",
        "pipfile.lock",
        "uv.lock",
        "cargo.lock",
        "gemfile.lock",
        "composer.lock",
        "go.sum",
        "pdm.lock",
        "flake.lock",
        "mix.lock",
        "podfile.lock",
        "packages.lock.json",
    }
)
COMPILED_SUFFIXES = frozenset(
    {
        ".pyc",
        ".pyo",
        ".class",
        ".o",
        ".obj",
        ".so",
        ".dll",
        ".dylib",
        ".a",
        ".lib",
        ".exe",
        ".wasm",
        ".mo",
        ".jar",
        ".war",
        ".whl",
        ".egg",
    }
)
BINARY_SUFFIXES = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".webp",
        ".tif",
        ".tiff",
        ".pdf",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".rar",
        ".tar",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".mov",
        ".avi",
        ".sqlite",
        ".db",
        ".bin",
        ".dat",
        ".pkl",
        ".npy",
        ".npz",
        ".parquet",
        ".dbf",
        ".shp",
        ".shx",
        ".prj",
        ".gpkg",
        ".psd",
        ".xcf",
        ".icns",
    }
)
MINIFIED_MARKERS = (".min.js", ".min.css", ".min.mjs", "-min.js", ".bundle.js", ".map")
VENDORED_DIRS = frozenset(
    {
        "node_modules",
        "vendor",
        "vendored",
        "third_party",
        "third-party",
        "bower_components",
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "dist",
        "build",
        "target",
        ".next",
        ".eggs",
        "site-packages",
    }
)
MINIFIED_LINE_CHARS = 1_000
"""A text file whose average line is longer than this is treated as minified or generated."""
MAX_FILE_BYTES = 2_000_000
"""Files larger than this are data, not source: not candidates."""


@dataclass(frozen=True, slots=True)
class CandidateList:
    """Relative POSIX paths of the candidates, sorted, and how they were found."""

    paths: tuple[str, ...]
    source: str  # "git" or "walk"
    excluded: tuple[tuple[str, str], ...]  # (path, reason) for blacklisted paths
    stats: Mapping[str, os.stat_result] = field(default_factory=dict, compare=False)
    """What the listing's ``lstat`` found for a candidate that is no link (its ``stat`` too)."""
    remembered: bool = field(default=False, compare=False)
    """Whether the listing came from the memo of an earlier walk (see :func:`list_candidates`)."""


def _vendored(folder: str) -> bool:
    return any(part in VENDORED_DIRS or part.endswith(".egg-info") for part in folder.split("/"))


def blacklist_reason(path: str, _folders: dict[str, bool] | None = None) -> str | None:
    """Why ``path`` is never a candidate (from its name alone), or None (``_folders``: a memo of the
    folders' answers, for a caller that asks about every file of a tree)."""
    folder, _, name = path.rpartition("/")
    if folder:
        vendored = _folders.get(folder) if _folders is not None else None
        if vendored is None:
            vendored = _vendored(folder)
            if _folders is not None:
                _folders[folder] = vendored
        if vendored:
            return "vendored or generated directory"
    name = name.lower()
    if name in LOCKFILES:
        return "lockfile"
    if name.endswith(MINIFIED_MARKERS):
        return "minified bundle"
    dot = name.rfind(".")
    suffix = name[dot:] if dot > 0 else ""
    if suffix in COMPILED_SUFFIXES:
        return "compiled file"
    if suffix in BINARY_SUFFIXES:
        return "binary file"
    return None


def content_reason(data: bytes) -> str | None:
    """Why file content disqualifies it (binary, too large, minified), or None."""
    if len(data) > MAX_FILE_BYTES:
        return "larger than 2 MB"
    if b"\x00" in data[:8192]:
        return "binary file"
    lines = data.count(b"\n") + 1
    if len(data) > 4 * MINIFIED_LINE_CHARS and len(data) / lines > MINIFIED_LINE_CHARS:
        return "minified or generated (very long lines)"
    return None


def outside_reason(top: str, real_top: str, path: str) -> str | None:
    """Why ``path`` (relative to the repository ``top``, whose resolved form is ``real_top``) must
    not be read, or None: a link (or a link among its folders) that resolves outside the
    repository, or something that is not a regular file (a FIFO, a device, a socket, a folder)."""
    full = os.path.join(top, path)
    real = os.path.realpath(full)
    if real != real_top and not real.startswith(real_top.rstrip(os.sep) + os.sep):
        return "link leaving the repository (not read)"
    try:
        status = os.stat(real)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if not stat.S_ISREG(status.st_mode):
        return "not a regular file (not read)"
    return None


def open_inside(top: str, real_top: str, path: str, limit: int) -> bytes:
    """The bytes of ``path`` inside the repository, at most ``limit + 1`` of them (the caller tells
    a file over ``limit`` by its length). Raises OSError for a link leaving the repository or a
    file that is not regular, checked on the open file itself (a file swapped after it was listed
    is caught too); the open never blocks on a FIFO."""
    reason = outside_reason(top, real_top, path)
    if reason is not None:
        raise OSError(errno.EPERM, reason, path)
    real = os.path.realpath(os.path.join(top, path))
    fd = os.open(
        real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EPERM, "not a regular file (not read)", path)
        return handle.read(limit + 1)


def _git_files(repo: Path) -> list[str] | None:
    """Files git tracks in ``repo`` (plus untracked, not ignored), or None when it is not a checkout."""
    if not (repo / ".git").exists():
        return None
    import subprocess  # only in a git checkout

    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    names = {n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n}
    return sorted(names)


def _times(status: os.stat_result) -> list[int]:
    return [status.st_mtime_ns, status.st_ctime_ns]


def _walk_files(repo: Path, seen: dict[str, list[int]] | None = None) -> list[str]:
    """Files under ``repo``, honouring every ``.gitignore`` on the way down (what ``os.walk`` lists,
    from one ``scandir`` a folder: a link to a folder is listed, never descended).

    ``seen`` gets what the answer depends on, each taken before it is read: every folder descended
    (``d:<folder>`` -> its modification and change times) and every ``.gitignore`` read
    (``i:<file>`` -> its size and both times)."""
    found: list[str] = []
    top = str(repo)
    pending: list[tuple[str, IgnoreRules]] = [("", IgnoreRules())]
    if seen is not None:
        seen["d:"] = _times(os.stat(top))
    while pending:
        rel_root, rules = pending.pop()
        root = os.path.join(top, rel_root) if rel_root else top
        try:
            with os.scandir(root) as listing:
                entries = list(listing)
        except OSError:
            continue  # unreadable folder: skipped, as os.walk does
        dirs: list[os.DirEntry[str]] = []
        files: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                dirs.append(entry)
            else:
                files.append(entry.name)
        # a name in ``files`` first: most folders have none
        if ".gitignore" in files:
            gitignore = os.path.join(root, ".gitignore")
            if os.path.isfile(gitignore):
                if seen is not None:
                    status = os.stat(gitignore)
                    seen[f"i:{rel_root}/.gitignore" if rel_root else "i:.gitignore"] = [
                        status.st_size,
                        *_times(status),
                    ]
                with open(gitignore, encoding="utf-8", errors="replace") as handle:
                    rules = rules.with_file(rel_root, handle.read())
        base = f"{rel_root}/" if rel_root else ""
        for d in dirs:
            rel = base + d.name
            if d.is_symlink():
                found.append(rel)  # never descended; listed so a link leaving the repository is named
                continue
            if d.name in VENDORED_DIRS or rules.ignored(rel, is_dir=True):
                continue
            if seen is not None:
                seen[f"d:{rel}"] = _times(d.stat(follow_symlinks=False))
            pending.append((rel, rules))
        for f in files:
            rel = base + f
            if not rules.ignored(rel, is_dir=False):
                found.append(rel)
    return sorted(found)


def _prefix(folder: str) -> str:
    return folder if folder.endswith(os.sep) else folder + os.sep


class _Resolver:
    """Where each listed path really is, at one ``lstat`` a file: the real path of every folder is
    cached (a folder that is not a link is its parent's real path plus its name), and only a path that
    is itself a link is resolved in full by :func:`outside_reason`. The answers are
    :func:`outside_reason`'s, which a test checks on a tree of links."""

    __slots__ = ("_dirs", "_inside", "_prefix", "_real_prefix", "real_top", "stats", "top")

    def __init__(self, top: str) -> None:
        self.top = top
        self.real_top = os.path.realpath(top)
        self._dirs: dict[str, str] = {"": self.real_top}
        self._prefix = _prefix(top)  # ``os.path.join(top, rel)`` for a relative ``rel``, without its cost
        self._real_prefix = _prefix(self.real_top)
        self._inside = self.real_top.rstrip(os.sep) + os.sep
        self.stats: dict[str, os.stat_result] = {}

    def real_dir(self, rel: str) -> str:
        found = self._dirs.get(rel)
        if found is None:
            parent, _, name = rel.rpartition("/")
            full = self._prefix + rel
            if os.path.islink(full):
                found = os.path.realpath(full)
            else:
                found = (self._real_prefix + name) if not parent else _prefix(self.real_dir(parent)) + name
            self._dirs[rel] = found
        return found

    def reason(self, path: str) -> str | Literal[False] | None:
        """False when nothing is there (``lexists`` is false), else :func:`outside_reason`'s answer."""
        try:
            status = os.lstat(self._prefix + path)
        except (OSError, ValueError):
            return False
        if stat.S_ISLNK(status.st_mode):
            return outside_reason(self.top, self.real_top, path)
        parent, _, name = path.rpartition("/")
        real = (self._real_prefix + name) if not parent else _prefix(self.real_dir(parent)) + name
        if real != self.real_top and not real.startswith(self._inside):
            return "link leaving the repository (not read)"
        if not stat.S_ISREG(status.st_mode):
            return "not a regular file (not read)"
        self.stats[path] = status
        return None


def list_candidates(repo: Path, memo: Path | None = None) -> CandidateList:
    """The candidate files of ``repo`` (see the module docstring); raises when ``repo`` is no directory.

    With ``memo`` (a file), a walked listing is remembered there and reused while nothing it
    depends on changed (see :func:`_remembered`)."""
    if not repo.is_dir():
        raise UsageError(f"{repo} is not a directory", hint="give the repository's root directory")
    tracked = _git_files(repo)
    if tracked is None and memo is not None:
        found = _remembered(repo, memo)
        if found is not None:
            return found
    source = "git" if tracked is not None else "walk"
    seen: dict[str, list[int]] | None = {} if tracked is None and memo is not None else None
    started = time.time_ns()
    paths = tracked if tracked is not None else _walk_files(repo, seen)
    kept: list[str] = []
    excluded: list[tuple[str, str]] = []
    top = str(repo)
    resolver = _Resolver(top)
    folders: dict[str, bool] = {}
    for path in paths:
        where = resolver.reason(path)
        if where is False:
            continue  # tracked but deleted in the work tree
        reason = where if where is not None else blacklist_reason(path, folders)
        if reason == "not a regular file (not read)" and os.path.isdir(os.path.join(top, path)):
            continue  # a submodule or a link to a folder of the repository: not a file
        if reason is None:
            kept.append(path)
        else:
            excluded.append((path, reason))
    found = CandidateList(tuple(kept), source, tuple(excluded), resolver.stats)
    if seen is not None and memo is not None:
        _remember(memo, resolver.real_top, seen, started, paths, found)
    return found


LISTING_SCHEMA = 1
RACY_NS = 2_000_000_000
"""A folder or ``.gitignore`` changed less than this long before a walk began is not trusted to
show its next change in its times (file systems keep them in coarse ticks): such a listing is
not remembered."""


def _rules_key() -> str:
    """What the listing's rules are in this version (a memo written under other rules is stale)."""
    import hashlib

    parts = [sorted(s) for s in (VENDORED_DIRS, LOCKFILES, COMPILED_SUFFIXES, BINARY_SUFFIXES)]
    raw = repr((LISTING_SCHEMA, parts, MINIFIED_MARKERS, MAX_FILE_BYTES)).encode()
    return hashlib.blake2b(raw, digest_size=8).hexdigest()


def _remember(
    memo: Path,
    real_top: str,
    seen: dict[str, list[int]],
    started: int,
    walked: list[str],
    found: CandidateList,
) -> None:
    """Write a walked listing (atomically) when it can be trusted again: no link, FIFO or other
    irregular path in it (those are resolved on every run) and nothing it depends on changed too
    recently (:data:`RACY_NS`)."""
    if len(found.stats) != len(walked):
        return
    limit = started - RACY_NS
    if any(times[-1] >= limit or times[-2] >= limit for times in seen.values()):
        return
    import orjson

    from ctxhealth.atomic import write_atomic

    doc = {
        "schema": LISTING_SCHEMA,
        "rules": _rules_key(),
        "real_top": real_top,
        "seen": seen,
        "kept": found.paths,
        "excluded": found.excluded,
    }
    with contextlib.suppress(OSError):  # a cache only: the next run walks again
        write_atomic(memo, orjson.dumps(doc))


def _remembered(repo: Path, memo: Path) -> CandidateList | None:
    """The remembered listing of ``repo`` when every folder and ``.gitignore`` it depends on has the
    same times (and size) as when it was walked — adding, removing or renaming a file changes its
    folder's, a change to a ``.gitignore`` its own — and every kept path is still a regular file
    (each is ``lstat``-ed: the index needs that anyway). Else None (walk again)."""
    import orjson

    try:
        doc = orjson.loads(memo.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    top = str(repo)
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != LISTING_SCHEMA
        or doc.get("rules") != _rules_key()
        or doc.get("real_top") != os.path.realpath(top)
        or not isinstance(doc.get("seen"), dict)
        or not isinstance(doc.get("kept"), list)
        or not isinstance(doc.get("excluded"), list)
    ):
        return None
    prefix = _prefix(top)
    try:
        for key, times in doc["seen"].items():
            kind, rel = key[:2], key[2:]
            if kind == "d:":
                status = os.lstat(prefix + rel) if rel else os.stat(top)
                if not stat.S_ISDIR(status.st_mode) or _times(status) != times:
                    return None
            elif kind == "i:":
                status = os.stat(prefix + rel)
                if [status.st_size, *_times(status)] != times:
                    return None
            else:
                return None
        stats: dict[str, os.stat_result] = {}
        for path in doc["kept"]:
            status = os.lstat(prefix + path)
            if not stat.S_ISREG(status.st_mode):
                return None
            stats[path] = status
        excluded = tuple((str(path), str(reason)) for path, reason in doc["excluded"])
    except (OSError, TypeError, ValueError):
        return None
    return CandidateList(tuple(stats), "walk", excluded, stats, remembered=True)
