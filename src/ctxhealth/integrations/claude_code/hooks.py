"""The Claude Code hooks: one handler per event, and the fail-open entry point :func:`run_hook`.

* PreCompact: write a checkpoint (JSON + markdown) and the pre-compaction snapshot for the session.
* SessionStart (source ``compact``): give the agent the checkpoint and its original request back as
  ``additionalContext`` (re-anchoring it after compaction). On ``resume`` / ``fork`` the conversation
  is intact: nothing is given back; only when the payload says the prompt cache has likely expired,
  what the resume's first request costs (:func:`resume_notice`).
* UserPromptSubmit: read the new tail (the session's monitor observes it, :mod:`.monitoring`) and
  take the monitor's decision; when it says warn / restart / halt, add that context, once per
  episode (an episode ends at a compaction); a re-anchor is not repeated while the same one is
  still in context (:func:`_reanchor`).
* PostToolUse / PostToolUseFailure: the monitor reads the new tail and assesses the call's result
  as the payload states it (Claude Code writes it to the transcript after the hook); when its
  decision says the calls are failing, or its ``repeated_calls`` signal fires (a doom loop), tell
  the agent, once per episode. The hooks count nothing themselves: every count is the monitor's.
  A call made inside a sub-agent (the payload has ``agent_id``) is not the main session's.
* PostCompact / SubagentStop: recorded (PostCompact reads the tail that now holds the compaction).
* Stop / SessionEnd: read the new tail (waiting briefly for the payload's ``last_assistant_message``
  when Stop fired before that line was written) and record the final assessment in the ledger.

The same handlers answer Codex CLI's and Gemini CLI's hooks (:mod:`.agents` maps their events in and
their output out); their transcripts are read by their own readers (:func:`.tail.read_whole`), and
their tool calls are counted from the transcript, whose reader knows how each one ended.

Each handler reads only the transcript bytes after the cached offset. The counters live in a fast
cache file (:mod:`.tailstate`); the ledger is opened only when something worth keeping happened, and
then receives the queued hook events and the tail state too. :func:`run_hook` never raises: any
internal error becomes one stderr line, is logged to the ledger when possible, and the hook exits 0.
Library code: handlers return text, the CLI prints it.
"""

from __future__ import annotations

import os
from enum import StrEnum

from ctxhealth.integrations.claude_code.agents import AGENTS, Agent, adapt_output, engine_event
from ctxhealth.integrations.claude_code.payloads import (
    HookEvent,
    HookPayload,
    SessionSource,
    find_event,
    hook_output,
    parse_hook_payload,
)
from ctxhealth.integrations.claude_code.tailstate import (
    STATE_VERSION,
    SessionCounters,
    SessionLock,
    load_counters,
    save_counters,
    unchanged,
)
from ctxhealth.integrations.claude_code.transcript import HookLimits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from ctxhealth.integrations.claude_code.checkpointing import CheckpointOutcome
    from ctxhealth.state.ledger import Ledger

__all__ = [
    "HookResult",
    "Notice",
    "handle_hook",
    "reanchor_after_compaction",
    "resume_notice",
    "run_hook",
    "session_root",
]


class HookResult:
    """What the CLI prints: ``stdout`` (JSON for Claude Code, or ""), ``stderr`` (one line, or "")."""

    __slots__ = ("stderr", "stdout")

    def __init__(self, stdout: str = "", stderr: str = "") -> None:
        self.stdout = stdout
        self.stderr = stderr


def session_root(home: str, counters: SessionCounters) -> str:
    """The state root of one Claude Code session: ``<home>/claude-code/sessions/<folder>``, the folder
    named by :func:`ctxhealth.labels.session_folder` from the raw session id (else the transcript's
    path), so no two sessions share one whatever their ids."""
    from ctxhealth.labels import session_folder

    if counters.session_id is not None:
        folder = session_folder("id:" + counters.session_id, counters.session_id)
    else:
        stem = os.path.splitext(os.path.basename(counters.path))[0]
        folder = session_folder("path:" + counters.path, stem)
    return os.path.join(home, "claude-code", "sessions", folder)


# -- notices -------------------------------------------------------------------------------------


class Notice(StrEnum):
    """What a hook can tell the agent (each at most once per episode)."""

    WARN = "warn"
    REANCHOR = "reanchor"
    RESTART = "restart"
    HALT = "halt"
    SPIRAL = "spiral"
    DOOM_LOOP = "doom"


