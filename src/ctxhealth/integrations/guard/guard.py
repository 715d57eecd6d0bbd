"""The guard: the health policy applied to model API requests, for the proxy and the SDK wrappers.

:meth:`Guard.plan` takes one request body (bytes, as the client sent it) and returns a
:class:`Plan`: forward the body unchanged, forward a rewritten body, or answer with an API-shaped
error. On the way the request's conversation is matched against its session's known prefix
(:mod:`.prefix`); only the items not seen before are turned into messages and observed by the
session's :class:`~ctxhealth.monitor.Monitor` (the usage of the previous response is attached to the
assistant message that shows up first), so the monitor's work per request does not grow with the
length of the conversation. :meth:`Guard.finish` records what the response reported.

Modes (:class:`~ctxhealth.integrations.guard.apply.Mode`; carried out by :mod:`.apply`):

* ``observe`` — the body is forwarded byte for byte; the monitor assesses, the ledger records.
* ``advise`` — as observe; when the decision is to intervene, a note with the reasons is added as
  the newest user content (once per episode: again only after the decision changed).
* ``enforce`` — warn adds the note; re-anchor appends the spec's re-anchor message; clear tool
  results, history compression, truncate and restart rewrite the conversation with the recovery
  code, and later requests of the session are sent with the recovered items in place of the
  history they replaced; halt answers with an API-shaped error and calls no model.

The guard holds no I/O: a store (:mod:`.store`) keeps sessions; :meth:`Guard.flush` hands it the
sessions that changed. A lock makes it safe for clients used from several threads.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.errors import LedgerError, StateError
from ctxhealth.integrations.guard.apply import (
    Applied,
    Mode,
    Outcome,
    apply_decision,
    dump_body,
    halt,
    recovery_session,
)
from ctxhealth.integrations.guard.metrics import Metrics
from ctxhealth.integrations.guard.prefix import chain_values, session_digest
from ctxhealth.integrations.guard.session import GuardSession
from ctxhealth.integrations.guard.store import MemoryStore, SessionStore
from ctxhealth.integrations.wire import ADAPTERS, ApiStyle, ResponseFacts, WireAdapter
from ctxhealth.integrations.wire.base import ApiError, attach_usage, canonical
from ctxhealth.integrations.wire.harness import (
    HarnessRequest,
    agent_of,
    agent_session_id,
    find_harness_request,
    prompt_at,
    with_instructions,
)
from ctxhealth.model import Message, Role
from ctxhealth.monitor import Assessment, Monitor
from ctxhealth.policy import Action
from ctxhealth.policy.decision import Counters
from ctxhealth.policy.profile import Profile
from ctxhealth.recovery.checkpoint import build_checkpoint, render_compaction_facts
from ctxhealth.recovery.report import RecoveryReport
from ctxhealth.redact import redact, redact_message

SESSION_HEADER = "x-ctxhealth-session"
MAX_SESSIONS = 1_000
MAX_RESPONSE_IDS = 10_000
MAX_ALIASES = 10_000


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do with one request. ``body`` is None when the original bytes go out unchanged;
    ``error`` is set when the guard answers itself. ``report`` is the recovery's account."""

    key: str | None
    style: ApiStyle
    body: bytes | None = None
    error: ApiError | None = None
    assessment: Assessment | None = None
    action: Action = Action.CONTINUE
    applied: Applied = Applied.NONE
    reset: bool = False
    observed: int = 0
    report: RecoveryReport | None = None
    harness: HarnessRequest | None = None


