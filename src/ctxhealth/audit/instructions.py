"""The instructions check: agent instruction files of a sane size, and what they cost per request.

Instruction files are sent with every request, so each line is paid for again and again.
``CLAUDE.md``, ``CLAUDE.local.md`` and ``AGENTS.md`` should stay under 150 lines; rules files
(``.claude/rules/``, ``.cursor/rules/``, ``.cursorrules``, ``.windsurfrules``,
``.github/copilot-instructions.md``) under 100. Token counts are estimates (about 4 characters a
token); the cost per session multiplies by the mean number of requests of the audited sessions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxhealth.accounting.tokens import estimate_tokens
from ctxhealth.audit.findings import Check, Evidence, Finding, Severity

MAIN_FILES = frozenset({"CLAUDE.md", "CLAUDE.local.md", "AGENTS.md"})
MAIN_MAX_LINES = 150
RULES_MAX_LINES = 100
_RULE_FILES = frozenset({".cursorrules", ".windsurfrules", "copilot-instructions.md"})
_RULE_DIRS = ((".claude", "rules"), (".cursor", "rules"))
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache"})


@dataclass(frozen=True, slots=True)
class InstructionFile:
    path: str
    kind: str
    lines: int
    tokens: int
    max_lines: int

    def to_dict(self, requests_per_session: float | None) -> dict[str, Any]:
        per_session = None if requests_per_session is None else round(self.tokens * requests_per_session)
        return {
            "path": self.path,
            "kind": self.kind,
            "lines": self.lines,
            "max_lines": self.max_lines,
            "tokens_per_request": self.tokens,
            "tokens_per_session": per_session,
            "tokens_source": "estimated",
        }


def _kind(path: Path) -> str | None:
    if path.name in MAIN_FILES:
        return "main"
    if path.name in _RULE_FILES:
        return "rules"
    parts = path.parts
    for top, sub in _RULE_DIRS:
        for i in range(len(parts) - 2):
            if parts[i] == top and parts[i + 1] == sub and path.suffix in (".md", ".mdc", ".txt"):
                return "rules"
    return None


def find_instruction_files(roots: Iterable[Path]) -> Iterator[Path]:
    """Instruction files in or under ``roots`` (directories walked, files taken when they qualify)."""
    for root in roots:
        if root.is_file():
            if _kind(root) is not None:
                yield root
            continue
        if not root.is_dir():
            continue
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            for name in sorted(names):
                path = Path(folder) / name
                if _kind(path) is not None:
                    yield path


def read_instruction_file(path: Path) -> InstructionFile | None:
    kind = _kind(path)
    if kind is None:
        return None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    limit = MAIN_MAX_LINES if kind == "main" else RULES_MAX_LINES
    return InstructionFile(str(path), kind, len(text.splitlines()), estimate_tokens(text), limit)


def instruction_findings(files: Iterable[InstructionFile]) -> list[Finding]:
    """A failing finding per file at or over its line limit."""
    return [
        Finding(
            Check.INSTRUCTIONS,
            Severity.FAIL,
            f"{f.lines} lines (limit < {f.max_lines}); ~{f.tokens:,} tokens sent with every request",
            Evidence(f.path),
        )
        for f in files
        if f.lines >= f.max_lines
    ]
