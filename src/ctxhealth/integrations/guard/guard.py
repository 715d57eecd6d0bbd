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
from ctxhealth.integrations.wire.anthropic import requested_model
from ctxhealth.integrations.wire.base import ApiError, attach_usage, canonical
from ctxhealth.integrations.wire.gemini import model_in_path
from ctxhealth.integrations.wire.harness import (
    HarnessRequest,
    agent_of,
    agent_session_id,
    find_harness_request,
    gemini_utility,
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
MAX_FORKS = 16
"""Sessions that share one name or one first-message digest, at most (then the least recently
used one is reset)."""


def fork_key(family: str, n: int) -> str:
    """The ``n``-th session of a family: the family's key itself, then ``key#2``, ``key#3`` ..."""
    return family if n == 1 else f"{family}#{n}"


def system_digest(adapter: WireAdapter, body: Mapping[str, Any], items: list[Any]) -> str:
    """A digest of the request's system prompt (the head, or Chat Completions' leading system or
    developer message): what a named session keeps through its agent's compactions."""
    head = adapter.head(dict(body))
    if (
        head is None
        and items
        and isinstance(items[0], dict)
        and items[0].get("role") in ("system", "developer")
    ):
        head = items[0]
    return hashlib.blake2b(canonical(head), digest_size=8).hexdigest()


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
        window: int | None = None,
        window_is_usable: bool = False,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        self.mode = mode
        self.store: SessionStore = store if store is not None else MemoryStore()
        self.profile = profile
        self.registry = registry
        self.model = model
        self.window = window
        """The window the agent works with, when the proxy is told it (no request states it: Codex CLI
        compacts at 95% of its own ``model_context_window``, not the model's); ``window_is_usable``:
        it is already what the prompt may fill (as Codex states it), else the model's reserve applies."""
        self.window_is_usable = window_is_usable
        self.max_sessions = max_sessions
        self.sessions: OrderedDict[str, GuardSession] = OrderedDict()
        self.metrics = Metrics()
        self._responses: OrderedDict[str, str] = OrderedDict()  # response id -> session key
        # the agent's own session id -> the session whose agent just compacted itself (its next
        # request starts from the summary, so its digest is new: it still is the same session)
        self._compacted: OrderedDict[str, str] = OrderedDict()
        self._aliases: OrderedDict[str, str] = OrderedDict()  # digest key -> session key
        # a session name or a conversation digest -> the keys of the sessions that share it
        self._families: OrderedDict[str, list[str]] = OrderedDict()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ sessions

    def _new_monitor(self, model: str | None) -> Monitor:
        return self._with_window(Monitor(self.model or model, self.profile, registry=self.registry))

    def _with_window(self, monitor: Monitor) -> Monitor:
        """``monitor`` with the window the proxy was told (:attr:`window`), once its model is known."""
        window = self.window
        if window and monitor.info.known and monitor.info.window != window:
            usable = self.window_is_usable
            monitor.set_info(monitor.info.with_window(window, usable=usable, origin="--window"))
        return monitor

    def _session(self, key: str, style: ApiStyle, model: str | None) -> GuardSession:
        session = self._known(key)
        if session is None:
            session = self._keep(GuardSession(key, style.value, self._new_monitor(model)))
        return session

    def _known(self, key: str) -> GuardSession | None:
        """The session ``key`` in memory or saved in the store, or None."""
        session = self.sessions.get(key)
        if session is not None:
            self.sessions.move_to_end(key)
            return session
        try:
            data = self.store.load(key)
        except LedgerError:
            data = None  # an unreadable ledger must not stop the traffic: start the session afresh
        if data is None:
            return None
        try:
            monitor = Monitor.restore(data["monitor"], self.model, self.profile, registry=self.registry)
            return self._keep(GuardSession.load(data, self._with_window(monitor)))
        except (StateError, KeyError, TypeError, ValueError):
            return None  # from another version, or damaged: start afresh

    def _keep(self, session: GuardSession) -> GuardSession:
        session.saved = time.monotonic()  # ``max_age`` counts from when this process took it up
        self.sessions[session.key] = session
        while len(self.sessions) > self.max_sessions:
            old_key, old = self.sessions.popitem(last=False)
            if old.dirty:
                self.store.save(old_key, old.dump())
        return session

    def _members(self, family: str) -> list[GuardSession]:
        """The sessions of ``family`` (a name or a digest), as known in memory or in the store."""
        keys = self._families.get(family)
        if keys is None:
            keys = []
            for n in range(1, MAX_FORKS + 1):
                if self._known(fork_key(family, n)) is None:
                    break
                keys.append(fork_key(family, n))
            self._families[family] = keys
            while len(self._families) > MAX_ALIASES:
                self._families.popitem(last=False)
        else:
            self._families.move_to_end(family)
        members = [s for s in map(self._known, keys) if s is not None]
        if len(members) < len(keys):
            keys[:] = [s.key for s in members]
        return members

    def _member(
        self, adapter: WireAdapter, body: dict[str, Any], items: list[Any], family: str, named: bool
    ) -> tuple[str, dict[int, bytes] | None]:
        """Which session of ``family`` a request belongs to, and the chains it computed for that.

        The one whose conversation the request extends (the longest, then the latest); for a name,
        else the latest one with the same system prompt (its agent compacted or edited it: a reset);
        else a new session of the family (another client with the same first message, or the same
        name), so one conversation never resets another's session."""
        members = self._members(family)
        if not members:
            self._families[family].append(family)
            return family, None
        marks = {len(items)}
        for s in members:
            marks.add(s.count)
            if s.rewrite is not None:
                marks.add(s.rewrite.count)
        chains = chain_values(adapter.style.value, adapter.head(body), items, marks)
        extended = [s for s in members if s.count == 0 or chains.get(s.count) == s.chain]
        if extended:
            return max(extended, key=lambda s: (s.count, s.touched)).key, chains
        latest = sorted(members, key=lambda s: s.touched, reverse=True)
        if named:
            system = system_digest(adapter, body, items)
            same = next((s for s in latest if s.system == system), None)
            if same is not None:
                return same.key, chains
        keys = self._families[family]
        if len(keys) >= MAX_FORKS:
            return latest[-1].key, chains  # the least recently used one is reset
        n = next(n for n in range(1, MAX_FORKS + 2) if fork_key(family, n) not in keys)
        keys.append(fork_key(family, n))
        return fork_key(family, n), chains

    def _key(
        self, adapter: WireAdapter, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> tuple[str, str | None]:
        """The session, and the family it is chosen from (:meth:`_member`) when the key names a
        family rather than one conversation: ``x-ctxhealth-session`` (a family); a continued
        response's session; else the agent's own session id
        (:func:`~ctxhealth.integrations.wire.harness.agent_session_id`) with the digest of the first
        user message (an agent's sub-agents share its id but not their conversation); else the
        digest of the system prompt and first user message (a family). After the agent compacted
        itself, its next request with a new digest joins the compacted session."""
        style = adapter.style.value
        given = headers.get(SESSION_HEADER)
        if given:
            given = given.strip()[:200]
            if redact(given) != given:  # a secret used as a session id: keep only its digest
                given = "id-" + hashlib.sha256(given.encode()).hexdigest()[:24]
            return f"{style}:{given}", f"{style}:{given}"
        previous = body.get("previous_response_id")
        if isinstance(previous, str) and previous in self._responses:
            return self._responses[previous], None
        agent_id = agent_session_id(headers, body)
        if agent_id is None:
            digest = f"{style}:{session_digest(style, adapter.session_seed(dict(body)))}"
            return digest, digest
        first = next(
            (i for i in adapter.items(dict(body)) if isinstance(i, dict) and i.get("role") == "user"), None
        )
        key = f"{style}:{agent_id}:{session_digest(style, canonical(first).decode())}"
        alias = self._aliases.get(key)
        if alias is not None:
            return alias, None
        if key not in self.sessions:
            compacted = self._compacted.pop(agent_id, None)
            if compacted is not None and compacted in self.sessions:
                self._aliases[key] = compacted
                while len(self._aliases) > MAX_ALIASES:
                    self._aliases.popitem(last=False)
                return compacted, None
        return key, None

    # ------------------------------------------------------------------ requests

    def plan(
        self, style: ApiStyle, raw: bytes, headers: Mapping[str, str], *, path: str | None = None
    ) -> Plan:
        """Decide what to send for one request body (see the module docstring). ``path``: the
        request's path, where an API names the model (Gemini) and its kind of call."""
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            return Plan(None, style)  # not ours to judge: the provider answers it
        with self._lock:
            try:
                adapter = ADAPTERS[style]
                named = model_in_path(path) if path is not None and style is ApiStyle.GEMINI else None
                if named is not None and gemini_utility(
                    path or "", headers, adapter.items(body), adapter.head(body)
                ):
                    self.metrics.forwarded += 1
                    return Plan(None, style)  # Gemini CLI's own side call (routing, checks): not the chat
                return self._plan(adapter, body, headers, named)
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

    def _plan(
        self, adapter: WireAdapter, body: dict[str, Any], headers: Mapping[str, str], named: str | None = None
    ) -> Plan:
        style = adapter.style
        self.metrics.requests[(style.value, self.mode.value)] += 1
        model = body.get("model") if isinstance(body.get("model"), str) else named
        if style is ApiStyle.ANTHROPIC_MESSAGES:
            model = requested_model(model, headers)  # (the 1M context asked for by a beta header)
        items = adapter.items(body)
        continued = isinstance(body.get("previous_response_id"), str)
        key, family = self._key(adapter, body, headers)
        chains: dict[int, bytes] | None = None
        if family is not None and not continued:
            key, chains = self._member(adapter, body, items, family, SESSION_HEADER in headers)
        session = self._session(key, style, model)
        session.requests += 1
        session.dirty = True
        session.touched = time.monotonic()
        if session.agent is None:
            agent = agent_of(headers)
            session.agent = agent.value if agent is not None else None
        harness = find_harness_request(items, adapter.head(body))
        if harness is not None:
            return self._harness(adapter, body, headers, session, items, harness)
        reset = False
        if continued:
            # the provider holds the history: every item here is new, nothing can be rewritten
            new_items, with_head = items, session.count == 0
        else:
            count = session.count
            marks = {count, len(items)}
            if session.rewrite is not None:
                marks.add(session.rewrite.count)
            if chains is None or not marks <= chains.keys():
                chains = chain_values(style.value, adapter.head(body), items, marks)
            session.system = system_digest(adapter, body, items)
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
            "usable_window": session.monitor.info.usable_window,
            "tool_calls": session.monitor.failures.total_calls,
            "tool_errors": session.monitor.failures.total_failures,
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
