"""Reader for OpenHands logs: LLM-completion files and ``output.jsonl`` evaluation results.

**Completion logs** (``llm_completions/<instance>/<model>-<unix time>.json``): one JSON object per
model call, ``{messages, response, args, kwargs, timestamp, cost}``. ``messages`` is the whole
context sent on that call (Chat Completions roles, content parts that may carry
``cache_control``); ``response`` is the provider's answer (``choices[0].message`` and ``usage``,
which for Anthropic models through LiteLLM counts cache writes and reads inside
``prompt_tokens``). A folder of such files is one session: the calls in time order; each call
adds the messages its context has beyond the previous call's context and the response after it,
and the response carries that call's usage (fill is reported per call). A call whose context
does not start with the previous one (the agent condensed or edited its history) starts a new
live context, marked with a :class:`CompactionSummary`.

**Evaluation output** (``output.jsonl``): one line per instance, ``{instance_id, instruction,
history, test_result?, report?, metadata?}``; ``history`` is the event stream (actions with
``action`` and ``args``, observations with ``observation``, ``content``, ``extras`` and a
``cause`` naming their action). ``test_result.report.resolved`` or ``report.resolved`` is kept as
the outcome when present.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec.structs

from ctxhealth.model import (
    Block,
    CompactionSummary,
    Format,
    Message,
    Role,
    Session,
    TextBlock,
    ToolCall,
    ToolResult,
)
from ctxhealth.sources.lines import (
    BadJSON,
    WarningSink,
    dumps,
    get_dict,
    get_list,
    get_str,
    load_document,
    loads,
    split_lines,
    type_name,
)
from ctxhealth.sources.openai_chat import _ROLES, chat_message, parse_usage
from ctxhealth.sources.sniff import openhands_output

#: What OpenHands' tools append or prepend to a result: the shell's exit code, an editor error.
_EXIT_CODE = re.compile(r"\[Command finished with exit code (-?\d+)\]\s*\Z")
_EDITOR_ERROR = re.compile(r"\A\s*ERROR:")
#: Provider routing prefixes that LiteLLM puts before a model id (``litellm_proxy/``,
#: ``anthropic/``, Bedrock's ``anthropic.`` / ``us.anthropic.``).
_MODEL_PREFIX = re.compile(r"^(?:[\w.-]+/)*(?:(?:us|eu|apac)\.)?(?:anthropic\.)?")


def model_id(raw: str | None) -> str | None:
    """``litellm_proxy/anthropic.claude-3-5-sonnet-20241022-v2:0`` -> ``claude-3-5-sonnet-20241022-v2:0``."""
    if not raw:
        return raw
    return _MODEL_PREFIX.sub("", raw) or raw


# --- completion logs ----------------------------------------------------------------------------


def parse(data: bytes, path: str) -> Session:
    """One file: a single model call, or an ``output.jsonl`` (its first instance)."""
    if openhands_output(data[:65536]):
        sessions = parse_all(data, path)
        return sessions[0] if sessions else Session(path=path, format=Format.OPENHANDS, messages=())
    return parse_calls([(path, data)], path)


def parse_calls(files: Iterable[tuple[str, bytes]], path: str, session_id: str | None = None) -> Session:
    """The calls of one run (one file each, any order) -> one :class:`Session`."""
    sink = WarningSink(path)
    calls = []
    for name, data in files:
        call_sink = WarningSink(name)
        doc = load_document(data, call_sink)
        for warning in call_sink.result():
            sink.add(None, f"{name}: {warning.reason}")
        if not isinstance(doc, dict):
            if doc is not None:
                sink.add(None, f"{name}: document is {type_name(doc)}, expected an object")
            continue
        stamp = doc.get("timestamp")
        calls.append((stamp if isinstance(stamp, (int, float)) else 0.0, name, doc))
    calls.sort(key=lambda item: (item[0], item[1]))
    builder = _CallBuilder(sink)
    for stamp, name, doc in calls:
        builder.add(doc, name, stamp)
    return Session(
        path=path,
        format=Format.OPENHANDS,
        messages=tuple(builder.messages),
        session_id=session_id,
        model=builder.model,
        warnings=sink.result(),
        task_id=session_id,
    )


def _key(raw: Any) -> str:
    """A message as sent, without the cache markers OpenHands moves from call to call."""
    if not isinstance(raw, dict):
        return dumps(raw)
    raw = {k: v for k, v in raw.items() if k != "cache_control"}
    if isinstance(raw.get("content"), list):
        raw["content"] = [
            {k: v for k, v in part.items() if k != "cache_control"} if isinstance(part, dict) else part
            for part in raw["content"]
        ]
    return dumps(raw)


class _CallBuilder:
    """Turns calls, in time order, into the session's messages."""

    def __init__(self, sink: WarningSink) -> None:
        self.sink = sink
        self.messages: list[Message] = []
        self.model: str | None = None
        self._context: list[str] = []

    def add(self, doc: dict[str, Any], name: str, stamp: float) -> None:
        context = get_list(doc, "messages")
        if context is None:
            self.sink.add(None, f"{name}: no 'messages' array; call skipped")
            return
        keys = [_key(m) for m in context]
        start = self._new_start(context, keys)
        if start == 0 and self._context:
            self.messages.append(_rewritten(len(context)))
        for index in range(start, len(context)):
            raw = context[index]
            role = _ROLES.get(str(raw.get("role"))) if isinstance(raw, dict) else None
            if role is None or not isinstance(raw, dict):
                self.sink.add(index + 1, f"{name}: message {index + 1} has no known role; skipped")
                continue
            if start == 0 and self._context and role is Role.SYSTEM:
                continue
            self.messages.append(_with_outcome(chat_message(raw, role, self.sink, index + 1)))
        self._context = keys
        self._respond(doc, name, stamp)

    def _new_start(self, context: list[Any], keys: list[str]) -> int:
        """Where this call's new messages start: after the previous context and the assistant
        message that answered it; 0 when the context was rewritten."""
        known = len(self._context)
        if not known:
            return 0
        if keys[:known] != self._context:
            return 0
        following = context[known] if len(context) > known else None
        answered = isinstance(following, dict) and following.get("role") == "assistant"
        return known + 1 if answered else known

    def _respond(self, doc: dict[str, Any], name: str, stamp: float) -> None:
        response = get_dict(doc, "response")
        choices = get_list(response, "choices") if response is not None else None
        first = choices[0] if choices else None
        message = get_dict(first, "message") if isinstance(first, dict) else None
        if response is None or message is None:
            self.sink.add(None, f"{name}: no response message; the call's answer is missing")
            return
        answer = chat_message(message, Role.ASSISTANT, self.sink, len(self.messages) + 1)
        model = model_id(get_str(response, "model"))
        self.model = model or self.model
        self.messages.append(
            Message(
                role=Role.ASSISTANT,
                blocks=answer.blocks,
                response_id=get_str(response, "id"),
                model=model,
                usage=parse_usage(response.get("usage")),
                timestamp=_iso(stamp),
                line=None,
            )
        )