_HEADLINES = {
    Notice.WARN: "[ctxhealth] Context health warning.",
    Notice.RESTART: "[ctxhealth] Context is degraded: a fresh start from a checkpoint is advised.",
    Notice.HALT: "[ctxhealth] Context is at a critical limit: stop and save your state.",
    Notice.SPIRAL: "[ctxhealth] Failure spiral: tool calls keep failing.",
    Notice.DOOM_LOOP: "[ctxhealth] Doom loop: the same tool calls are being made again with the same input.",
}
_ADVICE = {
    Notice.WARN: "Finish the current step, keep answers short, and avoid re-reading files you already have.",
    Notice.RESTART: "Finish or park the current step, summarise progress in a few lines, and tell the user "
    "that a /compact or a fresh session from the ctxhealth checkpoint is advised.",
    Notice.HALT: "Do not start new work. Write down the current state (goal, done, next step) and ask the "
    "user how to continue.",
    Notice.SPIRAL: "Stop retrying the same approach. Read the latest error in full, state its root cause, "
    "then change approach (or ask the user).",
    Notice.DOOM_LOOP: "Repeating it will not change the result. Use what you already have, or try something "
    "different.",
}
_WITH_REQUEST = frozenset({Notice.RESTART, Notice.HALT, Notice.SPIRAL, Notice.DOOM_LOOP})


def _notice_text(kind: Notice, counters: SessionCounters, detail: str) -> str:
    if kind is Notice.REANCHOR:
        from ctxhealth.recovery.reanchor import reanchor_text

        current = (counters.assessment or {}).get("request") or counters.instruction
        return reanchor_text(current, counters.drift or 0.0, counters.fill, counters.instruction)
    lines = [_HEADLINES[kind], f"Why: {detail}" if detail else "", _ADVICE[kind]]
    if counters.instruction and kind in _WITH_REQUEST:
        lines += ["", "ORIGINAL REQUEST (verbatim):", counters.instruction]
    return "\n".join(lines).strip()


def _give(counters: SessionCounters, key: str, kind: Notice, detail: str) -> str:
    """The notice text if ``key`` was not given in this episode yet (and mark it), else ""."""
    if counters.noticed(key):
        return ""
    counters.mark_noticed(key)
    return _notice_text(kind, counters, detail)


# -- shared steps --------------------------------------------------------------------------------


def _load(home: str, payload: HookPayload) -> SessionCounters:
    transcript = payload.transcript_path
    if not transcript:
        from ctxhealth.errors import InputError

        raise InputError("hook payload has no transcript_path", hint="run this from a Claude Code hook")
    path = os.path.abspath(os.path.expanduser(transcript))
    counters = load_counters(home, path)
    if counters is None:
        counters = _from_ledger(home, path) or SessionCounters(path)
    if payload.session_id:
        counters.session_id = payload.session_id
    counters.hooks_seen = True
    return counters


def _from_ledger(home: str, path: str) -> SessionCounters | None:
    """The durable copy of the counters when the fast cache is missing (first run, or cache removed)."""
    if not os.path.exists(os.path.join(home, "ledger.db")):
        return None
    from ctxhealth.errors import LedgerError
    from ctxhealth.state.ledger import Ledger

    try:
        with Ledger.open(_home_path(home)) as ledger:
            tail = ledger.get_tail(path)
    except LedgerError as exc:
        _skip("the ledger", exc)
        return None  # a broken, foreign or newer ledger: read the transcript afresh
    if tail is None or not tail.state or tail.state.get("version") != STATE_VERSION:
        return None  # nothing kept, or kept by another version: read the transcript afresh
    counters = SessionCounters.from_dict(tail.state, path)
    counters.offset, counters.line = tail.offset, tail.line
    return counters


_SKIPPED: list[tuple[str, str]] = []
"""What the current hook call could not use or write, and why (a broken, foreign or newer ledger, a
full disk): its other work went on without it, and :func:`run_hook` says so in one stderr line."""


def _skip(what: str, exc: BaseException) -> str:
    """Note that ``what`` (the ledger, the tail cache, the checkpoint) was skipped; the reason."""
    reason = _one_line(exc)
    _SKIPPED.append((what, reason))
    return reason


def _save(home: str, counters: SessionCounters) -> None:
    """Save the counters; a disk that refuses the write (full, read-only) costs only the cache
    (the write is atomic: the old cache stays whole, and the next hook reads the transcript again)."""
    try:
        save_counters(home, counters)
    except OSError as exc:
        _skip("the tail cache", exc)


def _home_path(home: str) -> Path:
    from pathlib import Path

    return Path(home)


def _read_tail(counters: SessionCounters, agent: Agent = Agent.CLAUDE_CODE) -> str | None:
    """Fold the transcript's new tail into the counters; return why it could not be read (it is
    missing, a FIFO, a device, in a format no reader knows, ...) or None. Never opens anything but
    a regular file. Another agent's transcript is read by its own reader (:func:`.tail.read_whole`: a
    Codex rollout from the last cut its reader can resume at, a Gemini chat whole when it changed)."""
    from ctxhealth.integrations.claude_code.transcript import transcript_problem

    problem = transcript_problem(counters.path)
    if problem is not None:
        return problem
    if unchanged(counters, os.stat(counters.path)):
        return None  # nothing new: skip importing the reader
    if agent is not Agent.CLAUDE_CODE:
        from ctxhealth.errors import CtxHealthError
        from ctxhealth.integrations.claude_code.tail import read_whole

        try:
            read_whole(counters, counters.path)
        except CtxHealthError as exc:  # not readable (yet): the payloads still count the calls
            return f"not readable ({exc})"
        return None
    from ctxhealth.integrations.claude_code.tail import read_tail

    read_tail(counters, counters.path)
    return None


