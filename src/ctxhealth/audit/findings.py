"""Findings and verdicts of the audit checks: what was found, where (file, line, response id), how bad.

A :class:`Finding` is one line a person can act on, with its evidence; a :class:`Verdict` is one
check's outcome over all findings (the worst severity among them, ``pass`` without any).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Check(StrEnum):
    """The checks ``ctxhealth audit --check`` can run."""

    USAGE = "usage"
    CACHE = "cache"
    COST = "cost"
    SCORES = "scores"
    GROUND_RULES = "ground-rules"
    INSTRUCTIONS = "instructions"


class Severity(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


_RANK = {Severity.PASS: 0, Severity.WARN: 1, Severity.FAIL: 2}


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a finding was seen: a file, its line (1-based) and the response id when there is one."""

    path: str
    line: int | None = None
    response_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where} ({self.response_id})" if self.response_id else where

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "response_id": self.response_id}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem a check found: a one-line reason with its evidence."""

    check: Check
    severity: Severity
    reason: str
    evidence: Evidence

    def render(self) -> str:
        """``path:line (response id): [check] severity: reason``."""
        return f"{self.evidence}: [{self.check}] {self.severity}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": str(self.check),
            "severity": str(self.severity),
            "reason": self.reason,
            "evidence": self.evidence.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """One check's outcome: the worst severity of its findings and a one-line reason."""

    check: Check
    status: Severity
    findings: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"status": str(self.status), "findings": self.findings, "reason": self.reason}


def worst(severities: Iterable[Severity]) -> Severity:
    """The most severe of ``severities`` (``pass`` for none)."""
    return max(severities, key=_RANK.__getitem__, default=Severity.PASS)


def verdict(check: Check, findings: Iterable[Finding], *, passed: str) -> Verdict:
    """The verdict of ``check`` from its findings; ``passed`` says why it passed when nothing was found."""
    own = [f for f in findings if f.check is check]
    status = worst(f.severity for f in own)
    if status is Severity.PASS:
        return Verdict(check, status, 0, passed)
    top = next(f for f in own if f.severity is status)
    more = f" (+{len(own) - 1} more)" if len(own) > 1 else ""
    return Verdict(check, status, len(own), top.reason + more)


def fails(status: Severity, fail_on: Severity) -> bool:
    """True when ``status`` is at least as severe as ``fail_on`` (``warn`` or ``fail``)."""
    return status is not Severity.PASS and _RANK[status] >= _RANK[fail_on]
