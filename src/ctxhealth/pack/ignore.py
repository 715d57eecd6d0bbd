"""``.gitignore`` matching for repositories that are not git checkouts.

Covers what ignore files commonly use: comments, blank lines, ``!`` negation (the last matching
pattern wins), a trailing ``/`` for directories only, patterns anchored to their file's directory
when they contain a ``/`` (other than a trailing one), ``*``, ``?``, ``[...]`` and ``**``. A
directory that is ignored hides everything below it, as in git.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IgnorePattern:
    base: str  # directory of the .gitignore, relative to the repository ("" for the root)
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    anchored: bool


def _translate(glob: str) -> str:
    """A regex for one gitignore glob (without anchors)."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 1
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse_patterns(base: str, text: str) -> list[IgnorePattern]:
    """The patterns of one ``.gitignore`` found in directory ``base``."""
    patterns: list[IgnorePattern] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        if line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        patterns.append(
            IgnorePattern(base, re.compile(_translate(line) + r"\Z"), negated, dir_only, anchored)
        )
    return patterns


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """The patterns in force in one directory (those of its own and its parents' ``.gitignore``)."""

    patterns: tuple[IgnorePattern, ...] = ()

    def with_file(self, base: str, text: str) -> IgnoreRules:
        return IgnoreRules((*self.patterns, *parse_patterns(base, text)))

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        """True when the last pattern that matches ``path`` (relative to the repository) ignores it."""
        result = False
        for pattern in self.patterns:
            if pattern.dir_only and not is_dir:
                continue
            if pattern.base:
                if not path.startswith(pattern.base + "/"):
                    continue
                rel = path[len(pattern.base) + 1 :]
            else:
                rel = path
            target = rel if pattern.anchored else rel.rsplit("/", 1)[-1]
            if pattern.regex.match(target):
                result = not pattern.negated
        return result
