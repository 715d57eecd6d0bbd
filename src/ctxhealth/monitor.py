"""The :class:`Monitor`: feed it messages one by one, get an :class:`Assessment` per message.

This is what hooks, the proxy and SDK middleware call on every turn, so it is incremental and cheap:
each ``observe`` parses the one new message once, updates every detector in O(1) amortised time
with memory bounded by their windows, takes the turn's fill from the account, then builds the
decision snapshot, the risk score (the profile's model bound once to the feature functions) and the
decision. Importing this module pulls in neither click nor orjson.

What a caller acts on (action, reasons, rule, zone, pressure, risk, features, fill) is computed in
``observe``; the per-signal readings (``Assessment.signals``: values, evidence, explanations) are
deferred: the detectors' snapshots are taken when a signal is first read, or, if the assessment is
still held by someone, just before the next change to the detectors (a weak reference tells the
monitor; ``Monitor.last`` is dropped at the start of ``observe`` for that), so a reading always
shows the turn it was assessed at and a caller who never reads them does not pay for them.

Fill comes from accounting, the one fill account (:class:`~ctxhealth.accounting.running.RunningFill`):
at each model response the prompt it saw, as the provider reported it (``reported``), as the
caller gives it (``observe(message, fill=...)``; :meth:`Monitor.iter_session` feeds the turn
series of :func:`~ctxhealth.accounting.fill.account_session`, so ``check``'s fill and the fill
behind pressure are the same numbers), or estimated by accounting's own counting; between
responses the fill stays at the latest response's. The model's :class:`ModelInfo` (and with it
the window that pressure and the window zones divide by) is the session's: the window a log
states (Codex ``model_context_window``) wins over the registry's.

A compaction summary also resets the count of turns since the last reset (the agent compressed its
own history), so "too many turns" counts from the latest compaction.

``record_recovery(action)`` tells the monitor a recovery was carried out (restart, truncation,
history compression, tool-result clearing), which drives the circuit breaker and the cooldown.

``snapshot()`` saves the whole state as versioned JSON-safe data (bounded like the memory) and
``Monitor.restore(data)`` resumes it in any process, so a monitor can live across short-lived hook
processes: observe(m1..mk), snapshot, restore, observe(mk+1..mn) assesses exactly as one monitor would.
"""

from __future__ import annotations

import math
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from msgspec.structs import replace

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.accounting.running import RunningFill
from ctxhealth.accounting.types import FillSource, ModelInfo
from ctxhealth.errors import UsageError
from ctxhealth.model import Format, Message, Role, Session, ToolResult, Usage
from ctxhealth.policy import Action, Counters, Decision, Rule, Snapshot, decide, record
from ctxhealth.policy.profile import Profile, default_profile
from ctxhealth.risk.model import RiskModel, sigmoid
from ctxhealth.signals.base import Detector, LazySignals, Signal
from ctxhealth.signals.cache import CacheDetector
from ctxhealth.signals.drift import DriftDetector
from ctxhealth.signals.events import EventBuilder
from ctxhealth.signals.failures import FailureDetector
from ctxhealth.signals.fidelity import FidelityDetector
from ctxhealth.signals.hedging import count_event, count_hedges
from ctxhealth.signals.indicators import IndicatorDetector
from ctxhealth.signals.pressure import PressureTracker, Zone
from ctxhealth.signals.repetition import RepetitionDetector

if TYPE_CHECKING:
    from ctxhealth.accounting.fill import SessionAccount
    from ctxhealth.failures import Verdicts
    from ctxhealth.signals.state import MonitorState


class Assessment(msgspec.Struct, frozen=True):
    """The health of a session after one message.

    ``turn`` counts assistant responses so far; ``index`` is the message's position; ``zone``
    includes the early-warning raise (``base_zone`` is before it); ``signals`` maps each signal's
    name to its reading with evidence (message indices), built on first access; ``features`` are the
    risk model's inputs (only those the model uses; ``Monitor.features()`` gives them all).
    """

    turn: int
    index: int
    zone: Zone
    base_zone: Zone
    pressure: float
    risk: float | None
    action: Action
    reasons: tuple[str, ...]
    rule: Rule
    fill: int
    fill_source: FillSource
    model: str
    signals: Mapping[str, Signal] = msgspec.field(default_factory=dict)
    features: Mapping[str, float] = msgspec.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "index": self.index,
            "zone": self.zone.value,
            "base_zone": self.base_zone.value,
            "pressure": round(self.pressure, 4),
            "risk": None if self.risk is None else round(self.risk, 4),
            "action": self.action.value,
            "rule": self.rule.value,
            "reasons": list(self.reasons),
            "fill": self.fill,
            "fill_source": self.fill_source.value,
            "model": self.model,
            "signals": {name: s.to_dict() for name, s in self.signals.items()},
        }

    @property
    def healthy(self) -> bool:
        """True when the decision needs no intervention on the context.

        Continue, a warning, or routine history compression (a turn-count trigger that every long
        session meets) are healthy; re-anchor, clearing, truncation, restart and halt are not.
        """
        return self.action in (Action.CONTINUE, Action.WARN, Action.COMPRESS_HISTORY)

    def check_fields(self) -> dict[str, Any]:
        """The keys ``ctxhealth check`` adds: zone, pressure, risk, action, reasons, signals, healthy.

        ``healthy`` (the policy's verdict) replaces the check's fill-only rule and sets its exit code.
        """
        d = self.to_dict()
        return {
            "healthy": self.healthy,
            "zone": d["zone"],
            "pressure": d["pressure"],
            "risk": d["risk"],
            "action": d["action"],
            "reasons": d["reasons"],
            "signals": d["signals"],
        }


