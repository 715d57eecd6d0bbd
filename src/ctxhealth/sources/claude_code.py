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

:class:`ClaudeCodeTail` parses a growing transcript incrementally for hooks (see its docstring
for how it differs from the full reader).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ctxhealth.model import (
    Block,
    CompactionSummary,
    Format,
    Message,
    ReadWarning,
    Role,
    Session,
    ToolResult,
    Usage,
)
from ctxhealth.sources.anthropic_messages import count_tokens, parse_blocks, parse_usage
from ctxhealth.sources.lines import (
    BadJSON,
    WarningSink,
    get_bool,
    get_dict,
    get_int,
    get_str,
    loads,
    split_lines,
    type_name,
)

#: Top-level ``type`` values Claude Code writes that are not conversation messages.
_NON_MESSAGE_TYPES = frozenset(
    {"summary", "file-history-snapshot", "queue-operation", "progress", "system", "attachment"}
)
_DETECT_TYPES = frozenset({"user", "assistant", *_NON_MESSAGE_TYPES})
_SYNTHETIC = "<synthetic>"


def detect(head: bytes) -> bool:
    """True when the first complete JSON lines of ``head`` look like Claude Code records."""
    seen = 0
    for tried, (_, raw) in enumerate(split_lines(head)):
        if seen >= 5 or tried >= 8:
            break
        if not raw.lstrip().startswith(b"{"):
            continue
        try:
            obj = loads(raw)
        except BadJSON:
            continue
        seen += 1
        if not isinstance(obj, dict) or get_str(obj, "type") not in _DETECT_TYPES:
            continue
        if obj.get("type") == "summary" and "leafUuid" in obj:
            return True
        if "uuid" in obj or "sessionId" in obj or "messageId" in obj:
            return True
    if seen == 0:
        # The first line is longer than the head: judge its opening keys.
        first = head.lstrip()[:4096]
        return first.startswith(b"{") and b'"sessionId"' in first and b'"parentUuid"' in first
    return False


@dataclass(slots=True)
class _Node:
    """One parsed line with its tree links."""

    line: int
    kind: str
    obj: dict[str, Any]
    uuid: str | None
    parent: str | None
    sidechain: bool


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
    meta: bool = False
    tool_results_only: bool = False

    def freeze(self) -> Message:
        return Message(
            role=self.role,
            blocks=tuple(self.blocks),
            id=self.id,
            response_id=self.response_id,
            model=self.model,
            usage=self.usage,
            timestamp=self.timestamp,
            sidechain=self.sidechain,
            line=self.line,
        )


def _node(line: int, raw: bytes, sink: WarningSink) -> _Node | None:
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
    uuid = obj.get("uuid")
    if not isinstance(uuid, str):
        uuid = None
    if kind in ("user", "assistant") and not isinstance(obj.get("message"), dict):
        sink.add(line, f"{kind} line without a 'message' object")
        if uuid is None:
            return None
    parent = obj.get("parentUuid")
    return _Node(
        line,
        kind,
        obj,
        uuid,
        parent if isinstance(parent, str) else None,
        obj.get("isSidechain") is True,
    )


def _is_boundary(node: _Node) -> bool:
    return node.kind == "system" and node.obj.get("subtype") == "compact_boundary"


def _is_thread_node(node: _Node) -> bool:
    """A line that can end or bridge the conversation thread (not progress / attachments)."""
    return node.uuid is not None and node.kind in ("user", "assistant", "system")


def _is_message(node: _Node) -> bool:
    return node.kind in ("user", "assistant") and get_dict(node.obj, "message") is not None