def _flush(home: str, counters: SessionCounters, ledger: Ledger | None = None) -> None:
    """Write queued hook events to the ledger (opening it if not given), and the tail state when this
    process holds the session's lock (``counters.lock_held``); without it, only the events."""
    from ctxhealth.errors import LedgerError
    from ctxhealth.state.ledger import Ledger, TailState

    own = ledger is None
    try:
        ledger = ledger or Ledger.open(_home_path(home))
    except LedgerError as exc:
        # no usable ledger: the events stay queued in the counters (saved with them), the hook's
        # own work is done, and the person is told once (run_hook prints it)
        _skip("the ledger", exc)
        return
    # Without the lock, the events loaded with the counters are the holder's to write: only ours.
    pending = counters.pending_events
    events = pending if counters.lock_held else pending[counters.events_loaded :]
    try:
        for event, session_id, summary in events:
            ledger.record_hook_event(str(event), session_id, str(summary))
        counters.pending_events.clear()
        counters.events_loaded = 0
        if counters.lock_held:
            ledger.set_tail(
                counters.path,
                TailState(
                    offset=counters.offset,
                    line=counters.line,
                    state=counters.to_dict(),
                    session_id=counters.session_id,
                ),
            )
    except LedgerError as exc:  # a write refused (a full disk): each is its own transaction
        _skip("the ledger", exc)
    finally:
        if own:
            ledger.close()


def _summary(payload: HookPayload) -> str:
    parts = [payload.event_name or (payload.event.value if payload.event else "?")]
    if payload.tool_name:
        parts.append(f"tool={payload.tool_name}")
    if payload.failed:
        parts.append("failed")
    if payload.trigger is not None:
        parts.append(f"trigger={payload.trigger.value}")
    if payload.source is not None:
        parts.append(f"source={payload.source.value}")
    if payload.reason:
        parts.append(f"reason={payload.reason}")
    return " ".join(parts)


# -- handlers ------------------------------------------------------------------------------------


def _checkpoint(
    call: _Call, ledger: Ledger | None, *, snapshot: bool, before_last_compaction: bool = False
) -> CheckpointOutcome | None:
    """Write a checkpoint of the transcript (and the pre-compaction snapshot) under the session's
    root, bounded in bytes, and in time by the hook's checkpoint budget counted from its start
    (:mod:`.checkpointing`); None when there is none."""
    from ctxhealth.errors import EnvironmentProblem
    from ctxhealth.integrations.claude_code.checkpointing import write_hook_checkpoint
    from ctxhealth.model import Format

    try:
        return write_hook_checkpoint(
            session_root(call.home, call.counters),
            call.counters,
            ledger,
            call.limits,
            snapshot=snapshot,
            before_last_compaction=before_last_compaction,
            deadline=call.started + call.limits.checkpoint_seconds,
            source_format=Format.CLAUDE_CODE if call.agent is Agent.CLAUDE_CODE else None,
        )
    except (OSError, EnvironmentProblem) as exc:  # a full or read-only disk: every write is atomic
        _skip("the checkpoint", exc)
        return None


def _saved_message(outcome: CheckpointOutcome | None, problem: str | None) -> str:
    if outcome is None:
        unwritten = [reason for what, reason in _SKIPPED if what == "the checkpoint"]
        why = (
            f"cannot write it: {unwritten[0]}"
            if unwritten
            else f"the transcript is {problem}"
            if problem
            else "nothing readable in time"
        )
        return f"ctxhealth: no checkpoint saved ({why})"
    if outcome.fallback or outcome.window_bytes < outcome.size:
        mb = 1024 * 1024
        return (
            f"ctxhealth: checkpoint saved ({outcome.tokens} tokens, from the start and the last "
            f"{outcome.window_bytes / mb:.1f} of {outcome.size / mb:.1f} MB of the transcript)"
        )
    return f"ctxhealth: checkpoint saved ({outcome.tokens} tokens)"


