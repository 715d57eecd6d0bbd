"""One session analysed once, as typed records: what ``check --json --series``, the HTML report
and the fleet tables share.

:func:`analyse_session` accounts and assesses a session in one pass;
:class:`~ctxhealth.analysis.records.TurnRecord` is the Monitor's reading at each model response
(:mod:`ctxhealth.analysis.turns`), and the other records (tool calls, responses, costs, cache
breaks, the session) are the accounting's and the audit's figures, each field named as the fleet
column it fills. Single-session work lives here, below the batch layer (:mod:`ctxhealth.fleet`),
so a command that reads one session never imports the fleet.
"""

from __future__ import annotations

from ctxhealth.analysis.records import (
    CacheBreakRow,
    CostRow,
    ResponseRow,
    SessionRow,
    ToolCallRow,
    TurnRecord,
)
from ctxhealth.analysis.session import SessionAnalysis, SessionRows, TimelineEvent, analyse_session

__all__ = [
    "CacheBreakRow",
    "CostRow",
    "ResponseRow",
    "SessionAnalysis",
    "SessionRow",
    "SessionRows",
    "TimelineEvent",
    "ToolCallRow",
    "TurnRecord",
    "analyse_session",
]
