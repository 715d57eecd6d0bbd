"""The real :class:`~ctxhealth.monitor.Monitor` for a Claude Code session, carried between processes.

Each hook is a new process, so the monitor travels in the session's tail state
(``SessionCounters.monitor``, a :meth:`Monitor.snapshot`): a hook restores it, observes only the
messages the transcript gained since the last read, and saves it again. The counters' fill, its
source and the peak are the monitor's (its fill account), so the hooks, the status line and
``check`` show the same fill. The last assessment is kept in the counters as plain data
(``SessionCounters.assessment``, with the monitor's tool counts: :func:`tool_counts`) for the
handlers, the status line and the ledger, so reading the verdict never needs the monitor itself.
:func:`assess_call` assesses a tool call a hook payload states before the transcript holds it,
without changing the saved snapshot.

Claude Code manages its own history: each compaction in the transcript is recorded as a truncation
(:meth:`Monitor.record_recovery`), and the policy's turn-count trigger (history compression after
``max_turns`` turns) is off, since Claude Code compacts by itself when it needs to.

The snapshot keeps excerpts of the conversation (the instruction, the last characters of output, the
failure detector's "same mistake" signatures), so the monitor is fed the messages with secrets in
every block redacted first (:func:`ctxhealth.redact.redact_message`): redacting after a signature
masked its digits would miss the key.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

from msgspec.structs import replace

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.accounting.types import ModelInfo
from ctxhealth.errors import StateError
from ctxhealth.integrations.claude_code.tailstate import SessionCounters
from ctxhealth.model import Format, Message, Role, ToolCall, ToolResult
from ctxhealth.monitor import Assessment, Monitor
from ctxhealth.policy import Action
from ctxhealth.policy.profile import Profile, default_profile
from ctxhealth.redact import redact_message

__all__ = [
    "NO_TURN_LIMIT",
    "assess_call",
    "claude_code_profile",
    "observe_messages",
    "redacted",
    "session_info",
    "summarise",
    "tool_counts",
]

NO_TURN_LIMIT = 2**31 - 1
"""``max_turns`` for Claude Code sessions: the host compacts by itself, so no turn-count trigger."""


def claude_code_profile(profile: Profile | None = None) -> Profile:
    """``profile`` (default: the shipped one) as the hooks use it: no turn-count trigger."""
    return replace(profile if profile is not None else default_profile(), max_turns=NO_TURN_LIMIT)


def _monitor(
    counters: SessionCounters,
    profile: Profile,
    registry: ModelRegistry | None,
    source_format: Format = Format.CLAUDE_CODE,
) -> Monitor:
    """The session's monitor as ``counters.monitor`` holds it: the live one that snapshot was just
    taken of in this thread when there is one (it is handed out once: whoever takes it changes it),
    else restored from the snapshot, else a new one; with the window stated for the session (the
    status line's, or the agent's log's) as its model's window."""
    kept: tuple[Any, Monitor] | None = getattr(_KEPT, "last", None)
    monitor = None
    if counters.monitor is not None and kept is not None and kept[0] is counters.monitor:
        _KEPT.last = None
        monitor = kept[1]
    elif counters.monitor is not None:
        # from another version, or damaged: start afresh from here
        with contextlib.suppress(StateError):
            monitor = Monitor.restore(counters.monitor, profile=profile, registry=registry)
    if monitor is None:
        monitor = Monitor(counters.model, profile, registry=registry, source_format=source_format)
    # a snapshot keeps the model's id, not the window stated for the session: it is given again
    thresholds = counters.thresholds or {}
    stated = stated_window(thresholds.get("stated_window"))
    logged = stated_window(thresholds.get("log_window"))
    if stated or (logged and counters.model):
        # one ModelInfo per session: the window the host stated (status line) or else the one the
        # agent's log states (a Codex rollout, as check reads it), for pressure and zones
        info = session_info(counters.model, stated, registry or ModelRegistry.default(), log_window=logged)
        if info.window != monitor.info.window:
            monitor.set_info(info)
    return monitor


def stated_window(value: Any) -> int | None:
    """A window kept in the tail state (``stated_window``, ``log_window``), when it is one."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def session_info(
    model: str | None,
    window: int | None,
    registry: ModelRegistry,
    *,
    log_window: int | None = None,
    prompt_seen: int = 0,
) -> ModelInfo:
    """The session's one :class:`ModelInfo`: the registry's, with the window the host states (a
    status-line payload's ``context_window_size``) when it states one, else the one the agent's log
    states (a Codex rollout's, already what the prompt may fill:
    :meth:`~ctxhealth.accounting.types.ModelInfo.with_logged_window`, the rule ``check`` reads it by),
    else the registry's widened by the largest prompt a response reported (``prompt_seen``:
    :meth:`~ctxhealth.accounting.types.ModelInfo.with_prompt_seen`, as ``check`` and the Monitor)."""
    info = registry.lookup(model)
    if window:
        return info.with_window(window, usable=False, origin="status line")
    if log_window:
        return info.with_logged_window(log_window)
    return info.with_prompt_seen(prompt_seen)


