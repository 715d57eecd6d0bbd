"""Candidate files of a repository: what git tracks (or a walk honouring ``.gitignore``) minus the blacklist.

The blacklist (the spec: lockfiles, minified bundles, compiled files; plus binary files and vendored
trees) is decided from the path alone here (:func:`blacklist_reason`); content checks (NUL bytes,
undecodable text, minified lines) happen when a file is read (:func:`content_reason`).
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

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


def blacklist_reason(path: str) -> str | None:
    """Why ``path`` is never a candidate (from its name alone), or None."""
    parts = path.split("/")
    if any(part in VENDORED_DIRS or part.endswith(".egg-info") for part in parts[:-1]):
        return "vendored or generated directory"
    name = parts[-1].lower()
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


def _walk_files(repo: Path) -> list[str]:
    """Files under ``repo``, honouring every ``.gitignore`` on the way down."""
    found: list[str] = []
    rules_of: dict[str, IgnoreRules] = {"": IgnoreRules()}
    top = str(repo)
    for root, dirs, files in os.walk(top):
        rel_root = root[len(top) :].strip(os.sep).replace(os.sep, "/")
        rules = rules_of.pop(rel_root, IgnoreRules())
        # a name in ``files`` first: most folders have none, and a Path per folder costs more than the walk
        gitignore = os.path.join(root, ".gitignore")
        if ".gitignore" in files and os.path.isfile(gitignore):
            with open(gitignore, encoding="utf-8", errors="replace") as handle:
                rules = rules.with_file(rel_root, handle.read())
        kept = []
        for d in sorted(dirs):
            rel = f"{rel_root}/{d}" if rel_root else d
            if os.path.islink(os.path.join(root, d)):
                found.append(rel)  # never descended; listed so a link leaving the repository is named
                continue
            if d in VENDORED_DIRS or rules.ignored(rel, is_dir=True):
                continue
            kept.append(d)
            rules_of[rel] = rules
        dirs[:] = kept
        for f in files:
            rel = f"{rel_root}/{f}" if rel_root else f
            if not rules.ignored(rel, is_dir=False):
                found.append(rel)
    return sorted(found)


def list_candidates(repo: Path) -> CandidateList:
    """The candidate files of ``repo`` (see the module docstring); raises when ``repo`` is no directory."""
    if not repo.is_dir():
        raise UsageError(f"{repo} is not a directory", hint="give the repository's root directory")
    tracked = _git_files(repo)
    source = "git" if tracked is not None else "walk"
    paths = tracked if tracked is not None else _walk_files(repo)
    kept: list[str] = []
    excluded: list[tuple[str, str]] = []
    top = str(repo)
    real_top = os.path.realpath(top)
    for path in paths:
        if not os.path.lexists(os.path.join(top, path)):
            continue  # tracked but deleted in the work tree
        reason = outside_reason(top, real_top, path) or blacklist_reason(path)
        if reason == "not a regular file (not read)" and os.path.isdir(os.path.join(top, path)):
            continue  # a submodule or a link to a folder of the repository: not a file
        if reason is None:
            kept.append(path)
        else:
            excluded.append((path, reason))
    return CandidateList(tuple(kept), source, tuple(excluded))
