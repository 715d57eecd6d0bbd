"""Assembly of a whole Claude Code session: main thread, sidechains and ``subagents/`` files.

Sidechain lines (``isSidechain``) and ``<session>/subagents/*.jsonl`` files become
``Session.sidechains``: one Session per sidechain tree. A file with no main-thread lines at all
(a sub-agent file read on its own) is read as its own main thread. The last ``cost-state`` line
(Claude Code 2.1's running total, compactions included) is ``Session.agent_cost_usd``; the
``hook_additional_context`` attachments (what hooks, ctxhealth's among them, added to the
conversation) are ``Session.injected_context``. Other attachment kinds are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ctxhealth.model import Format, InjectedContext, ReadWarning, Session
from ctxhealth.sources.claude_code.builder import _messages
from ctxhealth.sources.claude_code.records import _cost, _read_nodes
from ctxhealth.sources.claude_code.thread import _THREAD_KINDS, _chain, _is_message, _sidechain_groups
from ctxhealth.sources.lines import WarningSink

if TYPE_CHECKING:
    from ctxhealth.sources.claude_code.schema import _Node


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
    stream = _link_stream(nodes)
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
        agent_cost_usd=_agent_cost(nodes),
        injected_context=_injected(main_nodes),
        context_window=(window := _stated_window(nodes, model) if stream else None),
        window_whole=window is not None,
    )


def _injected(nodes: Sequence[_Node]) -> tuple[InjectedContext, ...]:
    """The ``hook_additional_context`` attachments (2.1) in file order: each text a hook added."""
    out: list[InjectedContext] = []
    for n in nodes:
        attachment = n.attachment
        if attachment is None or attachment.type != "hook_additional_context":
            continue
        content = attachment.content
        texts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        out.extend(
            InjectedContext(n.line, attachment.hookEvent, t) for t in texts if isinstance(t, str) and t
        )
    return tuple(out)


def _agent_cost(nodes: Sequence[_Node]) -> float | None:
    """Claude Code's own running total: the last ``cost-state`` line's ``totalCostUSD`` (2.1), or in
    a stream-json log the last ``result`` line's ``total_cost_usd``."""
    for n in reversed(nodes):
        if n.totalCostUSD is not None and n.type == "cost-state":
            return n.totalCostUSD
        if n.type == "result" and (cost := _cost(n.total_cost_usd)) is not None:
            return cost
    return None


def _stated_window(nodes: Sequence[_Node], model: str | None) -> int | None:
    """The window Claude Code worked with, as a stream-json log's last ``result`` line states it for
    the session's model (``modelUsage[...].contextWindow``: 1,000,000 for a ``[1m]`` session, whose
    responses name the plain model), else None (a transcript states none: not asked)."""
    if model is None:
        return None
    for n in reversed(nodes):
        if n.type != "result" or not isinstance(n.modelUsage, dict):
            continue
        for name, usage in n.modelUsage.items():
            if not isinstance(usage, dict):
                continue
            canonical = usage.get("canonicalModel")
            if (canonical if isinstance(canonical, str) else str(name).partition("[")[0]) != model:
                continue
            window = usage.get("contextWindow")
            if isinstance(window, int) and not isinstance(window, bool) and window > 0:
                return window
    return None


def _link_stream(nodes: Sequence[_Node]) -> bool:
    """A stream-json log (``claude -p --output-format stream-json --verbose``) as the tree a transcript
    is: its lines name the session as ``session_id`` and carry no ``parentUuid``; file order is the
    thread, and a sub-agent's lines (``parent_tool_use_id``, the call that started it) are a sidechain
    of their own, also in file order. A transcript (any line with a tree link) is left as it is.

    An assistant line carries the usage of its response's start (``output_tokens`` the first streamed
    count); with ``--include-partial-messages`` the ``message_delta`` event after it gives the
    response's output, which then is its usage's. True when ``nodes`` are such a log."""
    # a transcript's tree links start on its first lines: the cheap test first
    if any(n.parentUuid or n.logicalParentUuid for n in nodes) or not any(n.session_id for n in nodes):
        return False
    main: str | None = None
    sides: dict[str, str] = {}
    streaming: dict[str | None, str] = {}  # per thread, the response whose events are streaming
    output: dict[str, int] = {}
    for n in nodes:
        if n.sessionId is None:
            n.sessionId = n.session_id
        if n.type == "stream_event":
            _stream_event(n, streaming, output)
            continue
        if n.uuid is None or n.type not in _THREAD_KINDS:
            continue
        call = n.parent_tool_use_id
        if call:
            n.isSidechain = True
            n.parentUuid = sides.get(call)
            sides[call] = n.uuid
        else:
            n.parentUuid = main
            main = n.uuid
    if output:
        for n in nodes:
            message = n.message
            if n.type == "assistant" and message is not None and message.usage is not None:
                final = output.get(message.id or "")
                if final is not None and final > message.usage.output_tokens:
                    message.usage.output_tokens = final
    return True


def _stream_event(node: _Node, streaming: dict[str | None, str], output: dict[str, int]) -> None:
    """Note a ``message_start`` event's response id (per thread) and the output a ``message_delta``
    event states for the response streaming in that thread."""
    event = node.event
    if not isinstance(event, dict):
        return
    thread = node.parent_tool_use_id
    kind = event.get("type")
    if kind == "message_start":
        started = event.get("message")
        rid = started.get("id") if isinstance(started, dict) else None
        if isinstance(rid, str):
            streaming[thread] = rid
    elif kind == "message_delta" and thread in streaming:
        usage = event.get("usage")
        tokens = usage.get("output_tokens") if isinstance(usage, dict) else None
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
            output[streaming[thread]] = tokens