def _pre_compact(call: _Call) -> str:
    import contextlib

    from ctxhealth.errors import LedgerError
    from ctxhealth.integrations.claude_code.transcript import transcript_problem
    from ctxhealth.state.ledger import Ledger

    home, counters = call.home, call.counters
    problem = transcript_problem(counters.path)
    try:
        opened: Ledger | None = Ledger.open(_home_path(home))
    except LedgerError as exc:
        _skip("the ledger", exc)
        opened = None  # broken, foreign or newer: the checkpoint file needs no ledger
    with contextlib.closing(opened) if opened is not None else contextlib.nullcontext() as ledger:
        # The checkpoint first: it is what PreCompact is for. The counters' tail only if time is left.
        outcome = _checkpoint(call, ledger, snapshot=True)
        if call.time_left() > 0:
            _read_tail(counters, call.agent)
        counters.checkpoint_pending = outcome is not None
        counters.checkpoint_compactions = counters.compactions  # what a later compaction adds to
        saved = f" checkpoint={counters.checkpoint_json}" if outcome is not None else " no-checkpoint"
        counters.queue_event(HookEvent.PRE_COMPACT.value, _summary(call.payload) + saved)
        _flush(home, counters, ledger)
    return hook_output(HookEvent.PRE_COMPACT, user_message=_saved_message(outcome, problem))


def reanchor_after_compaction(counters: SessionCounters) -> str:
    """The context given back after a compaction: the checkpoint, then the original request verbatim;
    "" when there is neither (nothing to give back is better than a heading over nothing)."""
    if not counters.checkpoint_text and not counters.instruction:
        return ""
    from ctxhealth.recovery.checkpoint import CONTINUE_DIRECTIVE

    parts = ["[ctxhealth] Context was compacted. What you were doing, saved just before compaction:"]
    if counters.checkpoint_text:
        # the saved text ends with the directive: it is said once, at the end
        parts += ["", counters.checkpoint_text.strip().removesuffix(CONTINUE_DIRECTIVE).strip()]
    if counters.instruction:
        parts += ["", "ORIGINAL REQUEST (verbatim):", counters.instruction]
    parts += ["", CONTINUE_DIRECTIVE]
    return "\n".join(parts)


def _session_start(call: _Call) -> str:
    payload, counters = call.payload, call.counters
    if payload.source in (SessionSource.RESUME, SessionSource.FORK):
        return _resumed(call)
    if payload.source is not SessionSource.COMPACT:
        counters.queue_event(HookEvent.SESSION_START.value, _summary(payload))
        return ""
    return _after_compaction(call, HookEvent.SESSION_START)


def _after_compaction(call: _Call, event: HookEvent) -> str:
    """Give the checkpoint and the original request back after a compaction: at SessionStart
    ``compact``, or (an agent that starts no session after compacting: Gemini) with the next prompt."""
    home, payload, counters = call.home, call.payload, call.counters
    counters.episodes += 1
    if not counters.checkpoint_pending:
        # No PreCompact checkpoint for this compaction (some compaction paths skip PreCompact):
        # checkpoint what the transcript holds, up to the compaction that just happened.
        counters.checkpoint_text = None
        _checkpoint(call, None, snapshot=False, before_last_compaction=True)
    if call.time_left() > 0:
        _read_tail(counters, call.agent)
    counters.checkpoint_pending = False
    counters.checkpoint_compactions = counters.compactions
    context = reanchor_after_compaction(counters)
    done = " reanchored" if context else " nothing-to-give-back"
    counters.queue_event(event.value, _summary(payload) + done)
    _flush(home, counters)
    return hook_output(event, context=context)


def resume_notice(payload: HookPayload) -> str:
    """What a resumed session is told: nothing, unless the payload says the prompt cache has likely
    expired, then what the first request re-sends uncached (and its cost when the payload states it).
    The conversation is intact on a resume: there is nothing to give back."""
    if not payload.cache_expired:
        return ""
    idle = f" after {payload.idle_seconds / 60:.0f} min" if payload.idle_seconds is not None else ""
    size = f" {payload.resume_tokens:,} tokens of" if payload.resume_tokens else ""
    cost = f" (about ${payload.resume_cache_usd:.2f})" if payload.resume_cache_usd is not None else ""
    return (
        f"[ctxhealth] Session resumed{idle}: the prompt cache has likely expired, so the next request "
        f"re-sends{size} context uncached{cost}. Keep the next steps short, or start a fresh session "
        "from a summary if this one is long."
    )


def _resumed(call: _Call) -> str:
    """SessionStart on ``resume`` / ``fork``: the tail is read (the session goes on), no re-injection."""
    payload, counters = call.payload, call.counters
    if call.time_left() > 0:
        _read_tail(counters, call.agent)
    context = resume_notice(payload)
    done = " resume-cost" if context else " resumed"
    counters.queue_event(HookEvent.SESSION_START.value, _summary(payload) + done)
    if context:
        _flush(call.home, counters)
    return hook_output(HookEvent.SESSION_START, context=context)


