"""Reader for Claude Code native JSONL transcripts (``~/.claude/projects/<dir>/<session>.jsonl``).

How a file becomes a :class:`Session`:

* Every line with a string ``uuid`` is a node of a tree linked by ``parentUuid``. The main
  thread is the chain walked back from the last non-sidechain node in file order.
* Compaction starts a new root. Newer versions write a ``system``/``compact_boundary`` line
  whose ``logicalParentUuid`` names the node before it; older versions (and boundaries without
  it) give the compaction summary (``isCompactSummary``) a null parent, and the walk continues
  from the last non-sidechain node before it in file order. A missing parent is bridged the
  same way, with a warning.
* Nodes off the chain (abandoned branches after a rewind) are dropped, with one warning
  counting the user/assistant lines dropped.
* Consecutive assistant lines sharing ``message.id`` are one response: one assistant
  :class:`Message`, usage kept once (max ``output_tokens``, since streamed lines often say 1).
  When tool results sit between two lines of the same response, the response is still merged
  and the results follow it.
* A compaction becomes a USER message holding a :class:`CompactionSummary`; trigger and
  ``preTokens`` come from the ``compact_boundary`` record before it when present.
* Sidechain lines (``isSidechain``) and ``<session>/subagents/*.jsonl`` files become
  ``Session.sidechains``: one Session per sidechain tree. A file with no main-thread lines at
  all (a sub-agent file read on its own) is read as its own main thread.
* ``summary``, ``file-history-snapshot``, ``queue-operation``, ``progress`` and other system
  lines are not messages; they are skipped silently (those with a ``uuid`` still link the tree).
* ``<synthetic>`` responses (Claude Code's own error stand-ins) keep their text but no model
  and no usage, so they never reset the reported fill to zero.

Decoding has two paths that give the same result. The typed path decodes a line with a
``msgspec`` schema declaring only the fields read here, so the rest of the line (notably the
top-level ``toolUseResult``, a structured copy of the tool result and over 40% of the bytes)
is skipped without building Python objects. Any line the schema rejects (a wrong type, an
unknown block type, a missing field, invalid JSON) or that is not valid UTF-8 is decoded again
by the lenient path (orjson plus typed getters), which produces the same warnings as ever.
Tool-call inputs are decoded by orjson in both paths, so their values are identical too. The
one difference: a number too large for a double, inside a field this reader never reads, makes
orjson reject the whole line, whereas the typed path reads the line.

:class:`ClaudeCodeTail` parses a growing transcript incrementally for hooks (see its docstring
for how it differs from the full reader).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec
import orjson

from ctxhealth.model import (
    Block,
    CompactionSummary,
    Format,
    ImageBlock,
    Message,
    ReadWarning,
    Role,
    Session,
    ThinkingBlock,
    ToolResult,
    Usage,
)
from ctxhealth.sources.anthropic_messages import count_tokens, parse_blocks
from ctxhealth.sources.lines import (
    BadJSON,
    WarningSink,
    get_bool,
    get_dict,
    get_int,
    get_str,
    head_objects,
    loads,
    make_call,
    make_message,
    make_result,
    make_text,
    make_usage,
    type_name,
    valid_utf8,
)

#: Top-level ``type`` values Claude Code writes that are not conversation messages.
_NON_MESSAGE_TYPES = frozenset(
    {"summary", "file-history-snapshot", "queue-operation", "progress", "system", "attachment"}
)
_DETECT_TYPES = frozenset({"user", "assistant", *_NON_MESSAGE_TYPES})
_SYNTHETIC = "<synthetic>"
_MESSAGE_KINDS = ("user", "assistant")
_THREAD_KINDS = ("user", "assistant", "system")


def detect(head: bytes) -> bool:
    """True when the first complete JSON lines of ``head`` look like Claude Code records."""
    seen = False
    for obj in head_objects(head):
        seen = True
        if not isinstance(obj, dict) or get_str(obj, "type") not in _DETECT_TYPES:
            continue
        if obj.get("type") == "summary" and "leafUuid" in obj:
            return True
        if "uuid" in obj or "sessionId" in obj or "messageId" in obj:
            return True
    if not seen:
        # The first line is longer than the head: judge its opening keys.
        first = head.lstrip()[:4096]
        return first.startswith(b"{") and b'"sessionId"' in first and b'"parentUuid"' in first
    return False


# --- the typed schema: only the fields this reader uses --------------------------------------
#
# Every field is as strict as the lenient path's getters are forgiving: a value the lenient path
# would coerce, ignore or warn about is rejected here, so that line goes to the lenient path.
# Integers are bounded to int64 because orjson turns larger ones into floats.

_Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _Usage(msgspec.Struct, gc=False):
    input_tokens: _Int = 0
    output_tokens: _Int = 0
    cache_creation_input_tokens: _Int = 0
    cache_read_input_tokens: _Int = 0


class _Text(msgspec.Struct, tag="text", gc=False):
    text: str


class _Thinking(msgspec.Struct, tag="thinking", gc=False):
    thinking: str = ""


class _RedactedThinking(msgspec.Struct, tag="redacted_thinking", gc=False):
    pass


class _ToolUse(msgspec.Struct, tag="tool_use", gc=False):
    id: str
    name: str
    # Kept raw and decoded by orjson, so a tool input has exactly the lenient path's values.
    input: msgspec.Raw = msgspec.Raw(b"null")


class _ServerToolUse(_ToolUse, tag="server_tool_use", gc=False):
    pass


class _McpToolUse(_ToolUse, tag="mcp_tool_use", gc=False):
    pass


class _Source(msgspec.Struct, gc=False):
    data: str = ""
    media_type: str = ""


class _Image(msgspec.Struct, tag="image", gc=False):
    source: _Source | None = None


class _Document(msgspec.Struct, tag="document", gc=False):
    source: _Source | None = None


class _ResultText(msgspec.Struct, tag="text", gc=False):
    text: str = ""


class _ToolResult(msgspec.Struct, tag="tool_result", gc=False):
    tool_use_id: str
    content: str | list[str | _ResultText | _Image | _Document] | None = None
    is_error: bool | None = None


_TypedBlock = (
    str | _Text | _Thinking | _RedactedThinking | _ToolUse | _ServerToolUse | _McpToolUse | _ToolResult
)


class _Msg(msgspec.Struct, gc=False):
    """``message`` of a line. ``content`` is raw JSON on the lenient path (``blocks`` None)."""

    content: str | list[_TypedBlock | _Image | _Document] | None = None
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    # Filled after decoding (typed path only): the content as model blocks. The odd JSON name
    # keeps it apart from real keys; a line that had such a key is overwritten anyway.
    blocks: list[Any] | None = msgspec.field(default=None, name="(ctxhealth blocks)")


class _CompactMeta(msgspec.Struct, gc=False):
    trigger: str | None = None
    preTokens: _Int | None = None


class _Node(msgspec.Struct, gc=False):
    """One line of the transcript, with its tree links (both decoding paths build this)."""

    type: str
    uuid: str | None = None
    parentUuid: str | None = None  # camelCase: JSON keys, decoded by name
    isSidechain: bool = False
    message: _Msg | None = None
    timestamp: str | None = None
    sessionId: str | None = None
    isCompactSummary: bool = False
    subtype: str | None = None
    compactMetadata: _CompactMeta | None = None
    logicalParentUuid: str | None = None
    # Set after decoding: the 1-based line number (see ``_Msg.blocks`` for the name).
    line: int = msgspec.field(default=0, name="(ctxhealth line)")


_DECODE = msgspec.json.Decoder(_Node).decode


def _typed_blocks(content: Any) -> list[Block]:
    """Model blocks of a typed ``content``; raises ``orjson.JSONDecodeError`` on a bad tool input."""
    if content is None:
        return []
    if type(content) is str:
        return [make_text(content)]
    blocks: list[Block] = []
    append = blocks.append
    for item in content:
        cls = type(item)
        if cls is _Text:
            append(make_text(item.text))
        elif cls is _ToolResult:
            inner = item.content
            if inner is None:
                append(make_result(item.tool_use_id, "", item.is_error is True))
            elif type(inner) is str:
                append(make_result(item.tool_use_id, inner, item.is_error is True))
            else:
                parts: list[str] = []
                images: list[Block] = []
                for part in inner:
                    kind = type(part)
                    if kind is _ResultText:
                        parts.append(part.text)
                    elif kind is str:
                        parts.append(part)
                    else:
                        images.append(_typed_image(part))
                append(make_result(item.tool_use_id, "\n".join(parts), item.is_error is True))
                blocks.extend(images)
        elif cls is _ToolUse or cls is _ServerToolUse or cls is _McpToolUse:
            append(make_call(item.id, item.name, orjson.loads(memoryview(item.input))))
        elif cls is _Thinking:
            append(ThinkingBlock(item.thinking))
        elif cls is str:
            append(make_text(item))
        elif cls is _RedactedThinking:
            append(ThinkingBlock(""))
        else:
            append(_typed_image(item))
    return blocks


def _typed_image(item: _Image | _Document) -> ImageBlock:
    source = item.source
    kind = "image" if type(item) is _Image else "document"
    if source is None:
        return ImageBlock(media_type=kind, approx_bytes=0)
    return ImageBlock(media_type=source.media_type or kind, approx_bytes=len(source.data) * 3 // 4)


def _typed_node(raw: bytes | memoryview, check_utf8: bool) -> _Node | None:
    """The typed path: a node, or None when the lenient path must read this line."""
    if check_utf8 and not valid_utf8(raw):
        return None
    try:
        node = _DECODE(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if node.type in _MESSAGE_KINDS:
        message = node.message
        if message is None:
            return None  # the lenient path words the warning
        try:
            message.blocks = _typed_blocks(message.content)
        except orjson.JSONDecodeError:
            return None
    return node


def _lenient_node(line: int, raw: bytes, sink: WarningSink) -> _Node | None:
    """The lenient path: any JSON, wrong types coerced or warned about, never an exception."""
    try:
        obj = loads(raw)
    except BadJSON as exc:
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
    message: _Msg | None = None
    if kind in _MESSAGE_KINDS:
        raw_message = obj.get("message")
        if isinstance(raw_message, dict):
            message = _lenient_message(raw_message)
        else:
            sink.add(line, f"{kind} line without a 'message' object")
            if uuid is None:
                return None
    meta = get_dict(obj, "compactMetadata")
    return _Node(
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
        else _CompactMeta(get_str(meta, "trigger"), get_int(meta, "preTokens")),
        logicalParentUuid=get_str(obj, "logicalParentUuid"),
        line=line,
    )


def _lenient_message(raw: dict[str, Any]) -> _Msg:
    usage = raw.get("usage")
    return _Msg(
        content=raw.get("content"),
        id=get_str(raw, "id"),
        model=get_str(raw, "model"),
        usage=None
        if not isinstance(usage, dict)
        else _Usage(
            count_tokens(usage, "input_tokens"),
            count_tokens(usage, "output_tokens"),
            count_tokens(usage, "cache_creation_input_tokens"),
            count_tokens(usage, "cache_read_input_tokens"),
        ),
    )


def _iter_nodes(
    data: bytes, sink: WarningSink, first_line: int = 1, *, typed: bool = True
) -> Iterator[_Node]:
    """Nodes of the non-blank lines of ``data`` in order; bad lines become warnings."""
    # Lines are views into ``data`` (no copies); a file that is all ASCII needs no UTF-8 check.
    view = memoryview(data)
    find = data.find
    check_utf8 = not data.isascii()
    end = len(data)
    start = 0
    number = first_line - 1
    while start < end:
        stop = find(b"\n", start)
        if stop < 0:
            stop = end
        number += 1
        node = _typed_node(view[start:stop], check_utf8) if typed and stop > start else None
        if node is None:
            raw = data[start:stop]
            start = stop + 1
            if not raw or raw.isspace():
                continue
            node = _lenient_node(number, raw, sink)
            if node is None:
                continue
        else:
            start = stop + 1
            node.line = number
        yield node


def _read_nodes(data: bytes, sink: WarningSink, *, typed: bool = True) -> list[_Node]:
    return list(_iter_nodes(data, sink, typed=typed))


def _is_boundary(node: _Node) -> bool:
    return node.type == "system" and node.subtype == "compact_boundary"


def _is_message(node: _Node) -> bool:
    return node.message is not None and node.type in _MESSAGE_KINDS


@dataclass(slots=True)
class _Draft:
    """A message being assembled (assistant responses may span several lines)."""

    role: Role
    blocks: list[Block]
    line: int
    id: str | None = None
    response_id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    timestamp: str | None = None
    sidechain: bool = False
    tool_results_only: bool = False

    def freeze(self) -> Message:
        return make_message(
            self.role,
            tuple(self.blocks),
            self.id,
            self.response_id,
            self.model,
            self.usage,
            self.timestamp,
            self.sidechain,
            self.line,
        )


def _chain(nodes: Sequence[_Node], sink: WarningSink, label: str, *, main: bool = True) -> list[_Node]:
    """The thread ending at the last node of ``nodes`` (all of one side: main or one sidechain).

    A sidechain (``main=False``) may start from a node of the thread that spawned it: a parent
    outside ``nodes`` is then its root, not a broken link.
    """
    if not nodes:
        return []
    by_uuid = {n.uuid: n for n in nodes if n.uuid is not None}
    position: dict[int, int] | None = None

    def previous(n: _Node) -> _Node | None:
        """The last thread node (user / assistant / system with a uuid) before ``n``."""
        nonlocal position
        if position is None:
            position = {id(m): i for i, m in enumerate(nodes)}
        i = position[id(n)] - 1
        while i >= 0:
            candidate = nodes[i]
            if candidate.uuid is not None and candidate.type in _THREAD_KINDS:
                return candidate
            i -= 1
        return None

    chain: list[_Node] = []
    seen: set[int] = set()
    cur: _Node | None
    # The leaf is the last conversation line: progress / attachment lines can hang off older
    # lines and are written late, so they must not choose the thread.
    cur = next((n for n in reversed(nodes) if n.uuid is not None and n.type in _THREAD_KINDS), None)
    if cur is None:
        cur = next((n for n in reversed(nodes) if n.uuid is not None), None)
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        chain.append(cur)
        parent = cur.parentUuid
        if parent is None:
            logical = cur.logicalParentUuid
            if logical is not None and logical in by_uuid:
                cur = by_uuid[logical]
            elif cur.isCompactSummary or _is_boundary(cur):
                cur = previous(cur)
            else:
                cur = None
        elif parent in by_uuid:
            cur = by_uuid[parent]
        elif not main:
            cur = None
        else:
            sink.add(cur.line, f"parent {parent[:40]} not found; {label} continues from the line before")
            cur = previous(cur)
    if cur is not None and id(cur) in seen:
        sink.add(cur.line, f"cycle in parentUuid links at this line; {label} cut there")
    chain.reverse()
    if len(chain) < len(nodes):
        dropped = [
            n for n in nodes if n.message is not None and n.type in _MESSAGE_KINDS and id(n) not in seen
        ]
        unlinked = [n for n in dropped if n.uuid is None]
        branched = [n for n in dropped if n.uuid is not None]
        if branched:
            sink.add(
                branched[0].line,
                f"{len(branched)} lines not on the {label} (abandoned branches after a rewind) were dropped",
            )
        if unlinked:
            sink.add(
                unlinked[0].line, f"{len(unlinked)} message lines without a uuid cannot be placed; dropped"
            )
    return chain


def _blocks(node: _Node, message: _Msg, sink: WarningSink) -> list[Block]:
    """The message's content as model blocks (already converted on the typed path).

    The list is the draft's own from here on (a merged response extends it): every node is
    built at most once, and nodes are dropped after the read.
    """
    blocks = message.blocks
    if blocks is None:
        return parse_blocks(message.content, sink, node.line)
    return blocks


def _usage(raw: _Usage | None) -> Usage | None:
    if raw is None:
        return None
    created = raw.cache_creation_input_tokens
    read = raw.cache_read_input_tokens
    return make_usage(
        raw.input_tokens if raw.input_tokens > 0 else 0,
        raw.output_tokens if raw.output_tokens > 0 else 0,
        created if created > 0 else 0,
        read if read > 0 else 0,
    )


class _Builder:
    """Turns thread nodes (in order) into messages: merging responses, attaching compactions."""

    def __init__(self, sink: WarningSink, sidechain: bool) -> None:
        self.sink = sink
        self.sidechain = sidechain
        self.drafts: list[_Draft] = []
        self.last_assistant: int | None = None
        self.boundary: tuple[str | None, int | None, int] | None = None
        self.model: str | None = None

    def add(self, node: _Node) -> None:
        kind = node.type
        if kind == "system":
            if node.subtype == "compact_boundary":
                self._flush_boundary()
                meta = node.compactMetadata
                if meta is None:
                    self.boundary = (None, None, node.line)
                else:
                    self.boundary = (meta.trigger, meta.preTokens, node.line)
            return
        message = node.message
        if message is None or kind not in _MESSAGE_KINDS:
            return
        if kind == "assistant":
            if self.boundary is not None:
                self._flush_boundary()
            self._assistant(node, message)
        elif node.isCompactSummary:
            self._compaction(node, message)
        else:
            if self.boundary is not None:
                self._flush_boundary()
            self._user(node, message)

    def finish(self, *, flush: bool = True) -> list[Message]:
        if flush:
            self._flush_boundary()
        return [d.freeze() for d in self.drafts]

    def _flush_boundary(self) -> None:
        """A boundary not followed by its summary still records that a compaction happened."""
        if self.boundary is None:
            return
        trigger, pre, line = self.boundary
        self.boundary = None
        summary = CompactionSummary("", trigger=trigger, pre_tokens=pre)
        self.drafts.append(_Draft(Role.USER, [summary], line, sidechain=self.sidechain))

    def _compaction(self, node: _Node, message: _Msg) -> None:
        trigger: str | None = None
        pre: int | None = None
        if self.boundary is not None:
            trigger, pre, _ = self.boundary
            self.boundary = None
        blocks = _blocks(node, message, self.sink)
        text = "\n".join(getattr(b, "text", "") for b in blocks if not isinstance(b, ToolResult))
        summary = CompactionSummary(text, trigger=trigger, pre_tokens=pre)
        self.drafts.append(
            _Draft(
                Role.USER, [summary], node.line, node.uuid, timestamp=node.timestamp, sidechain=self.sidechain
            )
        )

    def _user(self, node: _Node, message: _Msg) -> None:
        blocks = message.blocks
        if blocks is None:
            blocks = _blocks(node, message, self.sink)
        only_results = bool(blocks) and all(type(b) is ToolResult for b in blocks)
        self.drafts.append(
            _Draft(
                Role.USER,
                blocks,
                node.line,
                node.uuid,
                None,
                None,
                None,
                node.timestamp,
                self.sidechain,
                only_results,
            )
        )

    def _assistant(self, node: _Node, message: _Msg) -> None:
        blocks = message.blocks
        if blocks is None:
            blocks = _blocks(node, message, self.sink)
        response_id = message.id
        model = message.model
        raw_usage = message.usage
        if model == _SYNTHETIC:
            model = None
            raw_usage = None
        if model:
            self.model = model
        last_index = self.last_assistant
        if response_id is not None and last_index is not None:
            drafts = self.drafts
            last = drafts[last_index]
            if last.response_id == response_id and (
                last_index == len(drafts) - 1
                or all(drafts[i].tool_results_only for i in range(last_index + 1, len(drafts)))
            ):
                last.blocks.extend(blocks)
                last.model = last.model or model
                if last.usage is None:
                    last.usage = _usage(raw_usage)
                elif raw_usage is not None and raw_usage.output_tokens > last.usage.output_tokens:
                    # repeated usage; streamed lines often under-report output, so keep the max
                    kept = last.usage
                    last.usage = make_usage(
                        kept.input_tokens,
                        raw_usage.output_tokens,
                        kept.cache_creation_tokens,
                        kept.cache_read_tokens,
                    )
                return
        usage = _usage(raw_usage)
        self.drafts.append(
            _Draft(
                Role.ASSISTANT,
                blocks,
                node.line,
                node.uuid,
                response_id,
                model,
                usage,
                node.timestamp,
                self.sidechain,
            )
        )
        self.last_assistant = len(self.drafts) - 1


def _messages(nodes: Iterable[_Node], sink: WarningSink, sidechain: bool) -> tuple[list[Message], str | None]:
    builder = _Builder(sink, sidechain)
    add = builder.add
    for n in nodes:
        add(n)
    return builder.finish(), builder.model


def _sidechain_groups(nodes: Sequence[_Node]) -> list[list[_Node]]:
    """Group sidechain nodes by the root of their tree (file order within and across groups)."""
    by_uuid = {n.uuid: n for n in nodes if n.uuid is not None}
    root_of: dict[int, int] = {}
    groups: dict[int, list[_Node]] = {}
    for n in nodes:
        path: list[_Node] = []
        cur: _Node | None = n
        root: int | None = None
        while cur is not None:
            known = root_of.get(id(cur))
            if known is not None:
                root = known
                break
            if len(path) > len(nodes):
                break
            path.append(cur)
            parent = cur.parentUuid
            cur = by_uuid.get(parent) if parent is not None else None
        if root is None:
            root = id(path[-1]) if path else id(n)
        for p in path:
            root_of[id(p)] = root
        groups.setdefault(root, []).append(n)
    return list(groups.values())


def _session_id(nodes: Iterable[_Node]) -> str | None:
    for n in nodes:
        if n.sessionId:
            return n.sessionId
    return None


def _thread_session(path: str, nodes: list[_Node], sink: WarningSink, label: str) -> Session:
    chain = _chain([n for n in nodes if n.uuid is not None or _is_message(n)], sink, label, main=False)
    messages, model = _messages(chain, sink, sidechain=True)
    return Session(
        path=path,
        format=Format.CLAUDE_CODE,
        messages=tuple(messages),
        session_id=_session_id(nodes),
        model=model,
    )


def parse(
    data: bytes, path: str, subagents: Sequence[tuple[str, bytes]] = (), *, typed: bool = True
) -> Session:
    """Read one Claude Code session file (plus its sub-agent files) into a :class:`Session`.

    ``subagents`` are ``(path, bytes)`` pairs of ``<session>/subagents/*.jsonl`` files; each
    becomes one sidechain Session. Their warnings are reported on the returned session too.
    ``typed=False`` decodes every line with the lenient path only (same result, slower; for
    comparisons and tests).
    """
    sink = WarningSink(path)
    nodes = _read_nodes(data, sink, typed=typed)
    main_nodes = [n for n in nodes if not n.isSidechain]
    if len(main_nodes) == len(nodes):
        side_nodes: list[_Node] = []
    else:
        side_nodes = [n for n in nodes if n.isSidechain]
    main_is_side = False
    if side_nodes and not any(_is_message(n) for n in main_nodes):
        main_nodes, side_nodes = side_nodes, []
        main_is_side = True
    chain = _chain(main_nodes, sink, "main thread")
    messages, model = _messages(chain, sink, sidechain=main_is_side)

    sidechains: list[Session] = []
    for group in _sidechain_groups(side_nodes):
        sidechains.append(_thread_session(path, group, sink, "sidechain"))
    extra_warnings: list[ReadWarning] = []
    for sub_path, sub_data in subagents:
        sub_sink = WarningSink(sub_path)
        sub_nodes = _read_nodes(sub_data, sub_sink, typed=typed)
        if sub_nodes:
            sidechains.append(_thread_session(sub_path, sub_nodes, sub_sink, "sub-agent thread"))
        extra_warnings.extend(sub_sink.result())

    return Session(
        path=path,
        format=Format.CLAUDE_CODE,
        messages=tuple(messages),
        session_id=_session_id(nodes),
        model=model,
        sidechains=tuple(sidechains),
        warnings=sink.result() + tuple(extra_warnings),
    )


@dataclass(slots=True)
class TailState:
    """What :class:`ClaudeCodeTail` has seen so far besides main-thread messages."""

    session_id: str | None = None
    model: str | None = None
    sidechain_lines: int = 0
    compactions: int = 0
    last_compaction: CompactionSummary | None = None
    warnings: list[ReadWarning] = field(default_factory=list)


class ClaudeCodeTail:
    """Incremental parser for a growing Claude Code transcript (hooks, status line).

    Feed it the bytes appended since the last call; it returns main-thread messages for the
    complete lines and keeps a trailing partial line for the next call. ``consumed`` is the
    number of bytes of complete lines processed so far (add it to a cached start offset).

    Differences from :func:`parse` (kept simple so a hook stays O(new bytes)):

    * no branch resolution: every non-sidechain user/assistant line is taken in file order,
      so after a rewind the abandoned branch's lines are still returned;
    * responses are merged only within one :meth:`feed` call; a response whose lines span two
      calls comes out as two messages with the same ``response_id`` (dedupe usage by it);
    * sidechain lines are counted in ``state.sidechain_lines``, not returned; compactions are
      returned as USER messages with a :class:`CompactionSummary` and counted in ``state``.
    """

    def __init__(self, path: str = "<transcript>") -> None:
        self.path = path
        self.state = TailState()
        self.consumed = 0
        self.next_line = 1
        self._partial = b""
        self._boundary: tuple[str | None, int | None, int] | None = None

    @property
    def pending(self) -> bytes:
        """The partial last line held back for the next call."""
        return self._partial

    def feed(self, data: bytes, start_line: int | None = None) -> list[Message]:
        """Parse the complete lines in ``data``; ``start_line`` numbers its first line (1-based).

        ``start_line`` is honoured only when no partial line is pending (a resumed hook passes
        the line count it cached with its byte offset, plus one).
        """
        if start_line is not None and not self._partial:
            self.next_line = start_line
        buffer = self._partial + data
        cut = buffer.rfind(b"\n")
        if cut == -1:
            self._partial = buffer
            return []
        complete, self._partial = buffer[: cut + 1], buffer[cut + 1 :]
        self.consumed += len(complete)
        first = self.next_line
        self.next_line += complete.count(b"\n")
        sink = WarningSink(self.path)
        builder = _Builder(sink, sidechain=False)
        builder.boundary = self._boundary
        for node in _iter_nodes(complete, sink, first):
            sid = node.sessionId
            if sid and self.state.session_id is None:
                self.state.session_id = sid
            if node.isSidechain:
                self.state.sidechain_lines += 1
                continue
            builder.add(node)
        messages = builder.finish(flush=False)
        self._boundary = builder.boundary
        for m in messages:
            summary = m.compaction
            if summary is not None:
                self.state.compactions += 1
                self.state.last_compaction = summary
        if builder.model:
            self.state.model = builder.model
        self.state.warnings.extend(sink.result())
        return messages