class OpenResponse(NamedTuple):
    """The latest response while a message may still continue it (:meth:`Monitor.update`): its id,
    its message index (``at``), and the usage counted for it (:meth:`Usage.merged` over its parts so far;
    None while none of them reported usage)."""

    response_id: str
    at: int
    usage: Usage | None


class Monitor:
    """Incremental health monitor for one session (one agent thread).

    ``model`` picks the tier and window from the model registry; when None, the first message that
    names a model sets it (unknown models get the compact tier, per the spec). ``profile`` defaults
    to :func:`~ctxhealth.policy.profile.default_profile` (spec thresholds + the shipped risk weights).
    ``track_hedges`` counts hedge words in every response (default: only when the profile's risk
    model uses the ``hedges`` feature, since it scans each response's text). ``source_format`` is
    the log's format when known: it picks the profile's risk model for that agent. The fill account
    needs no format: the readers mark the stand-ins a client writes in the model's place
    (``Message.synthetic``).
    """

    def __init__(
        self,
        model: str | None = None,
        profile: Profile | None = None,
        *,
        registry: ModelRegistry | None = None,
        info: ModelInfo | None = None,
        track_hedges: bool | None = None,
        source_format: Format | None = None,
    ) -> None:
        self.profile = profile if profile is not None else default_profile()
        self.registry = registry if registry is not None else ModelRegistry.default()
        self._model_fixed = model is not None or info is not None
        self.info = info if info is not None else self.registry.lookup(model)
        self.counters = Counters()
        self.index = -1
        self.turn = 0
        self.prompt_seen = 0
        """The largest prompt a response reported (:meth:`ModelInfo.with_prompt_seen`)."""
        self.account = RunningFill()
        self.output_tokens = 0
        self.reasoning_tokens = 0
        # whether any response reported usage: without it output tokens are unknown, not zero
        self.usage_seen = False
        self.hedges = 0
        # which model scores risk (check --json's risk_model): the log format decides when it is known
        self.source_format = source_format.value if source_format is not None else None
        self.risk_model = self.profile.risk_for(self.source_format)[1]
        self.profile = self.profile.for_format(self.source_format)
        # counting hedge words scans every response's text: only when the risk model uses them
        risk = self.profile.risk
        self._track_hedges = (
            (risk is not None and "hedges" in risk.features) if track_hedges is None else track_hedges
        )
        self._scorer = _Scorer(risk) if risk is not None else None
        self._events = EventBuilder()
        th = self.profile.zones(self.info)
        self.pressure = PressureTracker(self.info, self.profile)
        self.drift = DriftDetector(self.profile, th.sweet_spot)
        self.failures = FailureDetector(self.profile)
        self.repetition = RepetitionDetector(self.profile)
        self.indicators = IndicatorDetector(self.profile)
        self.fidelity = FidelityDetector(self.profile)
        self.cache = CacheDetector(self.profile)
        self._detectors: tuple[Detector, ...] = (
            self.pressure,
            self.drift,
            self.failures,
            self.repetition,
            self.indicators,
            self.fidelity,
            self.cache,
        )
        self.last: Assessment | None = None
        self._pending: weakref.ref[LazySignals] | None = None
        # what assess() needs from the latest update: the prompt pending since the latest response,
        # whether the cooldown ran down after it, and whether ``last`` is still its assessment
        self._pending_prompt: int | None = None
        self._cooldown_ran = False
        self._assessed = False
        # the latest response while only its own tool results followed it: a message with its id
        # continues it (see :meth:`_continues`)
        self._open: OpenResponse | None = None

    # ------------------------------------------------------------------ model and instruction

    def _seal(self) -> None:
        """Before the detectors change: the last assessment's signals, if someone still holds them,
        take their snapshots now (they are deferred until read, see ``LazySignals.deferred``)."""
        ref = self._pending
        if ref is not None:
            self._pending = None
            signals = ref()
            if signals is not None:
                signals.freeze()

    @property
    def fill(self) -> int:
        """The fill at the latest model response (0 before the first), from the account."""
        return self.account.fill

    @property
    def fill_source(self) -> FillSource:
        return self.account.source

    def _set_model(self, model_id: str) -> None:
        self.set_info(self.registry.lookup(model_id))

    def set_info(self, info: ModelInfo) -> None:
        """Use ``info`` (tier, window) from now on, e.g. the session's own, with the window its log
        states (``SessionAccount.model``)."""
        self._seal()
        self._assessed = False
        # a prompt already reported above its window proves the window larger (a model's 1M variant)
        self.info = info.with_prompt_seen(self.prompt_seen) if self.prompt_seen > info.window else info
        self.pressure.set_model(self.info)
        self.drift.sweet_spot = self.profile.zones(self.info).sweet_spot
        self.drift.changed()
        self._model_fixed = True

    def set_instruction(self, text: str, index: int | None = None) -> None:
        """Pin the original request (otherwise the first real user request is used); drift is still
        measured against the person's current request (see :mod:`ctxhealth.signals.requests`)."""
        self._seal()
        self._assessed = False
        self.drift.set_instruction(text, index)

    # ------------------------------------------------------------------ observing

    def observe(self, message: Message | Mapping[str, Any] | Any, *, fill: int | None = None) -> Assessment:
        """Assess the session after ``message``: :meth:`update` then :meth:`assess`. ``fill`` is its
        turn's fill when the caller knows it (a precomputed series, a log-level count): taken as
        reported.

        ``message`` is a :class:`Message`, or one message as an agent holds it: an OpenAI Chat
        Completions or Anthropic Messages dict (or SDK object), read by the same readers as files
        (:func:`~ctxhealth.sources.messages.read_messages`)."""
        self.update(message, fill=fill)
        return self.assess()

    def update(
        self, message: Message | Mapping[str, Any] | Any, *, fill: int | None = None, size: int | None = None
    ) -> None:
        """Take ``message`` into account without assessing: the cheap per-message step (the fill
        account, the counters and every detector). :meth:`assess` then gives the assessment after
        the latest message, the same one :meth:`observe` would have returned for it; a caller that
        needs an answer only at some messages (a whole session, each assistant turn, each request)
        updates on every message and assesses only there. ``size``: the message's
        :func:`~ctxhealth.accounting.running.message_size` when the caller has it already (an
        account's ``sizes``), else it is computed here."""
        if not isinstance(message, Message):
            self._update_raw(message, fill)
            return
        self.last = None
        self._assessed = False
        if self._pending is not None:
            self._seal()
        assistant = message.role is Role.ASSISTANT
        opened = self._open
        if opened is not None and self._continues(message, opened, assistant):
            self._update_continuation(message, opened, fill, size)
            return
        self.index += 1
        index = self.index
        compaction = message.compaction  # looked up once for the counters, the fill and the hedges
        c = self.counters
        if assistant:
            self.turn += 1
            c = self.counters = Counters(c.restarts, c.truncations, c.cooldown, c.steps + 1)
            if not self._model_fixed and message.model:
                self._set_model(message.model)
        elif c.steps and compaction is not None:
            # the agent compacted its own history: that is the reset the turn count waits for
            c = self.counters = Counters(c.restarts, c.truncations, c.cooldown, 0)
        account = self.account
        turn = account.observe(message, fill, size=size, compaction=compaction)
        if turn and account.fill > self.prompt_seen and account.source is FillSource.REPORTED:
            self._prompt_reported(account.fill)
        # a message after the latest response is part of the prompt about to be sent
        self._pending_prompt = account.pending if not turn and fill is None else None
        if assistant:
            usage = message.usage
            if usage is not None:
                self.output_tokens += usage.output_tokens
                self.reasoning_tokens += usage.reasoning_tokens
                self.usage_seen = True
            rid = message.response_id
            self._open = None if rid is None else OpenResponse(rid, index, usage)
        event = self._events.build(index, message, self.turn, account.fill)
        if assistant and self._track_hedges:
            if compaction is not None:
                self.hedges += count_hedges(message.text)
            elif event.text:
                # the text blocks are the whole visible text: reuse the event's word runs
                self.hedges += count_event(event)
        for detector in self._detectors:
            detector.update(event)
        # the cooldown runs down after the turn it was assessed at: assess() reads it one higher
        if assistant and c.cooldown > 0:
            self.counters = Counters(c.restarts, c.truncations, c.cooldown - 1, c.steps)
            self._cooldown_ran = True
        else:
            self._cooldown_ran = False

    def _prompt_reported(self, tokens: int) -> None:
        """Keep ``tokens`` as the largest prompt reported; a prompt above the window widens it to the
        variant it proves (:meth:`ModelInfo.with_prompt_seen`), the model left as fixed as it was."""
        self.prompt_seen = tokens
        if tokens > self.info.window:
            wider = self.info.with_prompt_seen(tokens)
            if wider is not self.info:
                fixed = self._model_fixed
                self.set_info(wider)
                self._model_fixed = fixed

    def _continues(self, message: Message, opened: OpenResponse, assistant: bool) -> bool:
        """Whether ``message`` is more of the open response (its id, with only that response's tool
        results in between), else closes it. A reader that builds whole responses never gives one
        (it merges them, by the same rule); a reader of a growing log gives one when a read stops
        between the lines of a response (Claude Code writes a line per content block)."""
        if assistant:
            if message.response_id == opened.response_id:
                return True
        elif message.role is Role.USER and _results_only(message):
            return False  # its own tool results: it stays open
        self._open = None
        return False

    def _update_continuation(
        self, message: Message, opened: OpenResponse, fill: int | None, size: int | None
    ) -> None:
        """:meth:`update` with more of the open response: the same turn and message index as its
        start, its blocks given to the detectors, its usage counted as one response's (the largest
        output reported, as the readers merge a response's lines)."""
        if not self._model_fixed and message.model:
            self._set_model(message.model)
        account = self.account
        account.observe(message, fill, size=size)
        if fill is not None or self._pending_prompt is not None:
            # the prompt pending since the response (its tool results) now holds this part too
            self._pending_prompt = account.pending if fill is None else None
        usage = message.usage
        if usage is not None:
            kept = opened.usage
            merged = usage if kept is None else kept.merged(usage)
            if merged is not kept:
                counted = Usage() if kept is None else kept
                self.output_tokens += merged.output_tokens - counted.output_tokens
                self.reasoning_tokens += merged.reasoning_tokens - counted.reasoning_tokens
                self._open = opened._replace(usage=merged)
            self.usage_seen = True
        event = self._events.build(opened.at, message, self.turn, account.fill, continues=True)
        if self._track_hedges and event.text:
            self.hedges += count_event(event)
        for detector in self._detectors:
            detector.update(event)

    def assess(self) -> Assessment:
        """The assessment after the latest message given to :meth:`update` (what a caller acts on:
        action, reasons, rule, zone, pressure, risk, features, fill); computed once per update and
        kept as :attr:`last` until the next change. Before any message: the reading of "nothing
        seen yet"."""
        last = self.last
        if last is not None and self._assessed:
            return last
        counters = self.counters
        if self._cooldown_ran:
            counters = Counters(
                counters.restarts, counters.truncations, counters.cooldown + 1, counters.steps
            )
        assessment = self._assess(max(self.index, 0), self.account.fill, self._pending_prompt, counters)
        self.last = assessment
        self._assessed = True
        return assessment

    def _update_raw(self, raw: Any, fill: int | None) -> None:
        from ctxhealth.sources.messages import plain, read_messages

        item = plain(raw)
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            raise UsageError(
                f"cannot observe a {type(raw).__name__}: not a message",
                hint="pass a ctxhealth Message or a message dict with a 'role' "
                "(OpenAI Chat Completions or Anthropic Messages shape)",
            )
        session = read_messages([item], format=_message_format(item), name="<message>")
        if not session.messages:
            raise UsageError(
                f"cannot observe the message {str(item)[:80]!r}",
                hint="; ".join(w.reason for w in session.warnings) or "give it a role and content",
            )
        for message in session.messages:
            self.update(message, fill=fill)

    def _indicators_fired(self) -> list[str]:
        fired = self.indicators.fired()
        if self.repetition.repeated_fired:
            fired.insert(0, "repeated tool calls")
        return fired

    def _assess(
        self, index: int, fill: int, pending: int | None = None, counters: Counters | None = None
    ) -> Assessment:
        """``pending``: the context with the messages since the latest response (the prompt about to
        be sent); it decides when it reads a worse zone than the latest response's fill (a huge
        tool result not sent yet), and is then the assessment's fill."""
        p = self.profile
        tracker = self.pressure
        fired = self.indicators.fired_count() + self.repetition.repeated_fired
        base_zone = tracker.zone
        pressure = tracker.pressure
        capacity = tracker.capacity
        fill_source = self.fill_source
        pending_reason: tuple[str, ...] = ()
        if pending is not None and pending > fill:
            pending_zone, pending_pressure = tracker.reading(pending)
            if pending_zone.level > base_zone.level:
                base_zone, pressure, fill = pending_zone, max(pressure, pending_pressure), pending
                capacity = max(capacity, pending / tracker.usable)
                fill_source = FillSource.ESTIMATED
                pending_reason = (f"pending prompt ~{pending:,} tokens (messages since the latest response)",)
        zone = base_zone.raised() if fired >= p.indicators_to_raise_zone else base_zone
        scorer = self._scorer
        risk: float | None
        if scorer is not None:
            features, risk = scorer(self)
        else:
            features, risk = {}, None
        failures = self.failures
        drift = self.drift
        cache = self.cache
        snapshot = Snapshot(
            zone=zone,
            pressure=pressure,
            fill=fill,
            utilisation=capacity,
            failure_rate=failures.rate,
            recent_calls=len(failures.window),
            # drift counts once a whole window was written for the current request
            drift=drift.similarity if drift.measured else 1.0,
            above_sweet_spot=drift.fill >= drift.sweet_spot,
            same_mistake=failures.same_mistake_count,
            consecutive_failures=failures.streak_len,
            indicators=fired,
            risk=risk,
            cache_hit_rate=1.0 if cache.rate is None else cache.rate,
            low_cache_turns=cache.low_turns,
        )
        decision: Decision = decide(snapshot, self.counters if counters is None else counters, p)
        reasons = (*decision.reasons, *pending_reason) if pending_reason else decision.reasons
        if zone is not base_zone:
            names = ", ".join(self._indicators_fired())
            reasons = (*reasons, f"zone raised {base_zone.value} → {zone.value}: {names}")
        if decision.rule is Rule.WARNING and risk is not None and risk >= p.risk_warning and p.risk:
            reasons = (*reasons, risk_drivers(p.risk, features))
        # the signals' snapshots are taken when first read (or before the detectors next change)
        signals = LazySignals.deferred(self._detectors)
        self._pending = weakref.ref(signals)
        return Assessment(
            turn=self.turn,
            index=index,
            zone=zone,
            base_zone=base_zone,
            pressure=pressure,
            risk=risk,
            action=decision.action,
            reasons=reasons,
            rule=decision.rule,
            fill=fill,
            fill_source=fill_source,
            model=self.info.id,
            signals=signals,
            features=features,
        )

    def features(self, names: Iterable[str] | None = None) -> dict[str, float]:
        """The risk model's inputs (``names`` only, when given), normalised per turn where a count
        would just measure length; a feature the log cannot report yet is left out (missing)."""
        table = _FEATURES
        wanted = table if names is None else [n for n in names if n in table]
        out = {}
        for n in wanted:
            value = table[n](self)
            if value is not None:
                out[n] = value
        return out

    # ------------------------------------------------------------------ recovery bookkeeping

    def record_recovery(self, action: Action, *, fill: int | None = None) -> None:
        """Tell the monitor ``action`` was carried out (drives circuit breaker and cooldown).

        ``fill`` is the context size after the recovery, when known (else the next reported usage
        corrects it).
        """
        self._seal()
        self._assessed = False
        self._cooldown_ran = False
        self.counters = record(self.counters, action, self.profile)
        if action is Action.RESTART:
            self.failures.reset()
        elif action is Action.CLEAR_TOOL_RESULTS:
            self.failures.reset_mistakes()
        if fill is not None:
            self.account.set_fill(fill)

    # ------------------------------------------------------------------ saving and resuming

    def serialize(self) -> MonitorState:
        """The monitor's whole state, field by field (:class:`~ctxhealth.signals.state.MonitorState`:
        bounded like the monitor's memory). The profile, the registry, the model's figures and the
        last assessment are not part of it."""
        from ctxhealth.signals.state import AccountState, CountersState, MonitorState, OpenResponseState

        c = self.counters
        a = self.account.dump_state()
        return MonitorState(
            index=self.index,
            turn=self.turn,
            output_tokens=self.output_tokens,
            reasoning_tokens=self.reasoning_tokens,
            usage_seen=self.usage_seen,
            hedges=self.hedges,
            source_format=self.source_format,
            track_hedges=self._track_hedges,
            counters=CountersState(c.restarts, c.truncations, c.cooldown, c.steps),
            account=AccountState(
                chars_per_token=a["chars_per_token"],
                fill=a["fill"],
                peak=a["peak"],
                turns=a["turns"],
                source=a["source"],
                chars=a["_chars"],
                system_chars=a["_system_chars"],
                anchor_fill=a["_anchor_fill"],
                anchor_chars=a["_anchor_chars"],
                hidden=a["_hidden"],
                seen=a["_seen"],
            ),
            pending_calls=self._events.serialize(),
            pressure=self.pressure.serialize(),
            drift=self.drift.serialize(),
            failures=self.failures.serialize(),
            repetition=self.repetition.serialize(),
            indicators=self.indicators.serialize(),
            fidelity=self.fidelity.serialize(),
            cache=self.cache.serialize(),
            pending_prompt=self._pending_prompt,
            cooldown_ran=self._cooldown_ran,
            open_response=None if self._open is None else OpenResponseState(*self._open),
            prompt_seen=self.prompt_seen,
        )

    def _load(self, state: MonitorState) -> None:
        """Take ``state`` (from :meth:`serialize`) as this freshly built monitor's own."""
        self.index = state.index
        self.turn = state.turn
        self.output_tokens = state.output_tokens
        self.reasoning_tokens = state.reasoning_tokens
        self.usage_seen = state.usage_seen
        self.hedges = state.hedges
        self.source_format = state.source_format
        self._track_hedges = state.track_hedges
        c = state.counters
        self.counters = Counters(
            restarts=c.restarts, truncations=c.truncations, cooldown=c.cooldown, steps=c.steps
        )
        a = state.account
        self.account.load_state(
            {
                "chars_per_token": a.chars_per_token,
                "fill": a.fill,
                "peak": a.peak,
                "turns": a.turns,
                "source": a.source,
                "_chars": a.chars,
                "_system_chars": a.system_chars,
                "_anchor_fill": a.anchor_fill,
                "_anchor_chars": a.anchor_chars,
                "_hidden": a.hidden,
                "_seen": a.seen,
            }
        )
        self._events.restore(state.pending_calls)
        self.pressure.restore(state.pressure)
        self.drift.restore(state.drift)
        self.failures.restore(state.failures)
        self.repetition.restore(state.repetition)
        self.indicators.restore(state.indicators)
        self.fidelity.restore(state.fidelity)
        self.cache.restore(state.cache)
        self._pending_prompt = state.pending_prompt
        self._cooldown_ran = state.cooldown_ran
        if state.prompt_seen > self.prompt_seen:
            self._prompt_reported(state.prompt_seen)
        o = state.open_response
        self._open = None if o is None else OpenResponse(o.response_id, o.at, o.usage)

    def snapshot(self) -> dict[str, Any]:
        """The monitor's whole state as versioned JSON-safe data (:meth:`serialize`, bounded like the
        monitor's memory).

        :meth:`restore` in any process, with the same profile, gives a monitor that assesses the
        following messages exactly as this one would. The last assessment is not kept.
        """
        from ctxhealth.signals.state import to_data

        return {
            "kind": SNAPSHOT_KIND,
            "version": SNAPSHOT_VERSION,
            "model": self.info.id,
            "model_fixed": self._model_fixed,
            "state": to_data(self.serialize()),
        }

    @classmethod
    def restore(
        cls,
        data: Mapping[str, Any],
        model: str | None = None,
        profile: Profile | None = None,
        *,
        registry: ModelRegistry | None = None,
        info: ModelInfo | None = None,
    ) -> Monitor:
        """A monitor resumed from :meth:`snapshot` data (of this version, or of the version before:
        the states the hooks and the proxy saved before this format). ``model`` / ``info`` fix the
        model (else the saved one is looked up again); ``profile`` should be the one the snapshot
        was taken with.

        Raises :class:`~ctxhealth.errors.StateError` when ``data`` is not a snapshot of a version
        this code reads, or is damaged.
        """
        import msgspec

        from ctxhealth.errors import StateError
        from ctxhealth.signals.state import from_data

        version = data.get("version")
        if data.get("kind") != SNAPSHOT_KIND or version not in (SNAPSHOT_VERSION, LEGACY_SNAPSHOT_VERSION):
            raise StateError(
                f"not a monitor snapshot of version {SNAPSHOT_VERSION}",
                hint="start a fresh monitor (the saved state is from another ctxhealth version)",
            )
        fixed = model is not None or info is not None
        try:
            state: MonitorState
            if version == LEGACY_SNAPSHOT_VERSION:
                from ctxhealth.signals.legacy_state import monitor_state

                state = monitor_state(data["state"])
            else:
                state = from_data(data["state"])
            m = cls(model if fixed else str(data["model"]), profile, registry=registry, info=info)
            m._model_fixed = fixed or bool(data["model_fixed"])
            m._load(state)
            if m.source_format is not None:  # the risk model of the log format, as before the save
                m.risk_model = m.profile.risk_for(m.source_format)[1]
                m.profile = m.profile.for_format(m.source_format)
                risk = m.profile.risk
                m._scorer = _Scorer(risk) if risk is not None else None
        except (KeyError, TypeError, ValueError, AttributeError, msgspec.ValidationError) as exc:
            raise StateError(
                f"damaged monitor snapshot: {exc!r}",
                hint="start a fresh monitor (the saved state cannot be read)",
            ) from exc
        return m

    # ------------------------------------------------------------------ whole sessions

    def iter_session(
        self, session: Session, upto: float | None = None, *, account: SessionAccount | None = None
    ) -> Iterator[Assessment]:
        """One assessment per message of ``session`` (only its first ``upto`` fraction of turns).

        The fill at each turn is ``account``'s (accounted here when not given): the same series
        ``check`` reports. Unless the caller fixed the model, the account's :class:`ModelInfo` is
        used, with the window the log states.
        """
        for _ in self.update_session(session, upto, account=account):
            yield self.assess()

    def update_session(
        self, session: Session, upto: float | None = None, *, account: SessionAccount | None = None
    ) -> Iterator[int]:
        """:meth:`update` with each message of ``session`` (its first ``upto`` fraction of turns),
        yielding the message's index after each: the caller calls :meth:`assess` where it wants an
        answer (see :meth:`iter_session` for the fill and the model)."""
        from ctxhealth.accounting.fill import account_session, session_model_id

        if account is None:
            own = self.registry.lookup(session_model_id(session)).id
            # a model the caller fixed is an override, unless it is the session's own model
            fixed = self.info.id if self._model_fixed and self.info.id != own else None
            account = account_session(session, registry=self.registry, model=fixed)
        if not self._model_fixed or account.model.id == self.info.id:
            self.set_info(account.model)
            self._model_fixed = True
        if self.index < 0:
            self.account = RunningFill()
        self._use_format(session.format.value)
        stop = cut_index(session, upto)
        fills = {t.message_index: t.tokens for t in account.turns}
        update = self.update
        # each message sized once: by the accounting when it sized them (see SessionAccount.sizes)
        sized = account.sizes if account.session is session else None
        sizes: Iterable[int | None] = repeat(None) if sized is None else sized
        # (the sizes run to the session's end, or on without end: the messages cut at ``stop`` set the length)
        for i, (message, size) in enumerate(zip(session.messages[:stop], sizes, strict=False)):
            update(message, fill=fills.get(i), size=size)
            yield i

    def _use_format(self, format: str) -> None:
        """Score risk with the model for this log format (see :meth:`Profile.risk_for`: a model
        fitted on that agent's labelled runs, the profile's model when it was fitted on this format,
        else the fill fallback), when nothing was observed yet."""
        if self.index >= 0:
            return
        self.source_format = format
        model, self.risk_model = self.profile.risk_for(format)
        if model is self.profile.risk:
            return
        self.profile = self.profile.for_format(format)
        risk = self.profile.risk
        self._track_hedges = self._track_hedges or (risk is not None and "hedges" in risk.features)
        self._scorer = _Scorer(risk) if risk is not None else None

    def judge_with(self, verdicts: Verdicts) -> None:
        """Judge tool results with ``verdicts``: the table the accounting of the same session
        filled (:class:`ctxhealth.failures.Verdicts`), so a result is judged once."""
        self._events.failed = verdicts

    def observe_session(
        self, session: Session, upto: float | None = None, *, account: SessionAccount | None = None
    ) -> Assessment:
        """Feed a whole session (or its first ``upto`` fraction of turns); the last assessment."""
        before = self.index
        # one assessment, after the last message: the updates before it assess nothing
        deque(self.update_session(session, upto, account=account), maxlen=0)
        if self.index == before:
            return self._assess(max(self.index, 0), self.fill)
        return self.assess()