def _with_outcome(message: Message) -> Message:
    """A tool result with the exit code or editor error OpenHands wrote into its text."""
    if message.role is not Role.TOOL:
        return message
    blocks: list[Block] = []
    for block in message.blocks:
        if isinstance(block, ToolResult):
            found = _EXIT_CODE.search(block.text)
            code = int(found.group(1)) if found else None
            failed = _exited_badly(code) or _EDITOR_ERROR.match(block.text) is not None
            block = ToolResult(block.tool_call_id, block.text, failed, code)
        blocks.append(block)
    return msgspec.structs.replace(message, blocks=tuple(blocks))


def _rewritten(size: int) -> Message:
    note = f"The agent re-sent its context as {size} messages that do not continue the previous call."
    return Message(role=Role.USER, blocks=(CompactionSummary(note, trigger="context-rewrite"),))


def _iso(stamp: float) -> str | None:
    if not stamp:
        return None
    return datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z")


# --- output.jsonl -------------------------------------------------------------------------------


def parse_all(data: bytes, path: str) -> list[Session]:
    """Every instance line of an OpenHands ``output.jsonl``."""
    sessions = []
    skipped = WarningSink(path)  # lines too long to read: each costs its instance only
    for line, raw in split_lines(data, sink=skipped):
        if not raw.strip():
            continue
        sink = WarningSink(path)
        try:
            doc = loads(raw)
        except BadJSON as exc:
            sink.add(line, f"invalid JSON: {exc}")
            sessions.append(Session(path=path, format=Format.OPENHANDS, messages=(), warnings=sink.result()))
            continue
        if not isinstance(doc, dict):
            sink.add(line, f"line is {type_name(doc)}, expected an object")
            continue
        sessions.append(_instance(doc, line, path, sink))
    if len(skipped):
        sessions.append(Session(path=path, format=Format.OPENHANDS, messages=(), warnings=skipped.result()))
    return sessions


