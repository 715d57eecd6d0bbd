"""Context fill per turn, compactions, tool counts and cost of one session: :func:`account_session`.

Fill at a turn is the size of the prompt the model saw for that response. Sources, best first:

1. ``reported`` — the provider's usage for the response (``Usage.context_tokens``), or a fill
   the log states outside any message (``Session.reported_fill``, e.g. Codex ``token_count``).
2. ``exact`` — an offline BPE count of the running context (system + every message so far;
   a compaction summary resets the context to system + summary) for models with an
   o200k / cl100k encoding.
3. ``estimated`` — the same running context in characters, turned into tokens with a
   chars-per-token ratio calibrated on the session's own reported turns when it has some
   (mixed logs), else the spec's 4.0.

A turn is :func:`~ctxhealth.accounting.running.is_turn` and the estimate is
:class:`~ctxhealth.accounting.running.RunningFill`'s, the one estimator the hosts use: a turn
without a report is the latest reported fill plus what the context grew by since, in tokens
(exact) or characters over the ratio (estimated); before any report, or after a compaction, what
the last report held beyond the counted context (system prompt, tool definitions) plus the
counted context. Calibration only picks the ratio: it fits ``reported ≈ hidden[segment] + chars /
chars_per_token`` over the reported turns, one ``hidden`` per stretch between compactions, so what
the log never shows does not skew it. On the real Claude Code sessions, hiding every other
response's usage and estimating it back from the rest is off by well under 5% on average
(``tests/test_accounting_real_data.py``). Everything is a few passes over the messages with
running sums: linear time.

Window: the log's own (``Session.context_window``) when stated, else the registry's
(:func:`session_model_info`, the one place the usable window of a session is resolved).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import msgspec
from msgspec.structs import replace

from ctxhealth.accounting.cost import Priced, cost_of, iter_threads, session_cost
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.accounting.running import SYNTHETIC_MODEL, RunningFill, is_turn, message_size, size_of
from ctxhealth.accounting.tokens import (
    DEFAULT_CHARS_PER_TOKEN,
    count_batch,
    exact_available,
    message_overhead,
    message_text_for_count,
)
from ctxhealth.accounting.types import CompactionRecord, FillSource, ModelInfo, TurnFill
from ctxhealth.failures import Verdicts, is_failure
from ctxhealth.model import Block, CompactionSummary, Message, Role, Session, ToolCall, ToolResult

MIN_CHARS_PER_TOKEN = 1.5
MAX_CHARS_PER_TOKEN = 8.0
"""Calibrated ratios outside this range are noise (tiny or degenerate samples): use the default."""

_TRUST = {FillSource.REPORTED: 2, FillSource.EXACT: 1, FillSource.ESTIMATED: 0}


CountedCall = tuple[int, int, ToolCall]
"""A tool call as the accounting counted it: its thread's number in
:func:`~ctxhealth.accounting.cost.iter_threads` order (0 = main thread), the index of its message
there, the call (a plain tuple: one is made per call of every session)."""


class SessionAccount(msgspec.Struct, frozen=True):
    """Accounting of one session: fill per turn, compactions, tools and cost.

    ``source`` is the least trustworthy source among the turns (all ``reported`` only when
    every turn was reported). ``chars_per_token`` is the ratio used for estimated turns.
    """

    session: Session
    model: ModelInfo
    turns: tuple[TurnFill, ...]
    compactions: tuple[CompactionRecord, ...]
    tool_calls: int
    tool_errors: int
    cost_usd: float | None
    source: FillSource
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    subagent_tool_calls: int = 0
    subagent_tool_errors: int = 0
    after_compaction: TurnFill | None = None
    answers: Mapping[str, ToolResult] | None = None
    """The result that answers each call id, as the counts took it: the first one written, main
    thread then sub-agents (what fleet's tool-call rows join; None in an account made elsewhere)."""
    calls: tuple[CountedCall, ...] | None = None
    """The tool calls ``tool_calls`` counts, in the order counted (each id once, main thread then
    sub-agents): what fleet's tool-call rows list (None in an account made elsewhere)."""
    sizes: tuple[int, ...] | None = None
    """:func:`~ctxhealth.accounting.running.message_size` of each message of ``session``, by index,
    when the accounting sized them (some turn was not reported), so the Monitor fed this account
    sizes none again; None when it did not."""

    @property
    def window(self) -> int:
        return self.model.window

    @property
    def usable_window(self) -> int:
        return self.model.usable_window

    @property
    def peak(self) -> int:
        return max((t.tokens for t in self.turns), default=0)

    @property
    def current(self) -> int:
        """The latest response's fill; right after a compaction, the fill the compaction left."""
        if self.after_compaction is not None:
            return self.after_compaction.tokens
        return self.turns[-1].tokens if self.turns else 0

    @property
    def current_source(self) -> FillSource:
        if self.after_compaction is not None:
            return self.after_compaction.source
        return self.turns[-1].source if self.turns else self.source


def session_model_id(session: Session) -> str | None:
    """The session's model: as the log states it, else the last real assistant response's."""
    if session.model and session.model != SYNTHETIC_MODEL:
        return session.model
    for message in reversed(session.messages):
        if message.role is Role.ASSISTANT and message.model and message.model != SYNTHETIC_MODEL:
            return message.model
    return session.model


def session_model_info(
    session: Session, registry: ModelRegistry | None = None, model: str | None = None
) -> ModelInfo:
    """The one :class:`ModelInfo` of ``session`` that ``check``, ``recover`` and the policy share:
    the registry's for its model (``model`` overrides it), with the window the log states.

    A window the log states (Codex ``model_context_window``) is already what the prompt may fill:
    the client took the response's share out (Codex states 95% of the model's window), so nothing
    more is reserved (:meth:`ModelInfo.with_window`). ``model`` given: the log's window is not that
    model's, so the registry's is used. A response that reported a prompt above the window proves
    it larger (:meth:`ModelInfo.with_prompt_seen`: a model's 1M variant).
    """
    info = (registry or ModelRegistry.default()).lookup(model or session_model_id(session))
    if model is None and session.context_window:
        return info.with_logged_window(session.context_window, whole=session.window_whole)
    return info.with_prompt_seen(largest_reported_prompt(session))


def largest_reported_prompt(session: Session) -> int:
    """The largest prompt a response of ``session`` reported (its usage's input, cache writes and
    reads), 0 when none did."""
    largest = 0
    for m in session.messages:
        usage = m.usage
        if usage is not None and m.role is Role.ASSISTANT:
            tokens = usage.context_tokens
            if tokens > largest:
                largest = tokens
    return largest


class _Scan(msgspec.Struct):
    """What one pass over the messages collects."""

    turns: list[int] = msgspec.field(default_factory=list)
    compactions: list[tuple[int, CompactionSummary]] = msgspec.field(default_factory=list)
    calls: int = 0
    errors: int = 0
    main_calls: int = 0
    main_errors: int = 0
    call_ids: set[str] = msgspec.field(default_factory=set)
    answers: dict[str, ToolResult] = msgspec.field(default_factory=dict)
    counted: list[CountedCall] = msgspec.field(default_factory=list)

    def blocks(
        self, blocks: Sequence[Block], failed: Callable[[ToolResult], bool], thread: int, index: int
    ) -> CompactionSummary | None:
        """Count tool calls / failed results (each id once, judged by ``failed``) of message
        ``index`` of thread ``thread``; return the compaction summary."""
        summary = None
        for block in blocks:
            if isinstance(block, ToolCall):
                if block.id:
                    if block.id in self.call_ids:
                        continue
                    self.call_ids.add(block.id)
                self.calls += 1
                self.counted.append((thread, index, block))
            elif isinstance(block, ToolResult):
                if block.tool_call_id:
                    if block.tool_call_id in self.answers:
                        continue
                    self.answers[block.tool_call_id] = block
                if failed(block):
                    self.errors += 1
            elif isinstance(block, CompactionSummary) and summary is None:
                summary = block
        return summary


def _scan(session: Session, failed: Callable[[ToolResult], bool] = is_failure) -> _Scan:
    """One pass: distinct model responses and compactions of the main thread, tools of all threads.

    A response id seen twice counts once; a stand-in the client wrote itself
    (``Message.synthetic``, set by the reader) is not a model response.
    """
    scan = _Scan()
    seen: set[str] = set()
    for i, message in enumerate(session.messages):
        summary = scan.blocks(message.blocks, failed, 0, i)
        if summary is not None:
            scan.compactions.append((i, summary))
        if is_turn(message, seen):
            scan.turns.append(i)
    scan.main_calls, scan.main_errors = scan.calls, scan.errors
    for number, thread in enumerate(iter_threads(session)):
        if number:
            for i, message in enumerate(thread.messages):
                scan.blocks(message.blocks, failed, number, i)
    return scan


def counted_tools(
    session: Session, failed: Callable[[ToolResult], bool] = is_failure
) -> tuple[list[CountedCall], dict[str, ToolResult]]:
    """The tool calls the accounting counts (:attr:`SessionAccount.calls`) and the result answering
    each call id (:attr:`SessionAccount.answers`), for an account that does not hold them."""
    scan = _scan(session, failed)
    return scan.counted, scan.answers


def _reported_fills(session: Session, turn_indices: Sequence[int]) -> dict[int, int]:
    """Turn message index -> reported fill, from usage or from ``Session.reported_fill``.

    A log-level fill recorded at index ``k`` belongs to the latest turn at or before ``k``
    that has no usage of its own (Codex writes ``token_count`` after the response).
    """
    messages = session.messages
    out: dict[int, int] = {}
    for i in turn_indices:
        usage = messages[i].usage
        if usage is not None and usage.context_tokens > 0:
            out[i] = usage.context_tokens
    if session.reported_fill:
        keys = sorted(session.reported_fill)
        t = -1
        for k in keys:
            while t + 1 < len(turn_indices) and turn_indices[t + 1] <= k:
                t += 1
            if t >= 0 and turn_indices[t] not in out:
                out[turn_indices[t]] = session.reported_fill[k]
    return out


def _running_context(
    session: Session, encoding: str | None
) -> tuple[list[int], list[int], FillSource, list[int]]:
    """Per message index: tokens (or chars) of the context *before* that message, and of the message.

    Returns ``(before, own, source, sizes)``. For the exact path the unit is tokens; for the
    estimate path it is characters (the caller divides by a calibrated ratio). A compaction
    summary resets the running context to the system messages plus the summary itself. ``sizes``
    is :func:`message_size` of each message (the estimate path's ``own``, itself).
    """
    messages = session.messages
    if exact_available(encoding):
        texts = [message_text_for_count(m) for m in messages]
        counts, source = count_batch(texts, encoding)
        overheads = [message_overhead(m) for m in messages]
        own = [c + o for c, o in zip(counts, overheads, strict=True)]
        # message_size's characters are len(message_text_for_count) (message_chars): the texts
        # counted here give them without serialising any tool input again
        sizes = [size_of(len(t), o) for t, o in zip(texts, overheads, strict=True)]
    else:
        # Characters; overhead tokens are converted to characters at the default ratio.
        own = sizes = [message_size(m) for m in messages]
        source = FillSource.ESTIMATED
    before: list[int] = []
    running = 0
    system = 0
    for m, size in zip(messages, own, strict=True):
        if m.compaction is not None:
            running = system
        before.append(running)
        running += size
        if m.role is Role.SYSTEM:
            system += size
    return before, own, source, sizes


def _calibrate(points: Sequence[tuple[int, int, int]], *, fit_ratio: bool) -> tuple[dict[int, float], float]:
    """``(hidden tokens per segment, chars_per_token)`` from ``(segment, x, reported)`` points.

    Model: ``reported = hidden[segment] + x / cpt``. ``x`` is the running context the log
    shows (characters, or exact tokens with ``fit_ratio=False`` and cpt 1). ``hidden`` is what
    the log never shows: the system prompt and tool definitions, plus, after a compaction, the
    files the agent re-attached; so it is fitted per segment between compactions. The ratio is
    a pooled within-segment least-squares slope; when degenerate or implausible the spec's
    4.0 is kept. A segment without reported turns gets the smallest fitted hidden part (the
    base prompt every segment shares).
    """
    groups: dict[int, list[tuple[int, int]]] = {}
    for segment, x, y in points:
        groups.setdefault(segment, []).append((x, y))
    means = {
        seg: (sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts))
        for seg, pts in groups.items()
    }
    cpt = DEFAULT_CHARS_PER_TOKEN if fit_ratio else 1.0
    if fit_ratio:
        sxx = sxy = 0.0
        for seg, pts in groups.items():
            mx, my = means[seg]
            for x, y in pts:
                sxx += (x - mx) ** 2
                sxy += (x - mx) * (y - my)
        if sxx > 0 and sxy > 0 and MIN_CHARS_PER_TOKEN <= sxx / sxy <= MAX_CHARS_PER_TOKEN:
            cpt = sxx / sxy
    hidden = {seg: max(0.0, my - mx / cpt) for seg, (mx, my) in means.items()}
    return hidden, cpt