def _results_only(message: Message) -> bool:
    """Whether ``message`` holds tool results and nothing else (a loop: no generator per message)."""
    blocks = message.blocks
    for b in blocks:
        if type(b) is not ToolResult:
            return False
    return bool(blocks)


_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"})


def _message_format(item: dict[str, Any]) -> str:
    """``"anthropic"`` for a message with Anthropic-only content blocks, else ``"openai"``."""
    content = item.get("content")
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in content
    ):
        return "anthropic"
    return "openai"


RISK_DRIVERS = 3
"""At most this many features are named when a warning gives the risk score as a reason."""


def risk_drivers(model: RiskModel, features: Mapping[str, float]) -> str:
    """The features that push ``model``'s score up the most, with their share of the log-odds
    (what to look at when risk is a reason to warn)."""
    shares = sorted(model.contributions(features).items(), key=lambda kv: (-kv[1], kv[0]))
    top = [f"{name.replace('_', ' ')} {value:+.2f}" for name, value in shares[:RISK_DRIVERS] if value > 0.0]
    return "risk driven by: " + (", ".join(top) if top else "no single feature (the bias)")


class _Scorer:
    """The profile's risk model bound to the monitor's feature functions once, so scoring a turn
    looks no names up: one call gives the features the model reads and its score
    (:meth:`RiskModel.linear_values`, the same arithmetic as :meth:`RiskModel.score`).

    The score is a function of the feature values alone: when a turn's values are the ones of the
    turn scored before (a message that moved none of them: most tool results), the kept score is
    given again instead of being recomputed (not when a value is zero, whose sign a comparison
    does not see)."""

    __slots__ = ("_risk", "_values", "fns", "model", "names")

    def __init__(self, model: RiskModel) -> None:
        self.model = model
        self.names = model.features
        self.fns = tuple(_FEATURES.get(name, _unknown) for name in model.features)
        self._values: list[float | None] | None = None
        self._risk = 0.0

    def __call__(self, monitor: Monitor) -> tuple[dict[str, float], float]:
        values = [f(monitor) for f in self.fns]
        # ``fns`` is built from ``names``: the same length
        features = {n: v for n, v in zip(self.names, values, strict=False) if v is not None}
        if values == self._values and 0.0 not in values:
            return features, self._risk
        risk = self._risk = sigmoid(self.model.linear_values(values))
        self._values = values
        return features, risk


