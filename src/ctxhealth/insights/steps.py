"""One session's steps and what slipped at each, and where its context went: the raw material of
``ctxhealth insights``.

A *step* is one model response: the turns of the one fill account
(:func:`ctxhealth.accounting.fill.account_session`: an assistant message, counted once per response
id, not a stand-in the client wrote), each with the fill its prompt had. The messages from one step
up to the next belong to it: the results of its tool calls and what the user said next.

A step *slipped* when any of these happened in it (its ``slips`` name which):

* ``failed_call`` — a tool result that failed (:func:`call_failed`, the one predicate used here);
* ``failed_edit`` — that failed call was an edit (an ``Edit``/``Write``/patch/``sed -i``...);
* ``repeat_failed`` — a call identical to one that failed before, with no edit in between;
* ``reread`` — the same read again (same tool, same file, same range: reading the next part of a
  file is no slip), with no edit to the file and no compaction in between (after a compaction the
  content is gone from the context, so reading it again is no slip); an edit whose files are
  unknown (``git apply``) makes every earlier read new;
* ``correction`` — the user interrupted (``[Request interrupted by user``), rejected a tool call,
  or (in agents a person talks to: Claude Code, Codex) answered with a correction such as "no,",
  "that's not what I asked", "wrong", "undo that". A simulated tau-bench customer's "no" is an
  answer, not a correction, so only the interrupt and rejection markers count there.

Composition counts every block the log holds by kind (conversation, tool calls, tool results by
tool, thinking, compaction summaries, system messages) at the session's calibrated characters per
token; the *fixed prefix* (system prompt, tool definitions, instruction files the log does not hold)
is the first response's reported prompt minus what the transcript holds before it, known only when
that prompt was reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath

from ctxhealth.accounting.fill import SessionAccount, session_model_id
from ctxhealth.accounting.tokens import input_chars, message_overhead
from ctxhealth.accounting.types import FillSource
from ctxhealth.failures import is_failure
from ctxhealth.model import (
    CompactionSummary,
    Format,
    Message,
    Role,
    Session,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    parse_timestamp,
)
from ctxhealth.signals.calls import CallInfo, CallKind, parse_call
from ctxhealth.signals.requests import clean_user_text, is_user_request

SLIP_KINDS = ("failed_call", "failed_edit", "repeat_failed", "reread", "correction")
"""Every kind of slip, in the order they are reported."""

INTERACTIVE = frozenset({Format.CLAUDE_CODE, Format.CODEX})
"""Formats whose user is a person, whose words can be a correction."""

_INTERRUPT = "[request interrupted by user"
_REJECTED = re.compile(
    r"user doesn't want to proceed with this tool use|tool use was rejected|rejected by the user|"
    r"user (?:rejected|denied|declined) (?:this|the) (?:tool|command|call)",
    re.I,
)
_CORRECTION = re.compile(
    r"^(?:no\b[,.!:]?|nope\b|wrong\b|stop\b|undo\b|revert (?:that|this|it)\b|"
    r"(?:that'?s|this is|that is) (?:not|wrong)\b|not what i (?:asked|wanted|meant|said)\b|"
    r"i (?:said|asked|told you)\b|you (?:didn'?t|did not|forgot|missed|broke|ignored)\b|"
    r"why did you\b|don'?t do that\b|actually,? (?:no|don'?t)\b)",
    re.I,
)
_COMPOSITION_KEYS = (
    "conversation",
    "tool_calls",
    "tool_results",
    "thinking",
    "compaction_summaries",
    "system",
)


def call_failed(result: ToolResult) -> bool:
    """Whether a tool call failed: the project's one definition (:func:`ctxhealth.failures.is_failure`)."""
    return is_failure(result)


def is_correction(message: Message, format: Format) -> bool:
    """A user message that corrects the agent: an interrupt, a rejected tool call, or (formats whose
    user is a person) words such as "no, ..." / "that's not what I asked"."""
    if message.role is not Role.USER or message.compaction is not None:
        return False
    for result in message.tool_results:
        if _REJECTED.search(result.text[:300]):
            return True
    text = clean_user_text(message.text)
    if not text:
        return False
    if text[:80].lower().startswith(_INTERRUPT):
        return True
    return format in INTERACTIVE and is_user_request(message) and _CORRECTION.match(text) is not None