def _segments(turn_indices: Sequence[int], markers: Sequence[int]) -> list[int]:
    """For each turn, how many compaction markers precede it (its segment number)."""
    out: list[int] = []
    m = 0
    for i in turn_indices:
        while m < len(markers) and markers[m] < i:
            m += 1
        out.append(m)
    return out


def _output_tokens(message: Message) -> int:
    return message.usage.output_tokens if message.usage is not None else 0


def _fills(
    session: Session, model: ModelInfo, turn_indices: Sequence[int], markers: Sequence[int]
) -> tuple[list[TurnFill], FillSource, float, list[int] | None]:
    """``(turns, source, chars_per_token, sizes)``: ``sizes`` as :func:`_running_context` gives
    them, None when every turn was reported (then no message is sized)."""
    messages = session.messages
    reported = _reported_fills(session, turn_indices)
    outputs = [_output_tokens(messages[i]) for i in turn_indices]
    if not turn_indices:
        return [], FillSource.ESTIMATED, DEFAULT_CHARS_PER_TOKEN, None
    if len(reported) == len(turn_indices):
        turns = [
            TurnFill(n, i, reported[i], FillSource.REPORTED, out)
            for n, (i, out) in enumerate(zip(turn_indices, outputs, strict=True))
        ]
        return turns, FillSource.REPORTED, DEFAULT_CHARS_PER_TOKEN, None

    before, own, counted, sizes = _running_context(session, model.encoding)
    segments = _segments(turn_indices, markers)
    points = [
        (seg, before[i], reported[i]) for i, seg in zip(turn_indices, segments, strict=True) if i in reported
    ]
    hidden, cpt = _calibrate(points, fit_ratio=counted is FillSource.ESTIMATED)
    base = min(hidden.values(), default=0.0)

    # the one estimator, fed every message with its counted size (exact tokens at ratio 1, or
    # characters at the calibrated ratio), the reported fill of each reported turn, and the part
    # of each segment the log never shows as calibrated on the segment's reported turns
    running = RunningFill(cpt)
    running.set_hidden(hidden.get(0, base))
    fill_at = {i: reported.get(i) for i in turn_indices}
    starts = set(markers)
    segment = 0
    turns = []
    worst = FillSource.REPORTED
    n = 0
    for i, message in enumerate(messages):
        turn = running.observe(message, fill_at.get(i), size=own[i])
        if i in starts:
            segment += 1
            running.set_hidden(hidden.get(segment, base))
        if not turn:
            continue
        out = outputs[n]
        if i in reported:
            turns.append(TurnFill(n, i, reported[i], FillSource.REPORTED, out))
        else:
            turns.append(TurnFill(n, i, running.fill, counted, out))
            if _TRUST[counted] < _TRUST[worst]:
                worst = counted
        n += 1
    chars_per_token = cpt if counted is FillSource.ESTIMATED else DEFAULT_CHARS_PER_TOKEN
    return turns, worst, chars_per_token, sizes


