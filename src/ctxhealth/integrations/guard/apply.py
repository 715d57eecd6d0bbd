"""Carrying a decision out on one request, per mode: a note, a rewrite by the recovery code, a halt.

:func:`apply_decision` takes the conversation the model would get (``effective``: the request's items,
with a rewrite in force already in place) and the session's latest assessment, and returns an
:class:`Outcome`: the items to send instead (or None), the API-shaped error to answer with, and what
was done. Notes come once per episode (``GuardSession.noted``); recoveries are recorded in the
session's monitor and kept as the session's rewrite for the requests that follow.

A truncate, restart or compression decided for the context's size gives way to clearing stale tool
results when the clearing alone leaves the compact zone (every turn stays, so the agent does not redo
what it did); an agent that compacts itself gets clearing instead of them in any case.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from ctxhealth.integrations.guard.notes import halt_text, note_text
from ctxhealth.integrations.guard.session import GuardSession, Rewrite
from ctxhealth.integrations.wire.base import ApiError, ErrorKind, JSONDict, WireAdapter
from ctxhealth.model import Format, Message, Session
from ctxhealth.monitor import Assessment
from ctxhealth.policy import Action
from ctxhealth.policy.decision import Rule
from ctxhealth.recovery.clear import ClearConfig, ClearTrigger, TriggerKind, clear_tool_results
from ctxhealth.recovery.compress import compress_history
from ctxhealth.recovery.reanchor import reanchor
from ctxhealth.recovery.report import RecoveryReport
from ctxhealth.recovery.restart import restart
from ctxhealth.recovery.truncate import truncate


class Mode(StrEnum):
    OBSERVE = "observe"
    ADVISE = "advise"
    ENFORCE = "enforce"


class Applied(StrEnum):
    """How a decision reached the request."""

    NONE = "none"  # forwarded as the client sent it
    NOTE = "note"  # a note was added
    REWRITE = "rewrite"  # the conversation was rewritten by a recovery strategy
    HALT = "halt"  # answered with an error, no model called


RECOVERIES = frozenset({Action.CLEAR_TOOL_RESULTS, Action.COMPRESS_HISTORY, Action.TRUNCATE, Action.RESTART})
"""The actions carried out by rewriting the conversation with a recovery strategy."""

CLEAR_ON_DECISION = ClearConfig(trigger=ClearTrigger(TriggerKind.TOOL_USES, 0), keep_tool_uses=1)
"""Clearing when the policy decided it (the same mistake repeated): the decision is the trigger, and
every tool result but the latest is replaced by its placeholder (which keeps an error's signature
line), so the repeated error output goes and the latest error stays."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """``body``: the request body to send instead of the client's (None: unchanged)."""

    body: bytes | None = None
    error: ApiError | None = None
    applied: Applied = Applied.NONE
    report: RecoveryReport | None = None


def recover(action: Action, session: Session) -> tuple[Session, RecoveryReport]:
    """Carry out a recovery ``action`` (clear, compress, truncate, restart) on ``session``."""
    if action is Action.TRUNCATE:
        return truncate(session)
    if action is Action.RESTART:
        return restart(session)
    if action is Action.CLEAR_TOOL_RESULTS:
        return clear_tool_results(session, CLEAR_ON_DECISION)
    return compress_history(session)


def recovery_session(messages: list[Message], key: str) -> Session:
    """The conversation as a :class:`Session` for the recovery strategies."""
    return Session(path=f"guard:{key}", format=Format.ANTHROPIC_MESSAGES, messages=tuple(messages))


def dump_body(adapter: WireAdapter, body: JSONDict, items: list[Any]) -> bytes:
    return orjson.dumps(adapter.with_items(body, items))


def halt(adapter: WireAdapter, session: GuardSession, assessment: Assessment) -> Outcome:
    session.halted = True
    return Outcome(error=adapter.error(ErrorKind.HALT, halt_text(assessment)), applied=Applied.HALT)


def apply_decision(
    mode: Mode,
    adapter: WireAdapter,
    body: JSONDict,
    session: GuardSession,
    assessment: Assessment | None,
    effective: list[Any],
    rewrite_at: tuple[int, bytes] | None,
) -> Outcome:
    """Carry ``assessment``'s action out on the request (see the module docstring). ``rewrite_at`` is
    the request's length and chain value, for the rewrite a recovery leaves behind; None when the
    conversation lives at the provider (a Responses continuation), which cannot be rewritten."""
    action = assessment.action if assessment is not None else Action.CONTINUE
    if action is Action.CONTINUE or assessment is None or mode is Mode.OBSERVE:
        if action is Action.CONTINUE:
            session.noted = None
        return Outcome()
    if (
        mode is Mode.ENFORCE
        and action in SELF_COMPACTING_INSTEAD
        and (session.self_compacting or session.agent)
    ):
        return _clear_instead(adapter, body, session, effective, rewrite_at, action)
    if mode is Mode.ENFORCE and action is Action.HALT:
        return halt(adapter, session, assessment)
    enforce = mode is Mode.ENFORCE and rewrite_at is not None
    if enforce and action in CLEAR_FIRST and assessment.rule in SIZE_RULES:
        cleared = _clear_if_enough(adapter, body, session, effective, rewrite_at, assessment)
        if cleared is not None:
            return cleared
    if enforce and action in RECOVERIES:
        parsed = adapter.to_messages(body, effective, with_head=True)
        recovered, report = recover(action, recovery_session(parsed, session.key))
        items = adapter.write(list(recovered.messages), effective, [m for m in parsed if m.line])
        _keep_rewrite(session, rewrite_at, items)
        session.monitor.record_recovery(report.action, fill=report.tokens_after)
        session.noted = None
        return Outcome(dump_body(adapter, body, items), applied=Applied.REWRITE, report=report)
    if session.noted == action.value:
        return Outcome()  # this episode was noted already
    session.noted = action.value
    if enforce and action is Action.REANCHOR:
        parsed = adapter.to_messages(body, effective, with_head=True)
        _, report = reanchor(
            recovery_session(parsed, session.key),
            similarity=session.monitor.drift.similarity,
            tokens=assessment.fill,
        )
        items = adapter.add_note(effective, report.injected[0])
        _keep_rewrite(session, rewrite_at, items)
        session.monitor.record_recovery(Action.REANCHOR)
        return Outcome(dump_body(adapter, body, items), applied=Applied.REWRITE, report=report)
    if action is Action.COMPRESS_HISTORY:
        return Outcome()  # routine: advice about it is noise
    items = adapter.add_note(effective, note_text(action, assessment))
    return Outcome(dump_body(adapter, body, items), applied=Applied.NOTE)


