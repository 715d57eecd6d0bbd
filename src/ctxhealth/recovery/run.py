"""Run one strategy so that what it hands back is ready to send: within the usable window of the
session's model, and within the caller's budget when one is given.

The strategies themselves only honour an explicit budget. :func:`run_strategy` adds the window:
the limit is the smaller of the budget and the usable window, the one ``check`` and the policy use
(:func:`~ctxhealth.accounting.fill.session_model_info`: a window the log states is already usable).
Truncate and restart are run again under that limit when their plain output does not fit it;
re-anchor and clear cannot shrink a context, so an output over the limit is a
:class:`~ctxhealth.errors.UsageError` that says which strategy can. Sizes are ``o200k_base``
tokens, as in every recovery report.
"""

from __future__ import annotations

from dataclasses import replace

from ctxhealth.accounting.fill import session_model_info
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.errors import UsageError
from ctxhealth.model import Session
from ctxhealth.recovery.budget import DEFAULT_ENCODING
from ctxhealth.recovery.clear import clear_tool_results
from ctxhealth.recovery.reanchor import reanchor
from ctxhealth.recovery.report import RecoveryReport, Strategy
from ctxhealth.recovery.restart import restart
from ctxhealth.recovery.truncate import truncate


def usable_window(session: Session, registry: ModelRegistry | None = None, model: str | None = None) -> int:
    """The usable window of ``session``'s model (``model`` overrides it), as ``check`` and the
    policy see it (:func:`~ctxhealth.accounting.fill.session_model_info`)."""
    return session_model_info(session, registry, model).usable_window


def run_strategy(
    session: Session,
    strategy: Strategy,
    *,
    budget_tokens: int | None = None,
    window_tokens: int | None = None,
    encoding: str | None = DEFAULT_ENCODING,
) -> tuple[Session, RecoveryReport]:
    """Apply ``strategy`` so that the output fits ``min(budget_tokens, window_tokens)`` (either may be
    None); see the module docstring."""
    limits = [n for n in (budget_tokens, window_tokens) if n is not None]
    limit = min(limits) if limits else None
    if strategy in (Strategy.TRUNCATE, Strategy.RESTART):
        run = truncate if strategy is Strategy.TRUNCATE else restart
        out, report = run(session, budget_tokens=budget_tokens, encoding=encoding)
        if limit is not None and report.tokens_after > limit:
            out, report = run(session, budget_tokens=limit, encoding=encoding)
            report = replace(
                report, notes=(*report.notes, f"fitted to the usable window of {limit:,} tokens")
            )
        return out, report
    if strategy is Strategy.REANCHOR:
        out, report = reanchor(session, encoding=encoding)
    elif strategy is Strategy.CLEAR:
        out, report = clear_tool_results(session, encoding=encoding)
    else:
        raise UsageError(f"unknown strategy {strategy}", hint="use truncate, restart, reanchor or clear")
    if limit is not None and report.tokens_after > limit:
        what = "the budget" if limit == budget_tokens else "the usable window"
        raise UsageError(
            f"{strategy} keeps {report.tokens_after:,} tokens, over {what} of {limit:,}",
            hint="use --strategy truncate or restart to fit it",
        )
    return out, report
