"""One session's ``check`` object with the Monitor's assessment: the call ``ctxhealth check --json`` makes
for each session (without ``--series``) and the MCP ``context_health`` tool makes for the agent's own, so
the two can never disagree. The dictionary itself is built by :mod:`ctxhealth.report.check_report`.
"""

from __future__ import annotations

from typing import Any

from ctxhealth.accounting.fill import account_session
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.failures import Verdicts
from ctxhealth.model import Session
from ctxhealth.monitor import Monitor
from ctxhealth.policy.profile import Profile
from ctxhealth.report.check_report import build_check_report

__all__ = ["check_session"]


def check_session(
    session: Session, *, registry: ModelRegistry, profile: Profile, model: str | None = None
) -> dict[str, Any]:
    """The ``check`` object of ``session`` with zone, pressure, risk, action, reasons and signals."""
    verdicts = Verdicts()  # each tool result judged once, by the accounting and the Monitor
    account = account_session(session, registry=registry, model=model, verdicts=verdicts)
    monitor = Monitor(profile=profile, registry=registry, info=account.model)
    monitor.judge_with(verdicts)
    fields = monitor.observe_session(session, account=account).check_fields()
    fields["risk_model"] = monitor.risk_model
    return build_check_report(session, account, fields)