def observe_messages(
    counters: SessionCounters,
    messages: list[Message],
    *,
    registry: ModelRegistry | None = None,
    profile: Profile | None = None,
    source_format: Format = Format.CLAUDE_CODE,
) -> Assessment | None:
    """Feed the new ``messages`` to the session's monitor; keep its snapshot and the last assessment
    in ``counters``. Returns that assessment (None when there was nothing new). ``source_format``:
    the transcript's format (another agent's log, read by :func:`.tail.read_whole`)."""
    if not messages:
        return None
    monitor = _monitor(counters, claude_code_profile(profile), registry, source_format)
    for message in messages:
        if message.compaction is not None:
            monitor.record_recovery(Action.TRUNCATE)
        monitor.update(redacted(message))
        _note_observed(counters, message)
    last: Assessment | None = monitor.assess()
    counters.monitor = monitor.snapshot()
    _KEPT.last = (counters.monitor, monitor)  # what :func:`assess_call` may go on from
    # the counters show the monitor's fill: one account for the hooks, the status line and check
    counters.fill = monitor.fill
    counters.fill_source = monitor.fill_source.value if monitor.account.turns else ""
    counters.peak = max(counters.peak, monitor.pressure.peak)
    counters.prompt_seen = monitor.prompt_seen
    if last is not None:
        counters.assessment = summarise(last, monitor)
        counters.drift = counters.assessment["drift"]
    return last


MAX_OBSERVED = 128
"""How many tool call / result ids the tail state remembers as observed (parallel calls: a few)."""

_KEPT = threading.local()
"""``last``: (snapshot, monitor) of the latest :func:`observe_messages` in this thread (the per-turn
helper runs each request in a thread of its own): the monitor that snapshot was taken of, so the
next :func:`_monitor` of that snapshot (:func:`assess_call`, or a second feed in the same call)
need not restore it again."""


def _note_observed(counters: SessionCounters, message: Message) -> None:
    """Remember which tool calls and results the monitor has seen (``c:ID`` / ``r:ID``), so a hook
    payload that states one again is not counted twice (:func:`assess_call`)."""
    ids = [f"c:{b.id}" for b in message.tool_calls if b.id]
    ids += [f"r:{r.tool_call_id}" for r in message.tool_results if r.tool_call_id]
    # (a message given again, in its latest form, is one already noted: :func:`.tail.read_whole`)
    ids = [i for i in dict.fromkeys(ids) if i not in counters.observed]
    if ids:
        counters.observed.extend(ids)
        del counters.observed[:-MAX_OBSERVED]


def assess_call(
    counters: SessionCounters,
    calls: Sequence[tuple[ToolCall, ToolResult]],
    *,
    registry: ModelRegistry | None = None,
    profile: Profile | None = None,
) -> dict[str, Any] | None:
    """The monitor's assessment with the finished tool calls hook payloads stated added, in order, as
    the payloads state them. A PostToolUse hook fires before Claude Code writes the result to the
    transcript, and Claude Code writes its transcript in batches, so the transcript may lack the
    last few calls and results: each call (unless the monitor observed it already) and its result
    go in as one message that is no model turn, skipping the results the monitor observed. The
    monitor's snapshot is not changed: it stays the transcript's, which the monitor reads when the
    lines are written, so a call is counted once (the caller may show the assessment until then).
    None when the monitor observed every one of these results already (the transcript had them)."""
    observed = counters.observed
    pending = [(c, r) for c, r in calls if f"r:{r.tool_call_id}" not in observed]
    if not pending:
        return None
    monitor = _monitor(counters, claude_code_profile(profile), registry)
    for call, result in pending:
        blocks: tuple[ToolCall | ToolResult, ...] = (result,)
        if f"c:{call.id}" not in observed:
            blocks = (call, result)
        monitor.update(redacted(Message(Role.USER, blocks)))
    return summarise(monitor.assess(), monitor)


def redacted(message: Message) -> Message:
    """``message`` with secrets in every block redacted, text, tool input and tool output alike,
    before the monitor normalises anything (:func:`ctxhealth.redact.redact_message`)."""
    return redact_message(message)


def summarise(assessment: Assessment, monitor: Monitor) -> dict[str, Any]:
    """The assessment as plain JSON data: decision, zone (and whether indicators raised it), risk,
    drift (None until there is an instruction and a whole window of output written for the current
    request, :attr:`~ctxhealth.signals.drift.DriftDetector.measured`) and the signals that fired."""
    drift = monitor.drift
    measured = bool(drift.instruction_words) and drift.measured
    return {
        "index": assessment.index,
        "turn": assessment.turn,
        "action": assessment.action.value,
        "rule": assessment.rule.value,
        "reasons": list(assessment.reasons),
        "zone": assessment.zone.value,
        "base_zone": assessment.base_zone.value,
        "pressure": round(assessment.pressure, 4),
        "risk": None if assessment.risk is None else round(assessment.risk, 4),
        "fill": assessment.fill,
        "drift": drift.similarity if measured else None,
        "request": drift.request if drift.request != drift.instruction else "",
        "fired": sorted(name for name, s in assessment.signals.items() if s.fired),
        **tool_counts(monitor, assessment),
    }


def tool_counts(monitor: Monitor, assessment: Assessment) -> dict[str, int]:
    """The monitor's tool counts (its failure detector counts every result with the one definition,
    :func:`ctxhealth.failures.is_failure`): results, failed, failures in a row now and at most, and
    identical calls repeated within its window (the ``repeated_calls`` signal's value)."""
    failures = monitor.failures
    repeated = assessment.signals.get("repeated_calls")
    return {
        "tool_calls": failures.total_calls,
        "tool_errors": failures.total_failures,
        "streak": failures.streak_len,
        "max_streak": failures.max_streak,
        "repeats": 0 if repeated is None else int(repeated.value),
    }