@dataclass(frozen=True, slots=True)
class Step:
    """One model response: its number in the session, message index, fill (tokens, as accounted),
    the fill's share of the usable window, and the kinds of slip it made (empty: a clean step)."""

    number: int
    message_index: int
    fill: int
    fill_pct: float
    source: FillSource
    slips: tuple[str, ...] = ()

    @property
    def slipped(self) -> bool:
        return bool(self.slips)


@dataclass(slots=True)
class Composition:
    """Where one session's context went, in tokens. ``added``: every block the log holds, by kind,
    over the whole session; ``tools``: tool-result tokens by tool; ``at_end``: the live context at
    the last step (since the last compaction) by kind; ``fixed_prefix``: the first prompt minus what
    the log holds before it (None when that prompt was not reported); ``last_fill``: the last
    step's fill; ``reread_tokens``: tokens of results of re-reads."""

    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COMPOSITION_KEYS, 0))
    tools: dict[str, int] = field(default_factory=dict)
    at_end: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COMPOSITION_KEYS, 0))
    fixed_prefix: int | None = None
    last_fill: int = 0
    reread_tokens: int = 0
    chars_per_token: float = 4.0


@dataclass(frozen=True, slots=True)
class SessionSteps:
    """A session's steps, slips and composition, with what it is grouped by (agent = the format,
    model, project = the folder holding it) and when it ended (the last timestamp, if any)."""

    path: str
    session_id: str | None
    agent: str
    model: str
    family: str
    project: str
    window: int
    usable_window: int
    ended: datetime | None
    steps: tuple[Step, ...]
    composition: Composition
    slip_counts: dict[str, int]
    rereads: int

    @property
    def name(self) -> str:
        """``PATH``, or ``PATH#SESSION_ID`` for a session of a file holding several."""
        from ctxhealth.sources.reader import MANY_PER_FILE, SESSION_SEPARATOR

        if Format(self.agent) in MANY_PER_FILE and self.session_id and self.session_id not in self.path:
            return f"{self.path}{SESSION_SEPARATOR}{self.session_id}"
        return self.path

    @property
    def slipped_steps(self) -> int:
        return sum(1 for s in self.steps if s.slipped)


def project_of(session: Session) -> str:
    """The folder holding the session's file (Claude Code: the project folder; a results file's folder)."""
    path = session.path.split("#", 1)[0]
    parent = PurePath(path).parent.name
    return parent or PurePath(path).name or "?"


def _ended(session: Session) -> datetime | None:
    for message in reversed(session.messages):
        stamp = parse_timestamp(message.timestamp)
        if stamp is not None:
            return stamp
    return None


def _block_kind(message: Message, block: object) -> str | None:
    if isinstance(block, CompactionSummary):
        return "compaction_summaries"
    if isinstance(block, ThinkingBlock):
        return "thinking"
    if isinstance(block, ToolCall):
        return "tool_calls"
    if isinstance(block, ToolResult):
        return "tool_results"
    if isinstance(block, TextBlock):
        return "system" if message.role is Role.SYSTEM else "conversation"
    return None


def _block_chars(block: object) -> int:
    if isinstance(block, (TextBlock, ThinkingBlock, CompactionSummary, ToolResult)):
        return len(block.text)
    if isinstance(block, ToolCall):
        return len(block.name) + input_chars(block.input)
    return 0