def _compactions(
    markers: Sequence[tuple[int, CompactionSummary]], turns: Sequence[TurnFill]
) -> list[CompactionRecord]:
    """One record per compaction; adjacent markers with no turn between are one compaction.

    ``pre_tokens`` is what the log states, else the last fill before; ``post_tokens`` the
    first fill after (None when no turn follows).
    """
    out: list[CompactionRecord] = []
    t = 0  # first turn at or after the current marker
    last_fill: int | None = None
    pending: CompactionRecord | None = None
    for i, summary in markers:
        while t < len(turns) and turns[t].message_index < i:
            last_fill = turns[t].tokens
            if pending is not None:
                out.append(replace(pending, post_tokens=turns[t].tokens))
                pending = None
            t += 1
        if pending is not None:  # the same compaction written twice (boundary + summary line)
            pending = replace(
                pending,
                pre_tokens=summary.pre_tokens if summary.pre_tokens is not None else pending.pre_tokens,
                trigger=pending.trigger or summary.trigger,
                log_post_tokens=summary.post_tokens or pending.log_post_tokens,
                dropped_tokens=summary.dropped_tokens or pending.dropped_tokens,
                encrypted=pending.encrypted or summary.encrypted,
            )
            continue
        pre = summary.pre_tokens if summary.pre_tokens is not None else last_fill
        pending = CompactionRecord(
            len(out),
            i,
            pre,
            None,
            summary.trigger,
            log_post_tokens=summary.post_tokens,
            dropped_tokens=summary.dropped_tokens,
            encrypted=summary.encrypted,
        )
    if pending is not None:
        post = turns[t].tokens if t < len(turns) else None
        out.append(replace(pending, post_tokens=post))
    return out