# The policy's actions (by value) -> what the agent is told. Truncation, history compression and
# clearing tool results are Claude Code's own business (it compacts), so they become a warning.
_ACTION_NOTICE = {
    "warn": Notice.WARN,
    "reanchor": Notice.REANCHOR,
    "clear_tool_results": Notice.WARN,
    "compress_history": Notice.WARN,
    "truncate": Notice.WARN,
    "restart": Notice.RESTART,
    "halt": Notice.HALT,
}


def _compacted_unannounced(call: _Call) -> bool:
    """An agent that starts no session after compacting (Gemini): whether the transcript now holds
    a compaction newer than the checkpoint its PreCompact hook wrote. Gemini fires PreCompress on
    every compression attempt, most of which compress nothing: only a compaction the transcript
    shows is one (reads the tail)."""
    counters = call.counters
    if AGENTS[call.agent].restarts_after_compaction or not counters.checkpoint_pending:
        return False
    _read_tail(counters, call.agent)
    return counters.compactions > counters.checkpoint_compactions


def _user_prompt(call: _Call) -> str:
    from ctxhealth.integrations.claude_code.assess import verdict

    home, payload, counters = call.home, call.payload, call.counters
    if _compacted_unannounced(call):
        return _after_compaction(call, HookEvent.USER_PROMPT_SUBMIT)
    _read_tail(counters, call.agent)
    decision = verdict(counters)
    kind = _ACTION_NOTICE.get(decision.action)
    if kind is Notice.REANCHOR and _new_task(payload):
        # the person is changing the subject: the output so far was for the request before, so it
        # is no drift from this one (and the agent must not be sent back to the old one)
        context = ""
    elif kind is Notice.REANCHOR:
        context = _reanchor(counters)
    else:
        context = _give(counters, kind.value, kind, "; ".join(decision.reasons)) if kind else ""
    counters.queue_event(HookEvent.USER_PROMPT_SUBMIT.value, _summary(payload) + f" action={decision.action}")
    if context:
        from ctxhealth.state.ledger import Ledger

        with Ledger.open(_home_path(home)) as ledger:
            ledger.record_decision(
                counters.session_id, counters.turns, decision.action, "; ".join(decision.reasons)
            )
            if kind in (Notice.RESTART, Notice.HALT):
                outcome = _checkpoint(call, ledger, snapshot=False)
                if outcome is not None:
                    context += f"\n\nA checkpoint of this session was saved: {outcome.json_path}"
            _flush(home, counters, ledger)
    return hook_output(HookEvent.USER_PROMPT_SUBMIT, context=context)


def _new_task(payload: HookPayload) -> bool:
    """Whether the prompt the payload states replaces the current task once the transcript holds it
    (the CLI writes it there after this hook): a request that stands on its own, not a follow-up."""
    from ctxhealth.signals.requests import replaces_task

    return bool(payload.prompt) and replaces_task(str(payload.prompt))


REANCHOR_AGAIN_TURNS = 10
"""A re-anchor still in context is given again after this many model responses..."""
REANCHOR_AGAIN_SHARE = 0.10
"""...or once the context grew by this share of the usable window since (it is buried deeper)."""


def _reanchor(counters: SessionCounters) -> str:
    """The re-anchor the monitor's decision calls for, unless the same one (naming the same request)
    is still in context: given in this episode (no compaction since, which may have dropped it),
    fewer than :data:`REANCHOR_AGAIN_TURNS` responses ago, and the context grown by less than
    :data:`REANCHOR_AGAIN_SHARE` of the usable window since. The tail state records each injection
    (``SessionCounters.notices``: episode, turn, fill, the request it named)."""
    key = Notice.REANCHOR.value
    request = (counters.assessment or {}).get("request") or counters.instruction
    digest = _digest(str(request))
    at = counters.given_at(key)
    if at is not None and counters.notices[key][3:4] == [digest]:
        turn, fill = at
        usable = int((counters.thresholds or {}).get("usable") or 0)
        grown = usable > 0 and counters.fill - fill >= REANCHOR_AGAIN_SHARE * usable
        if counters.turns - turn < REANCHOR_AGAIN_TURNS and not grown:
            return ""  # the same re-anchor is still in the context, not far back
    counters.mark_noticed(key)
    counters.notices[key].append(digest)
    return _notice_text(Notice.REANCHOR, counters, "")


def _digest(text: str) -> str:
    import zlib

    return f"{zlib.crc32(text.encode('utf-8', errors='replace')):08x}"


MAX_STATED = 8
"""How many stated calls the tail state keeps while the transcript lags (it lags by one or two)."""


