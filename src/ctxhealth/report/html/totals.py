"""The audit's totals over the sessions of a report: cost ledger, cache hit rate and cache breaks.

The same figures ``ctxhealth audit --json`` prints in its totals document, counted by the audit's
own :class:`~ctxhealth.audit.CostLedger` (each response id once over all sessions, cost by model,
project, day and ISO week) from either input: the analysed sessions' priced responses, or the
fleet's ``responses`` rows read back as :class:`ResponseRecord`. Cache breaks are counted as the
audit counts them: every break by cause, but only the unexpected ones (not a compaction or clear)
in ``breaks`` and in what breaks cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from ctxhealth.analysis import SessionAnalysis
from ctxhealth.audit.cache import EXPECTED_CAUSES, BreakCause
from ctxhealth.audit.cost import CostLedger, Priced


@dataclass(frozen=True, slots=True)
class ResponseRecord:
    """A row of the fleet's ``responses`` table, as the cost ledger reads a priced response."""

    response_id: str | None
    line: int | None
    model: str | None
    time: datetime | None
    usd: float | None
    prompt_tokens: int
    cache_read_tokens: int


@dataclass(slots=True)
class AuditTotals:
    """Cost and prompt-cache totals over every session added, as the audit's totals document."""

    ledger: CostLedger = field(default_factory=CostLedger)
    breaks: int = 0
    breaks_by_cause: Counter[str] = field(default_factory=Counter)
    tokens_by_cause: Counter[str] = field(default_factory=Counter)
    usd_by_cause: dict[str, float] = field(default_factory=dict)
    usd_breaks: float = 0.0
    sessions: int = 0

    def add_session(
        self, path: str, responses: Iterable[Priced], breaks: Iterable[tuple[str, int, float | None]]
    ) -> None:
        """One session: its priced responses (in the audit's order) and its cache breaks as
        (cause, tokens lost, cost) each."""
        self.sessions += 1
        self.ledger.add(path, responses)
        for cause, tokens, usd in breaks:
            self.breaks_by_cause[cause] += 1
            self.tokens_by_cause[cause] += tokens
            self.usd_by_cause[cause] = self.usd_by_cause.get(cause, 0.0) + (usd or 0.0)
            if BreakCause(cause) not in EXPECTED_CAUSES:
                self.breaks += 1
                self.usd_breaks += usd or 0.0

    @property
    def hit_rate(self) -> float | None:
        return self.ledger.hit_rate


def totals_of(analyses: Iterable[SessionAnalysis], into: AuditTotals | None = None) -> AuditTotals:
    """Add each analysed session's audit (its priced responses and cache breaks) to ``into``."""
    totals = into if into is not None else AuditTotals()
    for a in analyses:
        breaks = [] if a.cache is None else [(str(b.cause), b.tokens, b.usd) for b in a.cache.breaks]
        totals.add_session(a.session.path, a.responses, breaks)
    return totals