def _unknown(monitor: Monitor) -> None:
    """A feature the monitor does not compute: missing (the model counts it as its mean)."""
    return None


SNAPSHOT_KIND = "ctxhealth.monitor"
SNAPSHOT_VERSION = 4
"""Bumped whenever the saved state changes shape; a snapshot of another version is refused, not
misread (but for :data:`LEGACY_SNAPSHOT_VERSION`, read by :mod:`ctxhealth.signals.legacy_state`)."""
LEGACY_SNAPSHOT_VERSION = 3
"""The reflective format before :class:`~ctxhealth.signals.state.MonitorState`: still read."""


def _turns(m: Monitor) -> int:
    return m.turn if m.turn > 0 else 1


_FEATURES: dict[str, Callable[[Monitor], float | None]] = {
    "turns": lambda m: float(m.turn),
    "peak_fill": lambda m: float(m.pressure.peak),
    "fill": lambda m: float(m.pressure.fill),
    "fill_growth": lambda m: (m.pressure.fill - m.pressure.first_fill) / _turns(m) / 1000.0,
    # missing when no response reported usage (SWE-agent, tau-bench logs): unknown, not zero
    "output_tokens": lambda m: float(m.output_tokens) if m.usage_seen else None,
    "output_per_turn": lambda m: m.output_tokens / _turns(m) if m.usage_seen else None,
    # missing until a response reports reasoning tokens (Claude Code logs never do: its thinking is
    # part of the output tokens), so a log that cannot report them is not scored as "no reasoning"
    "reasoning_tokens": lambda m: float(m.reasoning_tokens) if m.reasoning_tokens else None,
    "hedges": lambda m: m.hedges / _turns(m),
    "failure_rate": lambda m: (
        m.failures.total_failures / m.failures.total_calls if m.failures.total_calls else 0.0
    ),
    "max_consecutive_failures": lambda m: float(m.failures.max_streak),
    "repeated_calls": lambda m: m.repetition.repeats.total / _turns(m),
    "rereads": lambda m: m.repetition.rereads.total / _turns(m),
    "edits": lambda m: float(m.repetition.total_edits),
    "files_edited": lambda m: float(len(m.repetition.files_edited)),
    "edit_thrash": lambda m: m.repetition.thrash.total / _turns(m),
    "verify_share": lambda m: m.fidelity.verifications / _turns(m),
    "since_verification": lambda m: m.fidelity.turns_since_verification / _turns(m),
    "drift": lambda m: 1.0 - m.drift.similarity,
    "contradictions": lambda m: m.indicators.contradictions.total / _turns(m),
    "over_explanation": lambda m: m.indicators.repeated_sentences / _turns(m),
    "assistant_chars": lambda m: m.indicators.assistant_chars / _turns(m),
    "pressure": lambda m: m.pressure.pressure,
}
"""Every risk feature by name, each a function of the monitor's current state (O(1))."""