def _assess_call(call: _Call) -> dict[str, Any] | None:
    """The monitor's assessment with the calls and results hook payloads stated that the transcript
    does not hold yet added as the payloads state them, this one last: Claude Code writes a result to
    the transcript only after the hook, and writes its transcript in batches, so at the third of
    three quick failures the transcript may hold only the first (seen with Claude Code 2.1). Never
    saved: the transcript's lines are what the monitor keeps (:func:`.monitoring.assess_call`); the
    stated calls are kept, redacted, until the transcript holds their results (it is written in
    order: a result it holds means every call stated before it is there too)."""
    from ctxhealth.integrations.claude_code.monitoring import assess_call
    from ctxhealth.model import ToolCall, ToolResult
    from ctxhealth.redact import redact, redact_value

    payload = call.payload
    tool_id = payload.tool_use_id or ""
    if not tool_id:
        return None
    counters = call.counters
    stated = [s for s in counters.stated if s and s[0] != tool_id]
    stated.append(
        [
            tool_id,
            payload.tool_name or "?",
            redact_value(payload.tool_input),
            redact(payload.response_text),
            payload.failed,
        ]
    )
    held = [i for i, s in enumerate(stated) if f"r:{s[0]}" in counters.observed]
    counters.stated = stated = stated[held[-1] + 1 if held else 0 :][-MAX_STATED:]
    return assess_call(
        counters,
        [(ToolCall(s[0], s[1], s[2]), ToolResult(s[0], s[3], is_error=bool(s[4]))) for s in stated],
    )


def _tool_notices(call: _Call, last: object) -> str:
    """The notices the monitor's assessment ``last`` calls for after a tool call, each once per
    episode: the calls are failing (its decision's failure spiral, or the policy's streak) and
    repeated identical calls (its ``repeated_calls`` signal)."""
    from ctxhealth.integrations.claude_code.assess import _thresholds, failure_reason

    counters = call.counters
    notices: list[str] = []
    why = failure_reason(last, _thresholds(counters))
    if why:
        notices.append(_give(counters, Notice.SPIRAL.value, Notice.SPIRAL, why))
    if isinstance(last, dict) and "repeated_calls" in (last.get("fired") or ()):
        repeats = last.get("repeats", 0)
        detail = f"{repeats} identical calls repeated within the last turns"
        notices.append(_give(counters, Notice.DOOM_LOOP.value, Notice.DOOM_LOOP, detail))
    return "\n\n".join(n for n in notices if n)


def _post_tool(call: _Call) -> str:
    home, payload, counters = call.home, call.payload, call.counters
    event = payload.event or HookEvent.POST_TOOL_USE
    if payload.agent_id:
        # A sub-agent's call: its own transcript holds it, not the main session's monitor.
        counters.queue_event(event.value, _summary(payload) + f" subagent={payload.agent_type or '?'}")
        return ""
    if _compacted_unannounced(call):
        return _after_compaction(call, event)
    # The monitor reads what the transcript gained (the call, usually). Claude Code's payload says
    # how the call ended before the transcript does: the monitor assesses it as stated, not kept.
    # Codex and Gemini leave the outcome out of the payload (Codex sends "" for a command that
    # exited 1) and may write it to the transcript only after this hook: their calls are the
    # transcript's (its reader says how each ended), read by whichever hook reads it next (Gemini's
    # PreCompress, before every request, often does); each notice is given once per episode.
    _read_tail(counters, call.agent)
    if call.agent is Agent.CLAUDE_CODE:
        stated = _assess_call(call)
        if stated is not None:
            # shown until the transcript's own line replaces it (the status line reads no tail
            # while the hooks keep the counters fresh); the monitor's snapshot stays the transcript's
            counters.assessment = stated
    context = _tool_notices(call, counters.assessment)
    counters.queue_event(event.value, _summary(payload))
    if context:
        _flush(home, counters)
    return hook_output(event, context=context)


FLUSH_WAIT_SECONDS = 0.5
"""How long Stop waits for the transcript to gain the last assistant message the payload names."""


def _flushed(path: str, message: str) -> bool:
    """Whether the transcript's last 64 KB hold the start of ``message`` (as JSON escapes it)."""
    import json

    probe = json.dumps(message.strip()[:48], ensure_ascii=False)[1:-1].encode("utf-8")
    if not probe:
        return True
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 65_536))
            return probe in handle.read()
    except OSError:
        return True  # nothing to wait for


def _read_final_tail(call: _Call) -> None:
    """Read the tail; Stop may fire before Claude Code wrote the last line, so when the payload's
    ``last_assistant_message`` is not in the transcript yet, wait briefly for it and read again."""
    import time

    counters, payload = call.counters, call.payload
    _read_tail(counters, call.agent)
    message = payload.last_assistant_message
    if not message or _flushed(counters.path, message):
        return
    until = time.monotonic() + FLUSH_WAIT_SECONDS
    while time.monotonic() < until:
        time.sleep(0.02)
        if _flushed(counters.path, message):
            break
    _read_tail(counters, call.agent)


