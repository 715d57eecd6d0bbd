"""Reading only the new tail of a Claude Code transcript and folding it into :class:`SessionCounters`.

The byte offset and line count cached in the counters say where the last call stopped; only the bytes
after it are read and parsed (``ClaudeCodeTail``), so a hook costs O(new bytes), not O(transcript).
A partial last line is left for the next call (the offset only moves past complete lines). If the file
shrank (rewritten or rotated) the counters start over. A first read of a very large transcript keeps
its head (the original request) and its last ``max_bytes``, and so does a read after more than
``max_bytes`` were appended, so every call is bounded; the file type is checked before any read
(:mod:`.transcript`).

Another agent's transcript is read by :func:`read_whole`: a Codex rollout from the last cut its
reader can resume at (the reader's state there kept in ``counters.reader``), a Gemini chat whole
when it changed. Its last messages may still change as lines are added (a response settled by a
later line), so what was folded in and observed from its settled point on is done again on their
latest form, from the counters and the monitor's snapshot kept there.

The new messages are also fed to the session's monitor (:mod:`.monitoring`), whose snapshot and last
assessment travel in the counters. This is the slow path of a hook: it imports the reader, the model
registry, the profile and the monitor. The thresholds it resolves are cached in the counters so the
fast path (status line) need not.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from ctxhealth.accounting.cost import usage_cost
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.integrations.claude_code.monitoring import observe_messages, session_info, stated_window
from ctxhealth.integrations.claude_code.tailstate import (
    INSTRUCTION_CHARS,
    SessionCounters,
    file_identity,
    unchanged,
)
from ctxhealth.model import Format, Message, Role, Usage
from ctxhealth.policy.profile import Profile, default_profile
from ctxhealth.redact import scrub
from ctxhealth.signals.requests import clean_user_text, is_user_request
from ctxhealth.sources.claude_code import ClaudeCodeTail

__all__ = [
    "DEFAULT_MAX_BYTES",
    "HEAD_BYTES",
    "fold_messages",
    "read_tail",
    "read_whole",
    "resolve_thresholds",
]

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
HEAD_BYTES = 256 * 1024


def read_tail(
    counters: SessionCounters,
    transcript: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    registry: ModelRegistry | None = None,
    profile: Profile | None = None,
) -> list[Message]:
    """Read the transcript's bytes after ``counters.offset``, fold them in, return the new messages.

    At most ``max_bytes`` are read (plus the head of the file on a first read): when more than that
    was appended, the reading skips to the last ``max_bytes``. Raises :class:`InputError` when the
    transcript is not a regular file (a FIFO or a device is never opened blocking).
    """
    from ctxhealth.integrations.claude_code.transcript import read_window

    size = os.stat(transcript).st_size
    if size < counters.offset:
        counters.reset()  # rewritten or rotated: start over
    if size == counters.offset:
        counters.size = size
        return []
    first = counters.offset == 0
    window = read_window(
        transcript, tail_bytes=max_bytes, head_bytes=HEAD_BYTES if first else 0, start=counters.offset
    )
    messages: list[Message] = []
    if window.skipped:
        if window.head:
            messages += _feed(counters, window.head, transcript)
        counters.offset = window.tail_start
        counters.line = 0  # line numbers are unknown past a skipped stretch
    messages += _feed(counters, window.tail, transcript)
    counters.size = window.size
    fold_messages(counters, messages, registry=registry)
    observe_messages(counters, messages, registry=registry, profile=profile)
    resolve_thresholds(counters, registry=registry, profile=profile)
    return messages


def read_whole(
    counters: SessionCounters,
    transcript: str,
    *,
    registry: ModelRegistry | None = None,
    profile: Profile | None = None,
) -> list[Message]:
    """Another agent's transcript (a Codex rollout, a Gemini chat): read by its reader, folded in
    and observed so that the counters and the monitor end as one read of it as it is now leaves
    them (:func:`_observe_settled`); the messages after the ``counters.line`` already read returned.

    A Codex rollout is append-only: it is read from the last cut its reader could resume at
    (``counters.reader``, :func:`ctxhealth.sources.codex.resume`), so a hook costs O(bytes since
    then). It is read whole when there is no such cut, or when the file is not the one the cut was
    made in (it shrank, or its inode, device or first bytes changed), when the reader cannot resume
    (see there), or when the session's model or the window the rollout states changed since the
    cut (:func:`_observe_settled`). A Gemini chat is read whole (its records are upserts by id and ``$set``
    patches that restate the history), but not again while its size, mtime and inode are unchanged.
    Raises the reader's error when the format is not readable."""
    st = os.stat(transcript)
    size = st.st_size
    if size < counters.offset:
        counters.reset()
    identity = file_identity(st)
    carried = counters.reader if isinstance(counters.reader, dict) else None
    if (
        carried is not None
        and carried.get("format") == Format.CODEX.value
        and "cut" in carried  # (a compressed rollout is read whole: it has none)
        and _replaced(transcript, identity, carried)
    ):
        counters.reset()  # another file in its place: what was read of the old one is no part of it
        carried = None
    if unchanged(counters, st):
        return []
    settled = carried.get("settled") if carried is not None else None
    seen = counters.line
    read = _resume_codex(counters, transcript, size, identity, carried)
    if read is None or not _observe_settled(counters, read, settled, registry=registry, profile=profile):
        read = _read_full(counters, transcript, size, identity)
        _observe_settled(counters, read, settled, registry=registry, profile=profile)
    if read.session_id and not counters.session_id:
        counters.session_id = read.session_id
    return read.messages[max(0, seen - read.first) :]