class _Tracker:
    """What a session's earlier calls leave behind: files read since their last edit, calls that
    failed since the last edit, and the calls still waiting for their result."""

    def __init__(self) -> None:
        self.read: dict[int, frozenset[str]] = {}  # key of a read call -> the files it read
        self.failed: set[int] = set()
        self.pending: dict[str, tuple[CallInfo, bool]] = {}

    def call(self, block: ToolCall) -> tuple[CallInfo, list[str]]:
        info = parse_call(block)
        slips: list[str] = []
        if info.key in self.failed:
            slips.append("repeat_failed")
        reread = CallKind.READ in info.kinds and info.key in self.read
        if reread:
            slips.append("reread")
        self.pending[block.id] = (info, reread)
        return info, slips

    def result(self, result: ToolResult) -> tuple[CallInfo | None, bool, bool]:
        info, reread = self.pending.pop(result.tool_call_id, (None, False))
        failed = call_failed(result)
        if info is not None:
            if failed:
                self.failed.add(info.key)
            else:
                if CallKind.READ in info.kinds and info.reads:
                    self.read[info.key] = frozenset(_name(p) for p in info.reads)
                if info.edits or CallKind.EDIT in info.kinds:
                    self.failed.clear()
                    edited = {_name(p) for p in info.edits}
                    self.read = {k: f for k, f in self.read.items() if edited and not f & edited}
        return info, failed, reread

    def compacted(self) -> None:
        self.read.clear()


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] if "/" in path else path


def measure_session(session: Session, account: SessionAccount) -> SessionSteps:
    """Steps (one per model response of the main thread), their slips and the session's composition."""
    usable = max(1, account.usable_window)
    cpt = account.chars_per_token or 4.0
    starts = {t.message_index: t for t in account.turns}
    step_slips: list[set[str]] = [set() for _ in account.turns]
    counts = dict.fromkeys(SLIP_KINDS, 0)
    comp = Composition(chars_per_token=cpt)
    tracker = _Tracker()
    current = -1
    rereads = 0
    before_first = 0.0  # chars (and framing) the first response's prompt holds from the log
    live = dict.fromkeys(_COMPOSITION_KEYS, 0.0)
    for index, message in enumerate(session.messages):
        if index in starts:
            current = starts[index].turn
        if message.compaction is not None:
            tracker.compacted()
            live = {k: (v if k == "system" else 0.0) for k, v in live.items()}
        if current < 0:
            before_first += _message_chars(message) + message_overhead(message) * cpt
        for block in message.blocks:
            kind = _block_kind(message, block)
            if kind is None:
                continue
            tokens = _block_chars(block) / cpt
            comp.added[kind] += round(tokens)
            live[kind] += tokens
            if isinstance(block, ToolCall):
                _, slips = tracker.call(block)
                if current >= 0:
                    for slip in slips:
                        step_slips[current].add(slip)
                        counts[slip] += 1
                    rereads += "reread" in slips
            elif isinstance(block, ToolResult):
                info, failed, reread = tracker.result(block)
                tool = info.tool if info is not None else "?"
                comp.tools[tool] = comp.tools.get(tool, 0) + round(tokens)
                if reread:
                    comp.reread_tokens += round(tokens)
                if failed and current >= 0:
                    step_slips[current].add("failed_call")
                    counts["failed_call"] += 1
                    if info is not None and (info.edits or CallKind.EDIT in info.kinds):
                        step_slips[current].add("failed_edit")
                        counts["failed_edit"] += 1
        if current >= 0 and is_correction(message, session.format):
            step_slips[current].add("correction")
            counts["correction"] += 1
    comp.at_end = {k: round(v) for k, v in live.items()}
    if account.turns:
        first = account.turns[0]
        comp.last_fill = account.turns[-1].tokens
        if first.source is FillSource.REPORTED:
            comp.fixed_prefix = max(0, round(first.tokens - before_first / cpt))
    steps = tuple(
        Step(
            t.turn,
            t.message_index,
            t.tokens,
            round(100.0 * t.tokens / usable, 2),
            t.source,
            tuple(k for k in SLIP_KINDS if k in step_slips[t.turn]),
        )
        for t in account.turns
    )
    return SessionSteps(
        path=session.path,
        session_id=session.session_id,
        agent=session.format.value,
        model=session_model_id(session) or account.model.id or "unknown",
        family=account.model.family or "unknown",
        project=project_of(session),
        window=account.window,
        usable_window=account.usable_window,
        ended=_ended(session),
        steps=steps,
        composition=comp,
        slip_counts=counts,
        rereads=rereads,
    )


def _message_chars(message: Message) -> int:
    return sum(_block_chars(b) for b in message.blocks)
