"""Edit recency from git: uncommitted changes and the last commits that touched each file.

A file changed in the working tree or the index (``git status``) scores 1.0; one touched by the
k-th most recent of the last 50 commits (k from 0) scores ``0.5 ** (k / 5)``; files in no recent
commit score 0. Outside a git checkout there is no history and the term is absent (None).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HISTORY_COMMITS = 50
HALF_LIFE_COMMITS = 5.0
"""Recency stands for "the work in progress": it fades over a handful of commits, so that a long
run of commits on one area does not outweigh the task's own words for weeks."""


@dataclass(frozen=True, slots=True)
class EditHistory:
    """Recency per path (0..1) and the paths with uncommitted changes (the git diff)."""

    scores: dict[str, float]
    changed: frozenset[str]


def _git(repo: Path, *args: str) -> str | None:
    import subprocess  # only in a git checkout (a warm pack of another tree never needs it)

    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "surrogateescape") if done.returncode == 0 else None


def read_edit_history(repo: Path) -> EditHistory | None:
    """The edit history of ``repo``, or None when it is not a git checkout (or git is missing)."""
    if not (repo / ".git").exists():
        return None
    log = _git(repo, "log", f"-n{HISTORY_COMMITS}", "--name-only", "--format=%x00", "--no-renames")
    status = _git(repo, "status", "--porcelain", "-z", "--untracked-files=no")
    if log is None or status is None:
        return None
    scores: dict[str, float] = {}
    for rank, commit in enumerate(c for c in log.split("\0") if c.strip()):
        for name in commit.split("\n"):
            name = name.strip()
            if name and name not in scores:
                scores[name] = 0.5 ** (rank / HALF_LIFE_COMMITS)
    changed: set[str] = set()
    entries = status.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        if len(entry) > 3:
            changed.add(entry[3:])
            if entry[0] in "RC":  # a rename is followed by its source path
                i += 1
        i += 1
    for name in changed:
        scores[name] = 1.0
    return EditHistory(scores, frozenset(changed))
