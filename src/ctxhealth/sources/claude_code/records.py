"""Lines of a Claude Code transcript decoded into :class:`PlainNode` records, never an exception.

Decoding has two paths that give the same result. The typed path decodes a line with the
``msgspec`` schema (:mod:`.schema`) declaring only the fields the reader uses, so the rest of the
line (notably the top-level ``toolUseResult``, a structured copy of the tool result and over 40%
of the bytes) is skipped without building Python objects. Any line the schema rejects (a wrong
type, an unknown block type, a missing field, invalid JSON) or that is not valid UTF-8 is decoded
again by the lenient path (orjson plus typed getters), which produces the same warnings as ever.
Tool-call inputs are decoded by orjson in both paths, so their values are identical too (a line
orjson refuses but the JSON grammar allows, such as a lone surrogate escape or ``1e400``, is read
by :func:`~ctxhealth.sources.lines.loads`' fallback).

The typed path lives in :mod:`.typed` and is imported only when used. A hook reading a few new
lines goes lenient-first instead (``typed=False, retry_typed=True``): a line orjson rejects is
tried on the typed path before it is warned about, so the result is the typed-first one, and
``msgspec`` is imported only if such a line turns up. Lenient nodes are :mod:`.plain` records.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ctxhealth.sources.anthropic_messages import count_tokens
from ctxhealth.sources.claude_code.plain import (
    _MESSAGE_KINDS,
    PlainAttachment,
    PlainCacheCreation,
    PlainCompactMeta,
    PlainMsg,
    PlainNode,
    PlainOutputDetails,
    PlainUsage,
)
from ctxhealth.sources.lines import (
    BadJSON,
    WarningSink,
    get_bool,
    get_dict,
    get_int,
    get_str,
    loads,
    long_line,
    max_line_bytes,
    type_name,
)


def _lenient_node(line: int, raw: bytes, sink: WarningSink, retry_typed: bool = False) -> PlainNode | None:
    """The lenient path: any JSON, wrong types coerced or warned about, never an exception.

    ``retry_typed``: a line orjson rejects is tried on the typed path before it is warned
    about, so reading lenient-first gives what reading typed-first gives (see the module doc).
    """
    try:
        obj = loads(raw)
    except BadJSON as exc:
        if retry_typed:
            from ctxhealth.sources.claude_code.typed import _typed_node

            node = _typed_node(raw, True)
            if node is not None:
                node.line = line
                return node
        sink.add(line, f"invalid JSON: {exc}")
        return None
    if not isinstance(obj, dict):
        sink.add(line, f"line is a JSON {type_name(obj)}, expected an object")
        return None
    kind = obj.get("type")
    if not isinstance(kind, str):
        sink.add(line, "line has no string 'type'")
        return None
    uuid = get_str(obj, "uuid")
    message: PlainMsg | None = None
    if kind in _MESSAGE_KINDS:
        raw_message = obj.get("message")
        if isinstance(raw_message, dict):
            problems: list[str] = []
            message = _lenient_message(raw_message, problems)
            for problem in problems:
                sink.add(line, f"message.{problem}")
        else:
            sink.add(line, f"{kind} line without a 'message' object")
            if uuid is None:
                return None
    meta = get_dict(obj, "compactMetadata")
    return PlainNode(
        type=kind,
        uuid=uuid,
        parentUuid=get_str(obj, "parentUuid"),
        isSidechain=obj.get("isSidechain") is True,
        message=message,
        timestamp=get_str(obj, "timestamp"),
        sessionId=get_str(obj, "sessionId"),
        isCompactSummary=get_bool(obj, "isCompactSummary"),
        subtype=get_str(obj, "subtype"),
        compactMetadata=None
        if meta is None
        else PlainCompactMeta(
            get_str(meta, "trigger"),
            get_int(meta, "preTokens"),
            get_int(meta, "postTokens"),
            get_int(meta, "cumulativeDroppedTokens"),
        ),
        logicalParentUuid=get_str(obj, "logicalParentUuid"),
        totalCostUSD=_cost(obj.get("totalCostUSD")),
        attachment=_attachment(obj.get("attachment")),
        line=line,
        session_id=get_str(obj, "session_id"),
        parent_tool_use_id=get_str(obj, "parent_tool_use_id"),
        total_cost_usd=obj.get("total_cost_usd"),
        modelUsage=obj.get("modelUsage"),
        event=obj.get("event") if kind == "stream_event" else None,
    )


def _attachment(value: Any) -> PlainAttachment | None:
    if not isinstance(value, dict):
        return None
    return PlainAttachment(get_str(value, "type"), get_str(value, "hookEvent"), value.get("content"))


def _cost(value: Any) -> float | None:
    """A cost-state total: a finite non-negative number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value < float("inf") else None


