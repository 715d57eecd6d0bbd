"""Priority tiers of source files and the forms they are packed in.

* A — active files and files with uncommitted changes (in the git diff): full content.
* B — direct dependencies of A files, and files imported by more than 5 A files: full, trimmed to
  3K tokens when longer.
* C — files in the same directory (package) as an A file: signatures and docstrings only.
* other — everything else: taken only above 0.7 relevance while there are A files; when nothing is
  active, the ordinary 0.4 threshold applies (there is no A set to be relative to).

A and B files are packed whatever their relevance (the tier is the reason to include them); C and
other files must reach the threshold.

At most 15 B + C files when there are more than 200 candidates, else 25. Tests of A files are
packed only for debugging. Any file over 5K tokens is packed as signatures unless the budget
allows the whole file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum

from ctxhealth.pack.relevance import THRESHOLD, Scored

B_TRIM_TOKENS = 3_000
LARGE_FILE_TOKENS = 5_000
OTHER_MIN_SCORE = 0.7
IMPORTED_BY_MANY = 5
MANY_CANDIDATES = 200
CAP_MANY = 15
CAP_FEW = 25

_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec)/|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.\w+$|Tests?\.java$"
)


class Tier(StrEnum):
    A = "A"
    B = "B"
    C = "C"
    OTHER = "other"

    @property
    def rank(self) -> int:
        return _RANKS[self.value]


_RANKS = {"A": 0, "B": 1, "C": 2, "other": 3}


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def _stem(path: str) -> str:
    name = posixpath.basename(path).rsplit(".", 1)[0]
    return name.removeprefix("test_").removesuffix("_test").removesuffix(".test").removesuffix(".spec")


def tests_of(paths: Iterable[str], a_files: Iterable[str]) -> set[str]:
    """Test files whose name refers to an A file (``test_models.py`` for ``models.py``)."""
    stems = {_stem(a) for a in a_files if not is_test_path(a)}
    return {p for p in paths if is_test_path(p) and _stem(p) in stems}


def assign_tiers(
    paths: Iterable[str],
    a_files: Iterable[str],
    graph: Mapping[str, list[str]],
) -> dict[str, Tier]:
    """The tier of every path given the A files and the import graph."""
    a_set = set(a_files)
    if not a_set:  # no A file: no dependency of one, no package of one — every path is "other"
        return dict.fromkeys(paths, Tier.OTHER)
    direct: set[str] = set()
    imported_by: dict[str, int] = {}
    for a in sorted(a_set):
        for target in graph.get(a, []):
            direct.add(target)
            imported_by[target] = imported_by.get(target, 0) + 1
    packages = {posixpath.dirname(a) for a in a_set}
    tiers: dict[str, Tier] = {}
    for path in paths:
        if path in a_set:
            tiers[path] = Tier.A
        elif path in direct or imported_by.get(path, 0) > IMPORTED_BY_MANY:
            tiers[path] = Tier.B
        elif posixpath.dirname(path) in packages:
            tiers[path] = Tier.C
        else:
            tiers[path] = Tier.OTHER
    return tiers


def bc_cap(candidates: int) -> int:
    """How many B + C files may be packed for a repository with ``candidates`` candidate files."""
    return CAP_MANY if candidates > MANY_CANDIDATES else CAP_FEW


def rank_candidates(
    scored: list[Scored], tiers: dict[str, Tier], skip: dict[str, str], has_a: bool, n_candidates: int
) -> tuple[list[Scored], dict[str, str]]:
    """The candidates to pack in rank order (A first, then by score) and why the others are left out."""
    excluded = dict(skip)
    eligible: list[Scored] = []
    cap = bc_cap(n_candidates)
    bc = 0
    order = sorted(scored, key=lambda s: (tiers[s.path] is not Tier.A, -s.score, tiers[s.path].rank, s.path))
    for s in order:
        tier = tiers[s.path]
        if s.path in excluded:
            continue
        if tier is Tier.A:
            eligible.append(s)
            continue
        if s.score < THRESHOLD and tier is not Tier.B:
            excluded[s.path] = f"relevance {s.score:.2f} below the threshold {THRESHOLD}"
            continue
        if tier is Tier.OTHER and has_a and s.score <= OTHER_MIN_SCORE:
            excluded[s.path] = (
                f"unrelated to the active files and relevance {s.score:.2f} <= {OTHER_MIN_SCORE}"
            )
            continue
        if tier in (Tier.B, Tier.C):
            if bc >= cap:
                excluded[s.path] = f"B + C cap of {cap} files reached"
                continue
            bc += 1
        eligible.append(s)
    # A files (and B ones, their direct dependencies) are taken whatever their score; the rest must
    # reach the threshold. Within the ranking, A files come first.
    return eligible, excluded