class _Read(msgspec.Struct, frozen=True):
    """What one read of another agent's transcript gave."""

    messages: list[Message]
    """The messages from index ``first`` on (a Codex rollout resumed at a cut: those after it)."""
    first: int
    session_id: str | None
    format: Format
    window: int | None
    """The window the log states (a Codex rollout's ``model_context_window``)."""
    cut: int | None
    """How many messages nothing read later can change (the Codex reader's cut); None: unknown."""


HEAD_DIGEST_BYTES = 4096
"""How much of a rollout's start must be unchanged for a cut in it to be resumed."""


def _resume_codex(
    counters: SessionCounters, transcript: str, size: int, identity: list[int], carried: dict[str, Any] | None
) -> _Read | None:
    """The messages read from the carried cut; None when it cannot be resumed there (or the counters
    and the monitor were not kept as they were at that cut)."""
    from ctxhealth.sources import codex

    if carried is None or carried.get("format") != Format.CODEX.value:
        return None
    cut, head, settled = carried.get("cut"), carried.get("head"), carried.get("settled")
    if not isinstance(cut, dict) or not isinstance(head, list):
        return None
    offset, before = cut.get("offset"), cut.get("messages")
    if not isinstance(offset, int) or not isinstance(before, int) or not 0 <= offset <= size:
        return None
    if before > counters.line or (before and _kept_at(settled) != before):
        return None
    with open(transcript, "rb") as f:
        f.seek(offset)
        data = f.read(size - offset)
    resumed = codex.resume(data, transcript, cut)
    if resumed is None:
        return None
    counters.line = before + len(resumed.messages)
    counters.offset = counters.size = offset + len(data)
    counters.reader = _codex_state(resumed.carry, head, identity)
    return _Read(
        resumed.messages, before, resumed.session_id, Format.CODEX, resumed.window, resumed.carry["messages"]
    )