def account_session(
    session: Session,
    *,
    registry: ModelRegistry | None = None,
    model: str | None = None,
    verdicts: Verdicts | None = None,
    priced: Sequence[Priced] | None = None,
) -> SessionAccount:
    """Fill per turn, compactions, tool calls / errors and cost of ``session``.

    ``verdicts``: the session's table of failed results (:class:`ctxhealth.failures.Verdicts`),
    shared with the other counters of the same session so each result is judged once. ``priced``:
    the session's responses priced already with the same ``model``
    (:func:`ctxhealth.accounting.cost.priced_responses`), so the cost prices nothing again.

    ``model`` overrides the model the log names (window, tier, prices). The window the log
    itself states (``Session.context_window``) wins over the registry unless ``model`` is given.
    """
    registry = registry or ModelRegistry.default()
    info = session_model_info(session, registry, model)
    scan = _scan(session, is_failure if verdicts is None else verdicts)
    turns, source, cpt, sizes = _fills(session, info, scan.turns, [i for i, _ in scan.compactions])
    compactions = _compactions(scan.compactions, turns)
    after = _after_compaction(session, turns, compactions)
    if after is not None:
        last = compactions[-1]
        compactions[-1] = replace(last, post_tokens=after.tokens, post_source=after.source)
    return SessionAccount(
        session=session,
        model=info,
        turns=tuple(turns),
        compactions=tuple(compactions),
        tool_calls=scan.calls,
        tool_errors=scan.errors,
        cost_usd=session_cost(session, registry, model=model) if priced is None else cost_of(priced),
        source=source,
        chars_per_token=cpt,
        subagent_tool_calls=scan.calls - scan.main_calls,
        subagent_tool_errors=scan.errors - scan.main_errors,
        after_compaction=after,
        answers=scan.answers,
        calls=tuple(scan.counted),
        sizes=None if sizes is None else tuple(sizes),
    )


def _after_compaction(
    session: Session, turns: Sequence[TurnFill], compactions: Sequence[CompactionRecord]
) -> TurnFill | None:
    """The fill a compaction left when no response came after it (``RunningFill``'s rule, fed the
    turns' fills), else None. ``message_index`` is the compaction's, ``turn`` the next turn's."""
    if not compactions or not turns or compactions[-1].message_index < turns[-1].message_index:
        return None
    fills = {t.message_index: t.tokens for t in turns}
    running = RunningFill()
    for i, message in enumerate(session.messages):
        running.observe(message, fills.get(i))
    return TurnFill(len(turns), compactions[-1].message_index, running.fill, running.source)