SELF_COMPACTING_INSTEAD = frozenset({Action.RESTART, Action.TRUNCATE, Action.COMPRESS_HISTORY, Action.HALT})
"""The actions enforce does not carry out on an agent that compacts itself (Claude Code, Codex,
Gemini CLI): its own compaction keeps its history and state consistent, a restart or truncation
behind its back makes it redo work. Stale tool results are cleared instead."""
CLEAR_EVERY = 8
"""Items an agent's request must have gained since the latest clearing before the next one: a
clearing changes the cached prefix, so it is not repeated on every request."""


def _clear_instead(
    adapter: WireAdapter,
    body: JSONDict,
    session: GuardSession,
    effective: list[Any],
    rewrite_at: tuple[int, bytes] | None,
    action: Action,
) -> Outcome:
    """For a self-compacting agent: clear stale tool results (at most once per ``CLEAR_EVERY``
    new items), leave the rest, and the compaction, to the agent."""
    if rewrite_at is None or (session.cleared_at >= 0 and rewrite_at[0] - session.cleared_at < CLEAR_EVERY):
        return Outcome()
    clearing = _Clearing.of(adapter, body, session, effective)
    session.cleared_at = rewrite_at[0]
    if clearing.report.tokens_after >= clearing.report.tokens_before:
        return Outcome()  # nothing stale to clear
    return clearing.send(adapter, body, session, effective, rewrite_at, fill=clearing.report.tokens_after)


@dataclass(frozen=True, slots=True)
class _Clearing:
    """Stale tool results cleared from a request (not sent yet): the request as messages, the
    cleared session and its report."""

    parsed: list[Message]
    recovered: Session
    report: RecoveryReport

    @staticmethod
    def of(adapter: WireAdapter, body: JSONDict, session: GuardSession, effective: list[Any]) -> _Clearing:
        parsed = adapter.to_messages(body, effective, with_head=True)
        recovered, report = clear_tool_results(recovery_session(parsed, session.key), CLEAR_ON_DECISION)
        return _Clearing(parsed, recovered, report)

    def send(
        self,
        adapter: WireAdapter,
        body: JSONDict,
        session: GuardSession,
        effective: list[Any],
        rewrite_at: tuple[int, bytes] | None,
        *,
        fill: int,
    ) -> Outcome:
        """The cleared request as the one to send, kept as the session's rewrite and recorded in its
        monitor as a clearing that left ``fill``."""
        items = adapter.write(list(self.recovered.messages), effective, [m for m in self.parsed if m.line])
        _keep_rewrite(session, rewrite_at, items)
        session.monitor.record_recovery(Action.CLEAR_TOOL_RESULTS, fill=fill)
        session.noted = None
        return Outcome(dump_body(adapter, body, items), applied=Applied.REWRITE, report=self.report)


CLEAR_FIRST = frozenset({Action.TRUNCATE, Action.RESTART, Action.COMPRESS_HISTORY})
"""The recoveries that give way to clearing stale tool results when the clearing alone brings the
context out of the compact zone (for any client: it keeps every turn, so the agent sees what it did)."""
SIZE_RULES = frozenset({Rule.COMPACT_ZONE, Rule.HARD_LIMIT, Rule.REPEATED_TRUNCATION, Rule.TOO_MANY_TURNS})
"""The rules whose decision is about the context's size (a failure spiral's restart is not: clearing
does not end it)."""


def _clear_if_enough(
    adapter: WireAdapter,
    body: JSONDict,
    session: GuardSession,
    effective: list[Any],
    rewrite_at: tuple[int, bytes] | None,
    assessment: Assessment,
) -> Outcome | None:
    """Clear stale tool results instead of truncating or restarting, when the fill it leaves (the
    provider's figure less what the clearing removes) lies under the compact zone; else None (the
    decided recovery is carried out). Counted as a clearing, not as a truncation or a restart."""
    compact = session.monitor.pressure.thresholds.compact_zone
    clearing = _Clearing.of(adapter, body, session, effective)
    saved = clearing.report.tokens_before - clearing.report.tokens_after
    after = max(0, assessment.fill - saved)
    if saved <= 0 or after >= compact:
        return None
    outcome = clearing.send(adapter, body, session, effective, rewrite_at, fill=after)
    session.cleared_at = rewrite_at[0] if rewrite_at is not None else session.cleared_at
    return outcome


def _keep_rewrite(session: GuardSession, rewrite_at: tuple[int, bytes] | None, items: list[Any]) -> None:
    if rewrite_at is not None:
        session.rewrite = Rewrite(rewrite_at[0], rewrite_at[1], items)