def _instance(doc: dict[str, Any], line: int, path: str, sink: WarningSink) -> Session:
    instance = get_str(doc, "instance_id")
    history = get_list(doc, "history")
    if history is None:
        sink.add(line, "no 'history' event list")
        history = []
    messages: list[Message] = []
    instruction = get_str(doc, "instruction")
    if instruction and not any(_is_user_message(e) for e in history):
        messages.append(Message(role=Role.USER, blocks=(TextBlock(instruction),), line=line))
    for event in history:
        if not isinstance(event, dict):
            continue
        message = _event(event, line)
        if message is None:
            continue
        if messages and _same_response(messages[-1], message):
            # One model response that asked for several actions: one assistant message.
            previous = messages.pop()
            message = msgspec.structs.replace(previous, blocks=previous.blocks + message.blocks)
        messages.append(message)
    metadata = get_dict(doc, "metadata")
    llm = get_dict(metadata, "llm_config") if metadata else None
    return Session(
        path=path,
        format=Format.OPENHANDS,
        messages=tuple(messages),
        session_id=instance,
        model=model_id(get_str(llm, "model")) if llm else None,
        warnings=sink.result(),
        outcome=_resolved(doc),
        task_id=instance,
    )


def _is_user_message(event: Any) -> bool:
    return isinstance(event, dict) and event.get("source") == "user" and event.get("action") == "message"


def _same_response(previous: Message, message: Message) -> bool:
    return (
        previous.role is Role.ASSISTANT
        and message.role is Role.ASSISTANT
        and message.response_id is not None
        and previous.response_id == message.response_id
    )


def _resolved(doc: dict[str, Any]) -> float | None:
    for holder in (get_dict(doc, "test_result"), doc):
        report = get_dict(holder, "report") if holder is not None else None
        value = report.get("resolved") if report is not None else None
        if isinstance(value, bool):
            return 1.0 if value else 0.0
    return None


_SILENT_ACTIONS = frozenset({"change_agent_state", "recall", "null"})
_SILENT_OBSERVATIONS = frozenset({"agent_state_changed", "recall", "null"})


def _event(event: dict[str, Any], line: int) -> Message | None:
    stamp = get_str(event, "timestamp")
    ident = str(event.get("id")) if event.get("id") is not None else None
    meta = get_dict(event, "tool_call_metadata")
    action = get_str(event, "action")
    if action is not None:
        return None if action in _SILENT_ACTIONS else _action(event, action, meta, ident, stamp, line)
    observation = get_str(event, "observation")
    if observation is None or observation in _SILENT_OBSERVATIONS:
        return None
    cause = event.get("cause")
    call_id = get_str(meta, "tool_call_id") if meta else None
    content = get_str(event, "content") or ""
    code = _exit_code(get_dict(event, "extras") or {})
    failed = observation == "error" or _exited_badly(code) or event.get("success") is False
    result = ToolResult(call_id or (str(cause) if cause is not None else ""), content, failed, code)
    return Message(role=Role.TOOL, blocks=(result,), id=ident, timestamp=stamp, line=line)


def _action(
    event: dict[str, Any],
    action: str,
    meta: dict[str, Any] | None,
    ident: str | None,
    stamp: str | None,
    line: int,
) -> Message:
    args = get_dict(event, "args") or {}
    if action in ("message", "system"):
        role = (
            Role.SYSTEM
            if action == "system"
            else Role.USER
            if event.get("source") == "user"
            else Role.ASSISTANT
        )
        content = get_str(args, "content") or get_str(event, "message") or ""
        return Message(role=role, blocks=(TextBlock(content),), id=ident, timestamp=stamp, line=line)
    blocks: list[Block] = []
    thought = get_str(args, "thought")
    if thought:
        blocks.append(TextBlock(thought))
    name = (get_str(meta, "function_name") if meta else None) or action
    call_id = (get_str(meta, "tool_call_id") if meta else None) or ident or f"event-{line}"
    blocks.append(ToolCall(call_id, name, {k: v for k, v in args.items() if k != "thought"}))
    response = get_dict(meta, "model_response") if meta else None
    return Message(
        role=Role.ASSISTANT,
        blocks=tuple(blocks),
        id=ident,
        response_id=get_str(response, "id") if response else None,
        model=model_id(get_str(response, "model")) if response else None,
        usage=parse_usage(response.get("usage")) if response else None,
        timestamp=stamp,
        line=line,
    )


def _exited_badly(code: int | None) -> bool:
    """A command's exit code says it failed (-1 means it is still running, not that it failed)."""
    return code is not None and code > 0


def _exit_code(extras: dict[str, Any]) -> int | None:
    code = extras.get("exit_code")
    if code is None:
        metadata = get_dict(extras, "metadata")
        code = metadata.get("exit_code") if metadata is not None else None
    return code if isinstance(code, int) and not isinstance(code, bool) and code >= -1 else None