FEATURE_NAMES: tuple[str, ...] = tuple(_FEATURES)
"""Every feature :meth:`Monitor.features` may give (one the log cannot report yet is left out)."""


def cut_index(session: Session, upto: float | None) -> int:
    """Messages to keep for "the first ``upto`` of the turns": up to, not including, the first
    assistant message after the ``ceil(upto * turns)``-th one (its tool results stay)."""
    n = len(session.messages)
    if upto is None or upto >= 1.0:
        return n
    turns = session.assistant_turns
    keep = max(1, math.ceil(max(0.0, upto) * turns))
    seen = 0
    for i, m in enumerate(session.messages):
        if m.role is Role.ASSISTANT:
            seen += 1
            if seen > keep:
                return i
    return n


def session_prefix(session: Session, upto: float | None) -> Session:
    """``session`` cut to its first ``upto`` fraction of turns (the same session when None or >= 1)."""
    stop = cut_index(session, upto)
    if stop >= len(session.messages):
        return session
    return replace(
        session,
        messages=session.messages[:stop],
        reported_fill={i: f for i, f in session.reported_fill.items() if i < stop},
    )


def assess(session: Session, *, upto: float | None = None, profile: Profile | None = None) -> Assessment:
    """Assess a whole session with a fresh :class:`Monitor` (the model taken from the session)."""
    return Monitor(session.model, profile).observe_session(session, upto)