def _stop(call: _Call) -> str:
    from ctxhealth.integrations.claude_code.assess import tool_counts, verdict

    home, payload, counters = call.home, call.payload, call.counters
    _read_final_tail(call)
    decision = verdict(counters)
    counters.queue_event(payload.event_name or HookEvent.STOP.value, _summary(payload))
    last = counters.assessment or {}
    tools = tool_counts(counters)
    verdict_key = [
        counters.offset,
        tools.calls,
        tools.failed,
        counters.episodes,
        counters.fill,
        last.get("index"),
        decision.action,
    ]
    if counters.last_final == verdict_key:
        # Nothing happened since the last final assessment: keep the event for the next ledger write.
        return ""
    call.give("")  # Stop says nothing to the agent: what follows is the ledger's
    from ctxhealth.state.ledger import Ledger

    with Ledger.open(_home_path(home)) as ledger:
        # the monitor's own assessment of the latest message: its fill, pressure and zone
        ledger.record_assessment(
            counters.session_id,
            counters.turns,
            tokens=counters.fill,
            pressure=float(last.get("pressure") or 0.0),
            zone=str(last.get("zone") or "green"),
            details={
                "final": True,
                "action": decision.action,
                "rule": decision.rule,
                "reasons": list(decision.reasons),
                "risk": last.get("risk"),
                "signals_fired": last.get("fired", []),
                "peak": counters.peak,
                "tool_calls": tools.calls,
                "tool_errors": tools.failed,
                "max_consecutive_failures": tools.max_streak,
                "repeated_calls": tools.repeats,
                "drift": counters.drift,
                "compactions": counters.compactions,
                "cost_usd": counters.cost_usd,
            },
        )
        ledger.record_decision(
            counters.session_id, counters.turns, decision.action, "; ".join(decision.reasons)
        )
        counters.last_final = verdict_key
        _flush(home, counters, ledger)
    return ""


def _post_compact(call: _Call) -> str:
    """PostCompact: the transcript now holds the compaction; read it (the fill after it is the
    reader's ``postTokens``). The re-injection comes with SessionStart(compact), which follows."""
    payload, counters = call.payload, call.counters
    _read_tail(counters, call.agent)
    size = f" summary={len(payload.compact_summary)}ch" if payload.compact_summary else ""
    counters.queue_event(HookEvent.POST_COMPACT.value, _summary(payload) + size)
    return ""


def _subagent_stop(call: _Call) -> str:
    """SubagentStop: recorded only (the sub-agent's transcript is its own, not the main session's)."""
    call.counters.queue_event(HookEvent.SUBAGENT_STOP.value, _summary(call.payload))
    return ""


_HANDLERS = {
    HookEvent.PRE_COMPACT: _pre_compact,
    HookEvent.SESSION_START: _session_start,
    HookEvent.USER_PROMPT_SUBMIT: _user_prompt,
    HookEvent.POST_TOOL_USE: _post_tool,
    HookEvent.POST_TOOL_USE_FAILURE: _post_tool,
    HookEvent.STOP: _stop,
    HookEvent.SESSION_END: _stop,
    HookEvent.POST_COMPACT: _post_compact,
    HookEvent.SUBAGENT_STOP: _subagent_stop,
}


class _Call:
    """One hook call: where ctxhealth keeps its state, the payload, the session's counters, limits,
    and who receives its output early (:func:`handle_hook`'s ``answer``)."""

    __slots__ = ("agent", "answer", "counters", "home", "limits", "payload", "started")

    def __init__(
        self,
        home: str,
        payload: HookPayload,
        counters: SessionCounters,
        limits: HookLimits,
        started: float,
        answer: Callable[[str], None] | None = None,
        agent: Agent = Agent.CLAUDE_CODE,
    ) -> None:
        self.agent = agent
        self.home = home
        self.payload = payload
        self.counters = counters
        self.limits = limits
        self.started = started
        self.answer = answer

    def give(self, output: str) -> None:
        """Hand the output on now, once (the work that follows changes it no more)."""
        if self.answer is not None:
            answer, self.answer = self.answer, None
            answer(output)

    def time_left(self) -> float:
        """Seconds left of the hook's checkpoint budget (negative once it is spent)."""
        import time

        return self.started + self.limits.checkpoint_seconds - time.monotonic()