def _read_full(counters: SessionCounters, transcript: str, size: int, identity: list[int]) -> _Read:
    """Every message of the file."""
    from ctxhealth.sources import codex
    from ctxhealth.sources.reader import detect_head, read_data, read_regular_file

    data = read_regular_file(transcript)
    counters.reader = None
    if detect_head(data) is Format.CODEX:
        resumed = codex.resume(data, transcript)
        assert resumed is not None  # a fresh read always gives an answer
        head = data[:HEAD_DIGEST_BYTES]
        counters.reader = _codex_state(resumed.carry, [len(head), _digest(head)], identity)
        read = _Read(
            resumed.messages, 0, resumed.session_id, Format.CODEX, resumed.window, resumed.carry["messages"]
        )
    else:
        session = read_data(data, transcript)
        counters.reader = {"format": session.format.value, "file": identity[:2], "mtime": identity[2]}
        messages = list(session.messages)
        read = _Read(messages, 0, session.session_id, session.format, session.context_window, None)
    counters.line, counters.offset, counters.size = len(read.messages), len(data), len(data)
    return read


FOLDED = (
    "turns",
    "last_response_id",
    "last_response_usage",
    "output_tokens",
    "cost_usd",
    "compactions",
    "peak",
)
"""The counters a read adds to (:func:`fold_messages`, the monitor's peak): kept as they were at the
settled point, with the monitor's snapshot, and gone on from there (:func:`_observe_settled`)."""


def _observe_settled(
    counters: SessionCounters,
    read: _Read,
    settled: Any,
    *,
    registry: ModelRegistry | None,
    profile: Profile | None,
) -> bool:
    """Fold the messages in and give them to the session's monitor so that each one was taken once,
    in the form the transcript holds now, against the model and window it states now: what one read
    of the whole transcript gives. False (nothing observed) when a read resumed at a cut cannot go
    on from the state kept there: then the whole transcript must be read.

    A reader may settle a message only once later lines arrive: a Codex response gets its usage
    from the record written after it, a Gemini record is an upsert by id (a response is written when
    it arrives and again with its tool calls once they ran). So the counters (:data:`FOLDED`) and
    the monitor's snapshot are kept as they were at the settled point (``counters.reader
    ["settled"]``: its index ``at``, a digest of the messages before it when they were all read, the
    counters, the snapshot, the model and window the monitor had): where the reader says nothing
    before can change (a Codex rollout's cut), else the last model response. A read resumed at a cut
    goes on from the state kept there; a whole read goes on from it when the messages before it are
    unchanged. Otherwise, and when the session's model or the window its log states changed since
    (a whole read assesses every message against the last ones), the counters and the monitor start
    afresh and take every message."""
    messages, first = read.messages, read.first
    start, crc = 0, ""
    kept_at = _kept_at(settled) or 0
    if first:  # resumed at the reader's cut, where the state was kept (``_resume_codex``)
        start, crc = first, settled.get("digest")
    elif 0 < kept_at <= len(messages) and _messages_digest(messages[:kept_at]) == settled.get("digest"):
        start, crc = kept_at, settled["digest"]
    at, kept = _fold_settled(counters, read, start, settled if start else None, registry=registry)
    resolve_thresholds(counters, registry=registry, profile=profile, log_window=read.window)
    if start and settled.get("info") != _info(counters):
        if first:
            return False
        start, crc = 0, ""
        at, kept = _fold_settled(counters, read, 0, None, registry=registry)
        resolve_thresholds(counters, registry=registry, profile=profile, log_window=read.window)
    counters.monitor = settled.get("monitor") if start else None
    head, rest = messages[start - first : at - first], messages[at - first :]
    observe_messages(counters, head, registry=registry, profile=profile, source_format=read.format)
    snapshot = counters.monitor
    kept["peak"] = counters.peak
    observe_messages(counters, rest, registry=registry, profile=profile, source_format=read.format)
    if isinstance(counters.reader, dict):
        counters.reader["settled"] = {
            "at": at,
            "digest": _messages_digest(head, crc) if isinstance(crc, str) else None,
            "counters": kept,
            "monitor": snapshot,
            "info": _info(counters),
        }
    return True