def _lenient_message(raw: dict[str, Any], problems: list[str] | None = None) -> PlainMsg:
    usage = raw.get("usage")
    split = get_dict(usage, "cache_creation") if isinstance(usage, dict) else None
    details = get_dict(usage, "output_tokens_details") if isinstance(usage, dict) else None
    return PlainMsg(
        content=raw.get("content"),
        id=get_str(raw, "id"),
        model=get_str(raw, "model"),
        usage=None
        if not isinstance(usage, dict)
        else PlainUsage(
            count_tokens(usage, "input_tokens", problems),
            count_tokens(usage, "output_tokens", problems),
            count_tokens(usage, "cache_creation_input_tokens", problems),
            count_tokens(usage, "cache_read_input_tokens", problems),
            None
            if split is None
            else PlainCacheCreation(
                count_tokens(split, "ephemeral_5m_input_tokens", problems),
                count_tokens(split, "ephemeral_1h_input_tokens", problems),
            ),
            None
            if details is None
            else PlainOutputDetails(count_tokens(details, "thinking_tokens", problems)),
        ),
    )


def _iter_nodes(
    data: bytes, sink: WarningSink, first_line: int = 1, *, typed: bool = True, retry_typed: bool = False
) -> Iterator[PlainNode]:
    """Nodes of the non-blank lines of ``data`` in order; bad lines become warnings.

    ``typed=False, retry_typed=True`` reads lenient-first with the same result as the default
    (typed-first), without importing ``msgspec`` unless a line is not valid JSON to orjson.
    """
    if typed:
        from ctxhealth.sources.claude_code.typed import _typed_node
    # Lines are views into ``data`` (no copies); a file that is all ASCII needs no UTF-8 check.
    view = memoryview(data)
    find = data.find
    check_utf8 = not data.isascii()
    end = len(data)
    start = 0
    number = first_line - 1
    limit = max_line_bytes()
    while start < end:
        stop = find(b"\n", start)
        if stop < 0:
            stop = end
        number += 1
        if stop - start > limit:  # costs this line only; it is never decoded
            sink.add(number, long_line(stop - start, limit))
            start = stop + 1
            continue
        node = _typed_node(view[start:stop], check_utf8) if typed and stop > start else None
        if node is None:
            raw = data[start:stop]
            start = stop + 1
            if not raw or raw.isspace():
                continue
            node = _lenient_node(number, raw, sink, retry_typed)
            if node is None:
                continue
        else:
            start = stop + 1
            node.line = number
        yield node


def _read_nodes(data: bytes, sink: WarningSink, *, typed: bool = True) -> list[PlainNode]:
    """Nodes of every line of ``data``: a clean file in one decoder call
    (:func:`~ctxhealth.sources.claude_code.typed._typed_file`), else line by line; the same nodes."""
    if typed:
        from ctxhealth.sources.claude_code.typed import _typed_file

        nodes = _typed_file(data, max_line_bytes())
        if nodes is not None:
            return nodes
    return list(_iter_nodes(data, sink, typed=typed))