def handle_hook(
    event: HookEvent | None,
    raw: bytes,
    *,
    home: str,
    limits: HookLimits | None = None,
    answer: Callable[[str], None] | None = None,
    agent: Agent = Agent.CLAUDE_CODE,
) -> str:
    """Run the handler for ``event`` (else the payload's ``hook_event_name``); return stdout text.

    ``agent``: whose hook this is (:mod:`.agents`): its event names are mapped to the engine's on the
    way in, and the output is written the way that agent reads it on the way out.

    ``answer``, when given, receives that text as soon as it is known, before the counters are
    saved (still under the lock, so the next hook of the session sees them saved): the per-turn
    helper hands it to the waiting command there, so the command does not wait for the disk.

    The session's counters are loaded, updated and saved under its lock. A hook that cannot get the
    lock within ``limits.lock_seconds`` still does its work, but writes only its events to the
    ledger (SQLite serialises those), never the counters, which the holder of the lock is writing.
    Raises on bad input or an internal problem; :func:`run_hook` is the fail-open wrapper.
    """
    payload = parse_hook_payload(raw, event)
    asked = payload.event_name or None
    if event is None and agent is not Agent.CLAUDE_CODE and asked:
        payload = parse_hook_payload(raw, engine_event(agent, asked))
    if payload.event is None:
        from ctxhealth.errors import UsageError

        raise UsageError(
            f"unknown hook event {payload.event_name!r}",
            hint="use one of " + ", ".join(AGENTS[agent].events),
        )
    if agent is not Agent.CLAUDE_CODE:
        engine, given = payload.event, answer

        def adapted(out: str) -> str:
            return adapt_output(agent, out, event=engine, asked=asked)

        answer = None if given is None else (lambda out: given(adapted(out)))
        return adapted(_handle(payload.event, payload, home, limits, answer, agent))
    return _handle(payload.event, payload, home, limits, answer, agent)


def _handle(
    event: HookEvent,
    payload: HookPayload,
    home: str,
    limits: HookLimits | None,
    answer: Callable[[str], None] | None,
    agent: Agent,
) -> str:
    import time

    started = time.monotonic()
    limits = limits or HookLimits()
    transcript = os.path.abspath(os.path.expanduser(payload.transcript_path or ""))
    with SessionLock(home, transcript, timeout=limits.lock_seconds) as lock:
        counters = _load(home, payload)
        counters.lock_held = lock.acquired
        counters.events_loaded = len(counters.pending_events)
        call = _Call(home, payload, counters, limits, started, answer, agent)
        output = _HANDLERS[event](call)
        call.give(output)
        if lock.acquired:
            _save(home, counters)
        elif counters.pending_events:
            _flush(home, counters)
        return output


def run_hook(
    event_name: str | None,
    raw: bytes,
    *,
    home: str,
    limits: HookLimits | None = None,
    answer: Callable[[str], None] | None = None,
    agent: Agent = Agent.CLAUDE_CODE,
) -> HookResult:
    """Fail open: any error becomes one stderr line (and a ledger row when possible), never a raise.

    ``answer``: see :func:`handle_hook` (an error after it was called is still logged and returned).
    ``event_name`` is the agent's own name for the event (Gemini's ``BeforeAgent``, ...)."""
    try:
        if agent is Agent.CLAUDE_CODE:
            event = find_event(event_name) if event_name else None
        else:
            event = engine_event(agent, event_name) if event_name else None
            raw = _named(raw, event_name)
        if event_name and event is None:
            from ctxhealth.errors import UsageError

            raise UsageError(f"unknown hook event {event_name!r}", hint="see `ctxhealth hook --help`")
        _SKIPPED.clear()
        stdout = handle_hook(
            None if agent is not Agent.CLAUDE_CODE else event,
            raw,
            home=home,
            limits=limits,
            answer=answer,
            agent=agent,
        )
        if _SKIPPED:
            from ctxhealth.redact import scrub

            whats = " and ".join(dict.fromkeys(what for what, _ in _SKIPPED))
            note = f"ctxhealth: hook {event_name or '?'} skipped: {whats} only (the rest was done): "
            return HookResult(stdout=stdout, stderr=note + scrub(_SKIPPED[0][1]))
        return HookResult(stdout=stdout)
    except Exception as exc:  # fail open: a hook must never break the agent
        from ctxhealth.redact import scrub

        message = scrub(_one_line(exc))
        where = scrub(f"hook {event_name or '?'}")
        _log_error(home, where, message)
        return HookResult(stderr=f"ctxhealth: {where} skipped: {message}")


def _named(raw: bytes, event_name: str | None) -> bytes:
    """The payload with ``hook_event_name`` set to the command line's event (which wins, as it does
    for Claude Code's hooks)."""
    if not event_name:
        return raw
    import json

    try:
        data = json.loads(raw)
    except ValueError:
        return raw  # the parser says what is wrong
    if isinstance(data, dict) and data.get("hook_event_name") != event_name:
        data["hook_event_name"] = event_name
        return json.dumps(data).encode()
    return raw


def _one_line(exc: BaseException) -> str:
    text = getattr(exc, "render", None)
    rendered = text() if callable(text) else f"{type(exc).__name__}: {exc}"
    return " ".join(str(rendered).split())[:300]


def _log_error(home: str, where: str, message: str) -> None:
    try:
        from ctxhealth.state.ledger import Ledger

        with Ledger.open(_home_path(home)) as ledger:
            ledger.record_error(where, message)
    except Exception:  # the ledger itself may be what failed; the stderr line is enough then
        return