def _fold_settled(
    counters: SessionCounters, read: _Read, start: int, settled: Any, *, registry: ModelRegistry | None
) -> tuple[int, dict[str, Any]]:
    """Fold the messages from ``start`` in, the counters set back to those ``settled`` kept there
    first (to their defaults without it); the new settled point and the counters there."""
    messages, first = read.messages, read.first
    _rewind(counters, settled["counters"] if settled is not None else None)
    last = next(
        (k for k in range(len(messages) - 1, -1, -1) if messages[k].role is Role.ASSISTANT), len(messages)
    )
    at = max(first + last if read.cut is None else read.cut, start)
    fold_messages(counters, messages[start - first : at - first], registry=registry)
    kept = {name: getattr(counters, name) for name in FOLDED}
    fold_messages(counters, messages[at - first :], registry=registry)
    return at, kept


def _info(counters: SessionCounters) -> list[Any]:
    """The model and window the session's monitor assesses against (:func:`resolve_thresholds`)."""
    th = counters.thresholds or {}
    return [th.get("model"), th.get("window"), th.get("usable")]


def _kept_at(settled: Any) -> int | None:
    """The index the state in ``settled`` (``counters.reader["settled"]``) was kept at, when it is
    whole (from a version that kept the counters with the snapshot)."""
    if not isinstance(settled, dict) or not isinstance(settled.get("counters"), dict):
        return None
    at = settled.get("at")
    return at if isinstance(at, int) and not isinstance(at, bool) and at > 0 else None


def _rewind(counters: SessionCounters, kept: Any) -> None:
    """Set the counters a read adds to back to ``kept`` (their defaults when it is not a dict);
    the episodes the compactions since started are taken back with them."""
    fresh = SessionCounters()
    values = {name: getattr(fresh, name) for name in FOLDED}
    if isinstance(kept, dict):
        for name, default in values.items():
            value = kept.get(name, default)
            if type(value) is type(default) or (default is None and isinstance(value, str | float)):
                values[name] = value
    compactions = values["compactions"]
    counters.episodes = max(0, counters.episodes - max(0, counters.compactions - compactions))
    for name, value in values.items():
        setattr(counters, name, value)


def _messages_digest(messages: list[Message], before: str = "") -> str:
    """A digest of ``messages`` (their ``repr``: every field), going on from ``before``, the digest
    of the messages before them."""
    import zlib

    crc = int(before[:8], 16) if before else 0
    count = int(before[8:], 16) if before else 0
    for message in messages:
        crc = zlib.crc32(repr(message).encode("utf-8", "surrogatepass"), crc)
    return f"{crc:08x}{count + len(messages):x}"


def _replaced(transcript: str, identity: list[int], carried: dict[str, Any]) -> bool:
    """Whether the rollout the carried cut was made in is no longer at ``transcript``: another
    device or inode, or other first bytes (rewritten in place)."""
    head = carried.get("head")
    if carried.get("file") != identity[:2] or not isinstance(head, list) or len(head) != 2:
        return True
    length, digest = head
    if not isinstance(length, int) or length < 0:
        return True
    with open(transcript, "rb") as f:
        return bool(_digest(f.read(length)) != digest)


def _codex_state(cut: dict[str, Any], head: list[Any], identity: list[int]) -> dict[str, Any]:
    return {
        "format": Format.CODEX.value,
        "file": identity[:2],
        "mtime": identity[2],
        "head": head,
        "cut": cut,
    }


def _digest(data: bytes) -> str:
    import zlib

    return f"{zlib.crc32(data):08x}{len(data):x}"


def _feed(counters: SessionCounters, data: bytes, transcript: str) -> list[Message]:
    tail = ClaudeCodeTail(transcript)
    messages = tail.feed(data, counters.line + 1 if counters.line else 1)
    counters.offset += tail.consumed
    counters.line = tail.next_line - 1
    if tail.state.session_id and not counters.session_id:
        counters.session_id = tail.state.session_id
    if tail.state.model:
        counters.model = tail.state.model
    return messages