def _chain(nodes: Sequence[_Node], sink: WarningSink, label: str, *, main: bool = True) -> list[_Node]:
    """The thread ending at the last node of ``nodes`` (all of one side: main or one sidechain).

    A sidechain (``main=False``) may start from a node of the thread that spawned it: a parent
    outside ``nodes`` is then its root, not a broken link.
    """
    if not nodes:
        return []
    by_uuid: dict[str, _Node] = {}
    for n in nodes:
        if n.uuid is not None:
            by_uuid[n.uuid] = n
    position = {id(n): i for i, n in enumerate(nodes)}

    def previous(n: _Node) -> _Node | None:
        i = position[id(n)] - 1
        while i >= 0:
            candidate = nodes[i]
            if _is_thread_node(candidate):
                return candidate
            i -= 1
        return None

    chain: list[_Node] = []
    seen: set[int] = set()
    cur: _Node | None
    # The leaf is the last conversation line: progress / attachment lines can hang off older
    # lines and are written late, so they must not choose the thread.
    cur = next((n for n in reversed(nodes) if _is_thread_node(n)), None)
    if cur is None:
        cur = next((n for n in reversed(nodes) if n.uuid is not None), None)
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        chain.append(cur)
        parent = cur.parent
        if parent is None:
            logical = get_str(cur.obj, "logicalParentUuid")
            if logical is not None and logical in by_uuid:
                cur = by_uuid[logical]
            elif _is_boundary(cur) or get_bool(cur.obj, "isCompactSummary"):
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
    on_chain = {id(n) for n in chain}
    dropped = [n for n in nodes if id(n) not in on_chain and _is_message(n)]
    unlinked = [n for n in dropped if n.uuid is None]
    branched = [n for n in dropped if n.uuid is not None]
    if branched:
        sink.add(
            branched[0].line,
            f"{len(branched)} lines not on the {label} (abandoned branches after a rewind) were dropped",
        )
    if unlinked:
        sink.add(unlinked[0].line, f"{len(unlinked)} message lines without a uuid cannot be placed; dropped")
    return chain


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
        if _is_boundary(node):
            self._flush_boundary()
            meta = get_dict(node.obj, "compactMetadata") or {}
            self.boundary = (get_str(meta, "trigger"), get_int(meta, "preTokens"), node.line)
            return
        if not _is_message(node):
            return
        message = node.obj["message"]
        if node.kind == "assistant":
            self._flush_boundary()
            self._assistant(node, message)
        elif get_bool(node.obj, "isCompactSummary"):
            self._compaction(node, message)
        else:
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

    def _compaction(self, node: _Node, message: dict[str, Any]) -> None:
        trigger: str | None = None
        pre: int | None = None
        if self.boundary is not None:
            trigger, pre, _ = self.boundary
            self.boundary = None
        blocks = parse_blocks(message.get("content"), self.sink, node.line)
        text = "\n".join(getattr(b, "text", "") for b in blocks if not isinstance(b, ToolResult))
        draft = self._draft(Role.USER, node, [CompactionSummary(text, trigger=trigger, pre_tokens=pre)])
        self.drafts.append(draft)

    def _user(self, node: _Node, message: dict[str, Any]) -> None:
        blocks = parse_blocks(message.get("content"), self.sink, node.line)
        draft = self._draft(Role.USER, node, blocks)
        draft.tool_results_only = bool(blocks) and all(isinstance(b, ToolResult) for b in blocks)
        self.drafts.append(draft)

    def _assistant(self, node: _Node, message: dict[str, Any]) -> None:
        blocks = parse_blocks(message.get("content"), self.sink, node.line)
        response_id = get_str(message, "id")
        model = get_str(message, "model")
        raw_usage = message.get("usage")
        if model == _SYNTHETIC:
            model = raw_usage = None
        if model:
            self.model = model
        if response_id is not None and self.last_assistant is not None:
            last = self.drafts[self.last_assistant]
            if last.response_id == response_id and self._only_results_since(self.last_assistant):
                last.blocks.extend(blocks)
                last.model = last.model or model
                if last.usage is None:
                    last.usage = parse_usage(raw_usage)
                elif isinstance(raw_usage, dict):
                    # repeated usage; streamed lines often under-report output, so keep the max
                    output = count_tokens(raw_usage, "output_tokens")
                    if output > last.usage.output_tokens:
                        last.usage = replace(last.usage, output_tokens=output)
                return
        draft = self._draft(Role.ASSISTANT, node, blocks)
        draft.response_id = response_id
        draft.model = model
        draft.usage = parse_usage(raw_usage)
        self.drafts.append(draft)
        self.last_assistant = len(self.drafts) - 1

    def _only_results_since(self, index: int) -> bool:
        drafts = self.drafts
        return all(drafts[i].tool_results_only for i in range(index + 1, len(drafts)))

    def _draft(self, role: Role, node: _Node, blocks: list[Block]) -> _Draft:
        return _Draft(
            role=role,
            blocks=blocks,
            line=node.line,
            id=node.uuid,
            timestamp=get_str(node.obj, "timestamp"),
            sidechain=self.sidechain,
        )


def _messages(nodes: Iterable[_Node], sink: WarningSink, sidechain: bool) -> tuple[list[Message], str | None]:
    builder = _Builder(sink, sidechain)
    for n in nodes:
        builder.add(n)
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
            parent = cur.parent
            cur = by_uuid.get(parent) if parent is not None else None
        if root is None:
            root = id(path[-1]) if path else id(n)
        for p in path:
            root_of[id(p)] = root
        groups.setdefault(root, []).append(n)
    return list(groups.values())


def _session_id(nodes: Iterable[_Node]) -> str | None:
    for n in nodes:
        sid = get_str(n.obj, "sessionId")
        if sid:
            return sid
    return None


def _read_nodes(data: bytes, sink: WarningSink) -> list[_Node]:
    nodes: list[_Node] = []
    for line, raw in split_lines(data):
        node = _node(line, raw, sink)
        if node is not None:
            nodes.append(node)
    return nodes


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


def parse(data: bytes, path: str, subagents: Sequence[tuple[str, bytes]] = ()) -> Session:
    """Read one Claude Code session file (plus its sub-agent files) into a :class:`Session`.

    ``subagents`` are ``(path, bytes)`` pairs of ``<session>/subagents/*.jsonl`` files; each
    becomes one sidechain Session. Their warnings are reported on the returned session too.
    """
    sink = WarningSink(path)
    nodes = _read_nodes(data, sink)
    main_nodes = [n for n in nodes if not n.sidechain]
    side_nodes = [n for n in nodes if n.sidechain]
    if not any(_is_message(n) for n in main_nodes) and side_nodes:
        main_nodes, side_nodes = side_nodes, []
        main_is_side = True
    else:
        main_is_side = False
    chain = _chain(main_nodes, sink, "main thread")
    messages, model = _messages(chain, sink, sidechain=main_is_side)

    sidechains: list[Session] = []
    for group in _sidechain_groups(side_nodes):
        sidechains.append(_thread_session(path, group, sink, "sidechain"))
    extra_warnings: list[ReadWarning] = []
    for sub_path, sub_data in subagents:
        sub_sink = WarningSink(sub_path)
        sub_nodes = _read_nodes(sub_data, sub_sink)
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
        for line, raw in split_lines(complete, first):
            node = _node(line, raw, sink)
            if node is None:
                continue
            sid = get_str(node.obj, "sessionId")
            if sid and self.state.session_id is None:
                self.state.session_id = sid
            if node.sidechain:
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