class Guard:
    """Sessions, their monitors and the mode (see the module docstring)."""

    def __init__(
        self,
        mode: Mode = Mode.OBSERVE,
        *,
        store: SessionStore | None = None,
        profile: Profile | None = None,
        registry: ModelRegistry | None = None,
        model: str | None = None,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        self.mode = mode
        self.store: SessionStore = store if store is not None else MemoryStore()
        self.profile = profile
        self.registry = registry
        self.model = model
        self.max_sessions = max_sessions
        self.sessions: OrderedDict[str, GuardSession] = OrderedDict()
        self.metrics = Metrics()
        self._responses: OrderedDict[str, str] = OrderedDict()  # response id -> session key
        # the agent's own session id -> the session whose agent just compacted itself (its next
        # request starts from the summary, so its digest is new: it still is the same session)
        self._compacted: OrderedDict[str, str] = OrderedDict()
        self._aliases: OrderedDict[str, str] = OrderedDict()  # digest key -> session key
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ sessions

    def _new_monitor(self, model: str | None) -> Monitor:
        return Monitor(self.model or model, self.profile, registry=self.registry)

    def _session(self, key: str, style: ApiStyle, model: str | None) -> GuardSession:
        session = self.sessions.get(key)
        if session is not None:
            self.sessions.move_to_end(key)
            return session
        try:
            data = self.store.load(key)
        except LedgerError:
            data = None  # an unreadable ledger must not stop the traffic: start the session afresh
        if data is not None:
            try:
                monitor = Monitor.restore(data["monitor"], self.model, self.profile, registry=self.registry)
                session = GuardSession.load(data, monitor)
            except (StateError, KeyError, TypeError, ValueError):
                session = None  # from another version, or damaged: start afresh
        if session is None:
            session = GuardSession(key, style.value, self._new_monitor(model))
        session.saved = time.monotonic()  # ``max_age`` counts from when this process took it up
        self.sessions[key] = session
        while len(self.sessions) > self.max_sessions:
            old_key, old = self.sessions.popitem(last=False)
            if old.dirty:
                self.store.save(old_key, old.dump())
        return session

    def _key(self, adapter: WireAdapter, body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
        """The session: ``x-ctxhealth-session``; a continued response's; else the agent's own
        session id (:func:`~ctxhealth.integrations.wire.harness.agent_session_id`) with the digest of
        the first user message (an agent's sub-agents share its id but not their conversation);
        else the digest of the system prompt and first user message. After the agent compacted
        itself, its next request with a new digest joins the compacted session."""
        style = adapter.style.value
        given = headers.get(SESSION_HEADER)
        if given:
            given = given.strip()[:200]
            if redact(given) != given:  # a secret used as a session id: keep only its digest
                given = "id-" + hashlib.sha256(given.encode()).hexdigest()[:24]
            return f"{style}:{given}"
        previous = body.get("previous_response_id")
        if isinstance(previous, str) and previous in self._responses:
            return self._responses[previous]
        agent_id = agent_session_id(headers, body)
        if agent_id is None:
            return f"{style}:{session_digest(style, adapter.session_seed(dict(body)))}"
        first = next(
            (i for i in adapter.items(dict(body)) if isinstance(i, dict) and i.get("role") == "user"), None
        )
        key = f"{style}:{agent_id}:{session_digest(style, canonical(first).decode())}"
        alias = self._aliases.get(key)
        if alias is not None:
            return alias
        if key not in self.sessions:
            compacted = self._compacted.pop(agent_id, None)
            if compacted is not None and compacted in self.sessions:
                self._aliases[key] = compacted
                while len(self._aliases) > MAX_ALIASES:
                    self._aliases.popitem(last=False)
                return compacted
        return key

    # ------------------------------------------------------------------ requests

    def plan(self, style: ApiStyle, raw: bytes, headers: Mapping[str, str]) -> Plan:
        """Decide what to send for one request body (see the module docstring)."""
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            return Plan(None, style)  # not ours to judge: the provider answers it
        with self._lock:
            try:
                return self._plan(ADAPTERS[style], body, headers)
            except Exception as exc:  # fail open: ctxhealth's own failure never stops the request
                self._failed("plan", exc)
                return Plan(None, style)

    def _failed(self, where: str, exc: BaseException) -> None:
        """Count and record an internal error (the request goes on unchanged)."""
        self.metrics.errors += 1
        message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        try:
            self.store.record_error(f"guard {where}", message)
        except Exception:  # the store itself may be what failed: the counter is enough then
            return

    def _plan(self, adapter: WireAdapter, body: dict[str, Any], headers: Mapping[str, str]) -> Plan:
        style = adapter.style
        self.metrics.requests[(style.value, self.mode.value)] += 1
        model = body.get("model") if isinstance(body.get("model"), str) else None
        key = self._key(adapter, body, headers)
        session = self._session(key, style, model)
        session.requests += 1
        session.dirty = True
        session.touched = time.monotonic()
        items = adapter.items(body)
        if session.agent is None:
            agent = agent_of(headers)
            session.agent = agent.value if agent is not None else None
        harness = find_harness_request(items, adapter.head(body))
        if harness is not None:
            return self._harness(adapter, body, headers, session, items, harness)
        continued = isinstance(body.get("previous_response_id"), str)
        reset = False
        chains: dict[int, bytes] | None = None
        if continued:
            # the provider holds the history: every item here is new, nothing can be rewritten
            new_items, with_head = items, session.count == 0
        else:
            count = session.count
            marks = {count, len(items)}
            if session.rewrite is not None:
                marks.add(session.rewrite.count)
            chains = chain_values(style.value, adapter.head(body), items, marks)
            if count and chains.get(count) != session.chain:
                reset = True
                session.resets += 1
                self.metrics.resets += 1
                # the same session (compacted or edited by its agent): a fresh monitor, the
                # policy's counters kept (restarts, truncations, cooldown; the turn count restarts)
                kept = session.monitor.counters
                session.monitor = self._new_monitor(model)
                session.monitor.counters = Counters(kept.restarts, kept.truncations, kept.cooldown, 0)
                session.rewrite = None
                session.pending = None
                session.noted = None
                session.halted = False
                count = 0
            new_items, with_head = items[count:], count == 0
        messages = adapter.to_messages(body, new_items, with_head=with_head)
        messages = self._attach_pending(session, messages)
        monitor = session.monitor
        assessment: Assessment | None = None
        for message in messages:
            # redacted before the monitor sees it: its state (drift words, signatures) is saved
            monitor.update(redact_message(message))
        if messages:
            assessment = monitor.assess()
        session.observed += len(messages)
        session.count = len(items) if not continued else session.count + len(items)
        if chains is not None:
            session.chain = chains[len(items)]
        if assessment is None:
            assessment = monitor.last
        action = assessment.action if assessment is not None else Action.CONTINUE

        effective = items
        rewrite = session.rewrite
        if rewrite is not None and chains is not None and self.mode is Mode.ENFORCE:
            # (a rewrite kept from an enforcing run never reaches the model in observe or advise mode)
            if chains.get(rewrite.count) == rewrite.chain:
                effective = [*rewrite.items, *items[rewrite.count :]]
            else:
                session.rewrite = None
        rewrite_at = (len(items), chains[len(items)]) if chains is not None else None
        if messages:
            outcome = apply_decision(self.mode, adapter, body, session, assessment, effective, rewrite_at)
        elif session.halted and self.mode is Mode.ENFORCE and assessment is not None:
            outcome = halt(adapter, session, assessment)  # a retry of a halted request: still halted
        else:
            outcome = Outcome()  # a retry with nothing new: decided already (a rewrite still applies)
        unchanged = outcome.body is None and effective is items
        plan = Plan(
            key,
            style,
            outcome.body if outcome.body is not None or unchanged else dump_body(adapter, body, effective),
            outcome.error,
            assessment,
            action,
            outcome.applied,
            reset,
            len(messages),
            outcome.report,
        )
        self._record(session, plan)
        return plan

    def _harness(
        self,
        adapter: WireAdapter,
        body: dict[str, Any],
        headers: Mapping[str, str],
        session: GuardSession,
        items: list[Any],
        harness: HarnessRequest,
    ) -> Plan:
        """The agent compacting itself: sent as the agent wrote it in every mode (not observed, no
        note, no halt); enforce adds the checkpoint's facts as extra instructions for the summary."""
        session.compactions += 1
        session.self_compacting = True
        agent_id = agent_session_id(headers, body)
        if agent_id is not None:
            self._compacted[agent_id] = session.key
            while len(self._compacted) > MAX_ALIASES:
                self._compacted.popitem(last=False)
        self.metrics.harness[harness.value] += 1
        out: bytes | None = None
        applied = Applied.NONE
        if self.mode is Mode.ENFORCE:
            # the facts of the conversation, without the agent's own prompt (it is no request)
            at = prompt_at(items)
            history = items[: at[0]] if at is not None else items
            parsed = adapter.to_messages(body, history, with_head=True)
            facts = render_compaction_facts(build_checkpoint(recovery_session(parsed, session.key)))
            out = dump_body(adapter, body, with_instructions(items, facts, adapter.add_note))
            applied = Applied.NOTE
        plan = Plan(
            session.key, adapter.style, out, None, session.monitor.last, applied=applied, harness=harness
        )
        self._record(session, plan)
        return plan

    def _attach_pending(self, session: GuardSession, messages: list[Message]) -> list[Message]:
        pending = session.pending
        if pending is None:
            return messages
        session.pending = None
        for i, m in enumerate(messages):
            if m.role is Role.ASSISTANT:
                out = list(messages)
                out[i] = attach_usage(m, pending.usage, pending.model, pending.response_id)
                return out
        return messages

    def _record(self, session: GuardSession, plan: Plan) -> None:
        a = plan.assessment
        action = plan.action.value
        self.metrics.actions[(action, plan.applied.value)] += 1
        session.actions[action] = session.actions.get(action, 0) + 1
        session.last_action = action
        if a is None:
            return
        session.last = {
            "turn": a.turn,
            "fill": a.fill,
            "fill_source": a.fill_source.value,
            "zone": a.zone.value,
            "pressure": round(a.pressure, 4),
            "risk": None if a.risk is None else round(a.risk, 4),
            "action": action,
            "applied": plan.applied.value,
            "reasons": list(a.reasons),
            "model": a.model,
        }
        row = {
            "tokens": a.fill,
            "pressure": round(a.pressure, 4),
            "zone": a.zone.value,
            "details": {
                "source": "guard",
                "mode": self.mode.value,
                "action": action,
                "rule": a.rule.value,
                "applied": plan.applied.value,
                "reset": plan.reset,
                "observed": plan.observed,
                "harness": None if plan.harness is None else plan.harness.value,
            },
        }
        decision = (
            None
            if plan.action is Action.CONTINUE or plan.harness is not None
            else (action, "; ".join(a.reasons))
        )
        self.store.record(session.key, a.turn, row, decision)

    # ------------------------------------------------------------------ responses

    def finish(self, plan: Plan, status: int, facts: ResponseFacts) -> None:
        """Record what the response to ``plan``'s request reported (status, usage, model, id)."""
        with self._lock:
            try:
                self._finish(plan, status, facts)
            except Exception as exc:  # fail open, as in :meth:`plan`
                self._failed("finish", exc)

    def _finish(self, plan: Plan, status: int, facts: ResponseFacts) -> None:
        self.metrics.responses[(plan.style.value, str(status))] += 1
        usage = facts.usage
        if usage is not None:
            tokens = self.metrics.tokens
            tokens["input"] += usage.input_tokens
            tokens["output"] += usage.output_tokens
            tokens["cache_read"] += usage.cache_read_tokens
            tokens["cache_write"] += usage.cache_creation_tokens
        session = self.sessions.get(plan.key) if plan.key is not None else None
        if session is None or status >= 400 or plan.harness is not None:
            return  # (a compaction's usage is the old context's, not the next turn's)
        session.dirty = True
        session.touched = time.monotonic()
        if usage is not None or facts.model is not None:
            session.pending = facts
        if usage is not None:
            session.reported_fill = usage.context_tokens
        if facts.response_id and plan.key is not None:
            self._responses[facts.response_id] = plan.key
            while len(self._responses) > MAX_RESPONSE_IDS:
                self._responses.popitem(last=False)

    # ------------------------------------------------------------------ persistence and status

    def flush(self, *, idle: float = 0.0, max_age: float | None = None, limit: int | None = None) -> int:
        """Hand changed sessions to the store; the number handed over.

        With ``idle``, only sessions without a request or response for that many seconds (a session
        is saved between an agent's turns, not in the middle of one), or, with ``max_age``, not
        saved for that long; at most ``limit`` per call. Saving takes the monitor's snapshot (about
        a millisecond), so a server spreads it out this way; the defaults save every changed session.
        """
        if isinstance(self.store, MemoryStore):
            return 0  # nowhere to keep them: skip the snapshots
        now = time.monotonic()
        with self._lock:
            due = [
                s
                for s in self.sessions.values()
                if s.dirty and (now - s.touched >= idle or (max_age is not None and now - s.saved >= max_age))
            ]
            dirty = []
            for s in due[:limit]:
                dirty.append((s.key, s.dump()))
                s.dirty = False
                s.saved = now
        for key, state in dirty:
            self.store.save(key, state)
        return len(dirty)

    def status(self) -> dict[str, Any]:
        """Sessions with fill, zone, pressure, last action and counters (JSON-safe)."""
        with self._lock:
            sessions = [
                {
                    "session": s.key,
                    "api": s.style,
                    "requests": s.requests,
                    "observed_messages": s.observed,
                    "resets": s.resets,
                    "compactions": s.compactions,
                    "agent": s.agent,
                    "last_action": s.last_action,
                    "actions": dict(s.actions),
                    "halted": s.halted,
                    "rewritten": s.rewrite is not None,
                    "reported_fill": s.reported_fill,
                    **s.last,
                }
                for s in reversed(self.sessions.values())
            ]
        return {"mode": self.mode.value, "sessions": sessions}

    def metrics_text(self) -> str:
        with self._lock:
            fills = [
                (
                    s.key,
                    s.style,
                    s.reported_fill if s.reported_fill is not None else int(s.last.get("fill", 0)),
                )
                for s in self.sessions.values()
            ]
            return self.metrics.render(fills)