def fold_messages(
    counters: SessionCounters, messages: list[Message], *, registry: ModelRegistry | None = None
) -> None:
    """Update turns, output, cost, the instruction and compactions from new messages (the fill and
    the tool counts are the monitor's, :func:`observe_messages`). A compaction whose own request's
    usage the log keeps (a Codex rollout's) is billed, though it is no turn, as ``check`` prices it
    (:func:`ctxhealth.accounting.cost.iter_responses`)."""
    registry = registry or ModelRegistry.default()
    for message in messages:
        if message.compaction is not None:
            counters.compactions += 1
            counters.episodes += 1
            if message.compaction.usage is not None:
                _bill(counters, message.compaction.usage, None, message.model, registry)
            continue
        if message.role is Role.USER:
            if not counters.instruction and is_user_request(message):
                counters.instruction = scrub(clean_user_text(message.text)[:INSTRUCTION_CHARS])
            continue
        if message.role is not Role.ASSISTANT:
            continue
        if message.model:
            counters.model = message.model
        rid = message.response_id
        if rid is None or rid != counters.last_response_id:
            counters.turns += 1
            counters.last_response_id = rid
            counters.last_response_usage = []
        usage = message.usage
        if usage is None:
            continue
        # a response read in parts (a read stopped between its lines) is counted as one response
        kept = Usage(*counters.last_response_usage) if counters.last_response_usage else None
        merged = usage if kept is None else kept.merged(usage)
        if merged is kept:
            continue
        counters.last_response_usage = list(msgspec.structs.astuple(merged))
        _bill(counters, merged, kept, message.model, registry)


def _bill(
    counters: SessionCounters, usage: Usage, counted: Usage | None, model: str | None, registry: ModelRegistry
) -> None:
    """Add a response's ``usage`` to the output tokens and the cost (``counted``: what was added for
    it already, from its earlier parts)."""
    counters.output_tokens += usage.output_tokens - (counted.output_tokens if counted else 0)
    prices = registry.lookup(model or counters.model).prices
    if prices is not None:
        was = usage_cost(counted, prices) if counted else 0.0
        counters.cost_usd = (counters.cost_usd or 0.0) + usage_cost(usage, prices) - was


def resolve_thresholds(
    counters: SessionCounters,
    *,
    registry: ModelRegistry | None = None,
    profile: Profile | None = None,
    window: int | None = None,
    log_window: int | None = None,
) -> dict[str, Any]:
    """Cache the model's window and the profile's thresholds in the counters (for the fast path).

    ``window`` is the one the host states (status line), ``log_window`` the one the agent's log
    states (a Codex rollout's ``model_context_window``); once stated, each is kept for the session
    (``stated_window``, ``log_window``), and the monitor's pressure and zones use it too."""
    registry = registry or ModelRegistry.default()
    profile = profile or default_profile()
    previous = counters.thresholds
    if previous and previous.get("model") == counters.model:
        # stated before: the host's (status line payload), the log's (an earlier read of it)
        window = window or stated_window(previous.get("stated_window"))
        log_window = log_window or stated_window(previous.get("log_window"))
    info = session_info(
        counters.model, window, registry, log_window=log_window, prompt_seen=counters.prompt_seen
    )
    th = profile.zones(info)
    counters.thresholds = {
        "model": counters.model,
        "stated_window": window,
        "log_window": log_window,
        "window": info.window,
        "usable": info.usable_window,
        "tier": info.tier.value,
        "model_known": info.known,
        "sweet_spot": th.sweet_spot,
        "compact_zone": th.compact_zone,
        "hard_limit": th.hard_limit,
        "window_yellow": profile.window_yellow,
        "window_orange": profile.window_orange,
        "window_critical": profile.window_critical,
        "window_autocompact": profile.window_autocompact,
        "pressure_warning": profile.pressure_warning,
        "pressure_compress": profile.pressure_compress,
        "pressure_critical": profile.pressure_critical,
        "drift_threshold": profile.drift_threshold,
        "failure_rate": profile.failure_rate,
        "failure_min_calls": profile.failure_min_calls,
        "consecutive_failures": profile.consecutive_failures,
        "cache_hit_min": profile.cache_hit_min,
        "cache_min_prompt": profile.cache_min_prompt,
    }
    return counters.thresholds
