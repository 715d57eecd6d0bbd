"""Reader for Codex CLI rollout files (``~/.codex/sessions/.../rollout-*.jsonl``).

Each line is ``{timestamp, type, payload}``. How lines become messages:

* ``response_item`` items the model produced (``reasoning``, assistant ``message``,
  ``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``) are
  gathered into one assistant :class:`Message` per model response. Each response's
  ``event_msg``/``token_count`` (``info`` not null) gives the message its :class:`Usage` from
  ``last_token_usage`` (``input_tokens`` minus cached -> uncached input, cached ->
  ``cache_read_tokens``; ``input_tokens`` also goes to ``Session.reported_fill``). Versions
  write the count on either side of its response: before 0.5x it follows the response's items;
  0.60 writes it first (after ``agent_reasoning`` / ``agent_message``, before the items), and
  writes a ``turn_context`` before every model request. So counts are paired by boundaries, not
  by adjacency: a count closes the response whose items were written since the last boundary
  (``turn_context``, a user message, a compaction) and are still without a count; with no such
  response it opens the next one. The same count written again (same ``total_token_usage``,
  e.g. after the next ``turn_context``) is ignored.
* ``function_call_output`` / ``custom_tool_call_output`` become TOOL messages with a
  :class:`ToolResult`. The exit code is read from the output text (``Exit code: N`` or
  ``Process exited with code N``) or from the JSON form ``{"output", "metadata": {"exit_code"}}``;
  ``is_error = exit_code != 0``, or ``success: false`` (in the output object or the item), or an
  ``apply_patch`` whose output says ``apply_patch verification failed``.
* ``message`` items with role ``user`` are USER messages, ``developer``/``system`` SYSTEM; the
  user-role text Codex itself injects (``<environment_context>``, ``<user_instructions>``,
  AGENTS.md) is SYSTEM too, so ``Session.instruction`` is the person's request.
* ``compacted`` lines become a USER message holding a :class:`CompactionSummary`.
* ``session_meta.id`` is the session id, ``session_meta.cwd`` the working directory,
  ``session_meta.base_instructions.text`` (0.1xx) the system prompt (a SYSTEM message first),
  ``turn_context.model`` the model, ``token_count.info.model_context_window`` the window. Other
  ``event_msg`` types repeat what ``response_item`` lines already hold and are skipped.

Codex 0.171 and later write a ``token_usage_record`` per model response (``response_id``, ``usage``
with the same keys as ``last_token_usage``, and running ``turn_token_usage`` /
``thread_token_usage``), right after the response's items. Where a rollout has them they are the
usage source and ``token_count`` only gives the window: a record is the only trace of a compaction
request under the OpenAI provider (it has no items, and ``token_count`` is not updated). Items whose
top-level ``metadata.compaction_output`` is true are the compaction's own reply, and the
``compacted`` line that follows names that response (``compaction_response_id``) and repeats its
record (``latest_token_usage_record``): that response becomes the :class:`CompactionSummary`'s
``usage`` and ``pre_tokens`` (billed, never a turn). Before 0.171 (no records) a local compaction's
reply is an ordinary assistant message with its ``token_count``: the text-only reply the
``compacted`` line's ``message`` ends with is that reply, taken out the same way. Under the OpenAI
provider the summary exists only encrypted (``message`` is empty, ``replacement_history`` ends
with a ``compaction`` item holding ``encrypted_content``): the summary is marked ``encrypted``.
``world_state`` (the harness's own environment snapshot), top-level ``ordinal`` and the rest of
``metadata`` carry nothing ctxhealth measures and are read without a warning.

:func:`resume` reads a rollout incrementally (the hooks, on every call): from the last cut after
which nothing already read can change, with the reader's lasting state carried as JSON data, giving
exactly the messages :func:`parse` gives.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any

from ctxhealth.model import (
    Block,
    CompactionSummary,
    Format,
    ImageBlock,
    Message,
    Role,
    Session,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from ctxhealth.sources.lines import (
    BadJSON,
    WarningSink,
    dumps,
    get_dict,
    get_int,
    get_list,
    get_str,
    loads,
    long_line,
    max_line_bytes,
    split_lines,
    token_count,
    type_name,
)
from ctxhealth.sources.sniff import CODEX_LINE_TYPES

_RECORD_TYPE = "token_usage_record"
_RECORDS = b'"token_usage_record"'
"""A rollout holding this writes one usage record per response (0.171+)."""
_EXIT_CODE = re.compile(r"(?m)^(?:Exit code:|Process exited with code)\s*(-?\d{1,9})\b")
_CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
_HARNESS_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
_PATCH_FAILED = "apply_patch verification failed"
"""What Codex writes as the output of a patch it could not apply (the tool call failed)."""
_ROLES = {"user": Role.USER, "developer": Role.SYSTEM, "system": Role.SYSTEM}


def _parts(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(content)]
    blocks: list[Block] = []
    if isinstance(content, list):
        for part in content:
            text = get_str(part, "text")
            if text is not None:
                blocks.append(TextBlock(text))
            elif isinstance(part, dict) and "image_url" in part:
                url = part.get("image_url")
                size = len(url) * 3 // 4 if isinstance(url, str) else 0
                blocks.append(ImageBlock(media_type="image", approx_bytes=size))
    return blocks


def _is_harness_context(blocks: list[Block]) -> bool:
    """Codex injects environment and AGENTS.md text as user messages; they are not the task."""
    first = next((b.text for b in blocks if isinstance(b, TextBlock)), "").lstrip()
    return first.startswith(_HARNESS_PREFIXES)


def tool_result(call_id: str, output: Any, *, success: Any = None) -> ToolResult:
    """A Codex tool output (string, JSON string, or object) -> :class:`ToolResult` with exit code.

    ``success`` is the item's own ``success`` field, when it has one.
    """
    text: str
    exit_code: int | None = None
    failed = success is False
    if isinstance(output, str) and output.lstrip().startswith("{"):
        try:
            decoded = loads(output)
        except BadJSON:
            decoded = None
        if isinstance(decoded, dict) and (
            isinstance(decoded.get("output"), str) or isinstance(decoded.get("content"), str)
        ):
            output = decoded
    if isinstance(output, dict):
        text = get_str(output, "output") or get_str(output, "content") or ""
        metadata = get_dict(output, "metadata")
        exit_code = get_int(metadata, "exit_code")
        failed = failed or output.get("success") is False or get_bool_false(metadata, "success")
    elif isinstance(output, str):
        text = output
    else:
        text = dumps(output) if output is not None else ""
    if exit_code is None:
        match = _EXIT_CODE.search(text[:4096])
        if match is not None:
            exit_code = int(match.group(1))
    if not failed and _PATCH_FAILED in text[:200]:
        failed = True
    is_error = failed or (exit_code is not None and exit_code != 0)
    return ToolResult(call_id, text, is_error=is_error, exit_code=exit_code)


def get_bool_false(obj: Any, key: str) -> bool:
    """True when ``obj[key]`` is exactly ``false``."""
    return isinstance(obj, dict) and obj.get(key) is False


def _call(item: dict[str, Any], kind: str, line: int) -> ToolCall:
    call_id = get_str(item, "call_id") or get_str(item, "id") or f"call-{line}"
    if kind == "function_call":
        arguments: Any = item.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(BadJSON):
                arguments = loads(arguments) if arguments.strip() else {}
        name = get_str(item, "name") or ""
        namespace = get_str(item, "namespace")  # an MCP server's tools: namespace mcp__<server>
        return ToolCall(call_id, f"{namespace}__{name}" if namespace else name, arguments)
    if kind == "custom_tool_call":
        return ToolCall(call_id, get_str(item, "name") or "", item.get("input"))
    if kind == "local_shell_call":
        return ToolCall(call_id, "local_shell", item.get("action"))
    return ToolCall(call_id, "web_search", item.get("action"))


@dataclass(slots=True)
class _Response:
    blocks: list[Block]
    line: int
    timestamp: str | None
    model: str | None
    usage: Usage | None = None
    response_id: str | None = None
    compaction: bool = False
    """The compaction's own reply (``metadata.compaction_output``), or a record without items."""


@dataclass(slots=True)
class _State:
    sink: WarningSink
    out: list[Message | _Response] = field(default_factory=list)
    open: _Response | None = None
    output_since: bool = False
    """A tool output was written since the open response's last item."""
    model: str | None = None
    window: int | None = None
    session_id: str | None = None
    last_total: Any = None
    last_usage: dict[str, Any] | None = None
    records: bool = False
    """The rollout writes ``token_usage_record`` lines: they, not ``token_count``, give usage."""
    cwd: str | None = None
    instructions_seen: bool = False
    compaction_reply: _Response | None = None

    def response(self, line: int, timestamp: str | None) -> _Response:
        """The response the next model item belongs to (a new one when none is open, or when the
        open one has no count yet and a tool output came since: the model was called again)."""
        current = self.open
        if current is None or (self.output_since and current.usage is None and current.blocks):
            current = _Response([], line, timestamp, self.model)
            self.out.append(current)
            self.open = current
        elif not current.blocks and current.timestamp is None:
            current.line, current.timestamp = line, timestamp
        self.output_since = False
        return current

    def boundary(self) -> None:
        """A new model request starts (``turn_context``, a user message, a compaction)."""
        self.open = None
        self.output_since = False
        self.compaction_reply = None

    def compaction_response(self, line: int, timestamp: str | None) -> _Response:
        """The response the compaction's own reply items belong to."""
        if self.compaction_reply is None:
            self.compaction_reply = _Response([], line, timestamp, self.model, compaction=True)
            self.out.append(self.compaction_reply)
            self.open = None
        return self.compaction_reply

    def emit(self, message: Message) -> None:
        self.out.append(message)


def _usage(last: dict[str, Any], problems: list[str]) -> Usage:
    where = "last_token_usage"
    total_input = token_count(last, "input_tokens", problems, where)
    cached = min(token_count(last, "cached_input_tokens", problems, where), total_input)
    return Usage(
        input_tokens=total_input - cached,
        cache_read_tokens=cached,
        output_tokens=token_count(last, "output_tokens", problems, where),
        reasoning_tokens=token_count(last, "reasoning_output_tokens", problems, where),
    )


def _token_count(state: _State, payload: dict[str, Any], line: int) -> None:
    info = get_dict(payload, "info")
    if info is None:
        return
    window = get_int(info, "model_context_window")
    if window is not None and window > 0:
        state.window = window
    if state.records:
        return
    total = info.get("total_token_usage")
    last = get_dict(info, "last_token_usage")
    if total is not None and total == state.last_total:
        return
    if total is None and last is not None and last == state.last_usage and state.open is None:
        return
    state.last_total = total
    state.last_usage = last
    if last is None:
        state.sink.add(line, "token_count without last_token_usage")
        return
    problems: list[str] = []
    usage = _usage(last, problems)
    for problem in problems:
        state.sink.add(line, f"token_count {problem}")
    current = state.open
    if current is not None and current.usage is None and current.blocks:
        # written after its response (the items since the last boundary are still without a count)
        current.usage = usage
        state.open = None
        return
    # written before its response (0.60): the items that follow belong to it
    state.open = _Response([], line, None, state.model, usage)
    state.out.append(state.open)
    state.output_since = False


def _token_usage_record(state: _State, payload: dict[str, Any], line: int, timestamp: str | None) -> None:
    """One response's usage (0.171+): it closes the response whose items came since the last boundary,
    or stands for a response that wrote no items (a remote compaction)."""
    last = get_dict(payload, "usage")
    if last is None:
        state.sink.add(line, "token_usage_record without usage")
        return
    problems: list[str] = []
    usage = _usage(last, problems)
    for problem in problems:
        state.sink.add(line, f"token_usage_record {problem}")
    response_id = get_str(payload, "response_id")
    current = state.compaction_reply if state.compaction_reply is not None else state.open
    if current is not None and current.usage is None and current.blocks:
        current.usage, current.response_id = usage, response_id
        state.open = None
        state.compaction_reply = None
        return
    state.out.append(_Response([], line, timestamp, state.model, usage, response_id, compaction=True))
    state.open = None


def _compacted(state: _State, payload: dict[str, Any], line: int, timestamp: str | None) -> None:
    text = get_str(payload, "message") or ""
    history = get_list(payload, "replacement_history") or []
    encrypted = not text.strip() and any(
        isinstance(item, dict) and item.get("type") == "compaction" and item.get("encrypted_content")
        for item in history
    )
    response_id = get_str(payload, "compaction_response_id")
    reply: _Response | None = None
    for k in range(len(state.out) - 1, -1, -1):
        item = state.out[k]
        if isinstance(item, _Response) and (
            (item.compaction and (response_id is None or item.response_id in (None, response_id)))
            or (not state.records and _summary_reply(item, text))
        ):
            reply = item
            del state.out[k]
            break
        if isinstance(item, Message) and item.role is Role.USER:
            break
    usage = reply.usage if reply is not None else None
    if usage is None:
        record = get_dict(payload, "latest_token_usage_record")
        last = get_dict(record, "usage")
        if last is not None and (response_id is None or get_str(record, "response_id") == response_id):
            usage = _usage(last, [])
    if reply is not None and not text and not encrypted:
        text = "\n".join(b.text for b in reply.blocks if isinstance(b, TextBlock))
    state.boundary()
    summary = CompactionSummary(
        text,
        trigger=None,
        pre_tokens=usage.context_tokens if usage is not None else None,
        usage=usage,
        encrypted=encrypted,
    )
    state.emit(Message(role=Role.USER, blocks=(summary,), timestamp=timestamp, line=line))


def _text_only(reply: _Response) -> str | None:
    """The text of a reply of text and reasoning only (no tool call), else None."""
    if not all(isinstance(b, TextBlock | ThinkingBlock) for b in reply.blocks):
        return None
    return "\n".join(b.text for b in reply.blocks if isinstance(b, TextBlock)).strip() or None


def _summary_reply(reply: _Response, message: str) -> bool:
    """Whether ``reply`` is a local compaction's own reply in a rollout without usage records
    (before 0.171 the reply is written as an ordinary assistant message, with no
    ``compaction_output`` mark): a reply of text only that the ``compacted`` line's ``message``
    ends with (that message is the summary prompt's preamble, then the reply)."""
    text = _text_only(reply)
    return text is not None and message.rstrip().endswith(text)


def _response_item(
    state: _State, item: dict[str, Any], line: int, timestamp: str | None, metadata: Any = None
) -> None:
    kind = get_str(item, "type")
    if (
        isinstance(metadata, dict)
        and metadata.get("compaction_output") is True
        and kind in ("message", "reasoning")
    ):
        # the compaction's own reply: its text is the summary the ``compacted`` line repeats
        reply = state.compaction_response(line, timestamp)
        if kind == "message":
            reply.blocks.extend(_parts(item.get("content")))
        return
    if kind == "message":
        role = get_str(item, "role")
        blocks = _parts(item.get("content"))
        if role == "assistant":
            state.response(line, timestamp).blocks.extend(blocks)
            return
        mapped = _ROLES.get(role or "")
        if mapped is Role.USER and _is_harness_context(blocks):
            mapped = Role.SYSTEM
        elif mapped is Role.USER:
            state.boundary()
        if mapped is None:
            state.sink.add(line, f"message with unknown role {str(role)[:40]!r}")
            return
        state.emit(Message(role=mapped, blocks=tuple(blocks), timestamp=timestamp, line=line))
    elif kind == "reasoning":
        summary = get_list(item, "summary") or []
        text = "\n".join(t for t in (get_str(s, "text") for s in summary) if t)
        content = get_list(item, "content") or []
        text = text or "\n".join(t for t in (get_str(c, "text") for c in content) if t)
        state.response(line, timestamp).blocks.append(ThinkingBlock(text))
    elif kind in _CALL_TYPES:
        state.response(line, timestamp).blocks.append(_call(item, str(kind), line))
    elif kind in _OUTPUT_TYPES:
        call_id = get_str(item, "call_id") or ""
        if not call_id:
            state.sink.add(line, f"{kind} without a call_id")
        result = tool_result(call_id, item.get("output"), success=item.get("success"))
        state.emit(Message(role=Role.TOOL, blocks=(result,), timestamp=timestamp, line=line))
        state.output_since = True
    elif kind is None:
        state.sink.add(line, "response_item without a string payload type")


def _line(state: _State, obj: dict[str, Any], line: int) -> None:
    kind = get_str(obj, "type")
    payload = obj.get("payload")
    timestamp = get_str(obj, "timestamp")
    if kind not in CODEX_LINE_TYPES:
        state.sink.add(line, f"unknown record type {dumps(obj.get('type'))[:40]}")
        return
    if not isinstance(payload, dict):
        state.sink.add(line, f"{kind} payload is {type_name(payload)}, expected object")
        return
    if kind == "response_item":
        _response_item(state, payload, line, timestamp, obj.get("metadata"))
    elif kind == "token_usage_record":
        _token_usage_record(state, payload, line, timestamp)
    elif kind == "event_msg":
        event = payload.get("type")
        if event == "token_count":
            _token_count(state, payload, line)
        elif event == "user_message":
            state.boundary()
    elif kind == "turn_context":
        state.boundary()
        model = get_str(payload, "model")
        if model:
            state.model = model
    elif kind == "session_meta":
        meta = get_dict(payload, "meta") or payload
        state.session_id = state.session_id or get_str(meta, "id")
        state.cwd = state.cwd or get_str(meta, "cwd")
        instructions = get_dict(meta, "base_instructions")
        text = get_str(instructions, "text")
        if text and not state.instructions_seen:
            state.instructions_seen = True
            state.emit(Message(role=Role.SYSTEM, blocks=(TextBlock(text),), timestamp=timestamp, line=line))
    elif kind == "compacted":
        _compacted(state, payload, line, timestamp)


def _decode(sink: WarningSink, line: int, raw: bytes) -> dict[str, Any] | None:
    try:
        obj = loads(raw)
    except BadJSON as exc:
        sink.add(line, f"invalid JSON: {exc}")
        return None
    if not isinstance(obj, dict):
        sink.add(line, f"line is a JSON {type_name(obj)}, expected an object")
        return None
    return obj


def parse(data: bytes, path: str) -> Session:
    """Read one Codex rollout file into a :class:`Session`."""
    sink = WarningSink(path)
    records: list[tuple[int, dict[str, Any]]] = []
    for line, raw in split_lines(data, sink=sink):
        obj = _decode(sink, line, raw)
        if obj is not None:
            records.append((line, obj))
    # decided from the decoded records (a junk line that merely holds the words changes nothing)
    has_records = _RECORDS in data and any(obj.get("type") == _RECORD_TYPE for _, obj in records)
    state = _State(sink, records=has_records)
    for line, obj in records:
        _line(state, obj, line)
    messages, reported = _finish(state)
    return Session(
        path=path,
        format=Format.CODEX,
        messages=tuple(messages),
        session_id=state.session_id,
        model=state.model,
        context_window=state.window,
        reported_fill=reported,
        warnings=tuple(sorted(sink.result(), key=lambda w: (w.line is None, w.line or 0))),
        cwd=state.cwd,
    )


RESUME_VERSION = 1
"""The version of :func:`resume`'s carried state (another one is not resumed from: a full read)."""

_CARRIED = (
    "model",
    "window",
    "session_id",
    "last_total",
    "last_usage",
    "records",
    "cwd",
    "instructions_seen",
)
"""The reader state that lasts across lines and is carried to a cut (the rest is empty there)."""


@dataclass(frozen=True, slots=True)
class Resumed:
    """What :func:`resume` read: the messages from ``data`` (the rollout's bytes from the cut it
    resumed at), and the cut it may resume at next (``carry``)."""

    messages: list[Message]
    session_id: str | None
    model: str | None
    carry: dict[str, Any]
    window: int | None = None
    """The window the rollout states (``token_count.info.model_context_window``; what
    :attr:`Session.context_window` of a full read is), from the whole rollout, cut included."""


def _settled(state: _State, since: int) -> bool:
    """True when nothing read so far can still change: no response is open (a later count or record
    may close it), and no compaction reply waits for its ``compacted`` line (which takes it out; in a
    rollout without usage records, any reply of text only since the last user message may be one).
    ``since``: the length of ``state.out`` when this was last true (only what came after is looked
    at: before it no reply waited, and a ``compacted`` line takes out none from there)."""
    if state.open is not None or state.compaction_reply is not None:
        return False
    for k in range(len(state.out) - 1, since - 1, -1):
        item = state.out[k]
        if isinstance(item, _Response):
            # without usage records, a reply of text only may yet prove a compaction's own
            if item.compaction or (not state.records and _text_only(item)):
                return False
        elif item.role is Role.USER:
            return True
    return True


def resume(data: bytes, path: str, carry: dict[str, Any] | None = None) -> Resumed | None:
    """Read a rollout incrementally: ``data`` is the whole file when ``carry`` is None, else its
    bytes from the cut ``carry`` names (``carry["offset"]``, the ``carry`` of the previous call).

    Rollouts are append-only, but a line's meaning depends on what came before: the open response a
    count or record closes, the compaction reply a ``compacted`` line takes out, the last count (a
    repeat is ignored), whether the rollout writes usage records. A cut is made only after a line
    where nothing read can change any more (:func:`_settled`); the scalar state is carried in
    ``carry`` (JSON data), so the messages read from a cut are exactly those a full :func:`parse`
    gives after it (``carry["messages"]`` of them come before the cut). Only complete lines are cut
    after. Returns None when resuming cannot give a full read's answer (the carry is of another
    version, or the first usage record came after the cut: that changes how earlier counts read);
    the caller reads the file whole then."""
    sink = WarningSink(path)
    first_line, base, before = 1, 0, 0
    if carry is not None:
        if carry.get("version") != RESUME_VERSION:
            return None
        first_line, base, before = int(carry["line"]), int(carry["offset"]), int(carry["messages"])
    limit = max_line_bytes()
    records: list[tuple[int, int, dict[str, Any]]] = []
    pos = 0
    for number, raw in enumerate(data.split(b"\n"), first_line):
        end = pos + len(raw) + 1  # past its newline (one past the data for the last piece)
        pos = end
        if len(raw) > limit:
            sink.add(number, long_line(len(raw), limit))
            continue
        if raw and not raw.isspace():
            obj = _decode(sink, number, raw)
            if obj is not None:
                records.append((number, end, obj))
    has_records = _RECORDS in data and any(obj.get("type") == _RECORD_TYPE for _, _, obj in records)
    state = _State(sink, records=has_records)
    if carry is not None:
        if has_records and not carry.get("records"):
            return None  # the first usage record: counts before the cut read otherwise now
        for name in _CARRIED:
            setattr(state, name, carry.get(name))
        state.records = bool(carry.get("records"))
        state.instructions_seen = bool(carry.get("instructions_seen"))
    cut = {"line": first_line, "offset": 0, "messages": 0, **{n: getattr(state, n) for n in _CARRIED}}
    complete = data.rfind(b"\n") + 1  # a cut goes no further than the last complete line
    since = 0
    for number, end, obj in records:
        _line(state, obj, number)
        if end <= complete and _settled(state, min(since, len(state.out))):
            since = len(state.out)
            cut = {"line": number + 1, "offset": end, "messages": len(state.out)}
            cut.update({n: getattr(state, n) for n in _CARRIED})
    messages, _ = _finish(state)
    cut.update(
        version=RESUME_VERSION, offset=base + int(cut["offset"]), messages=before + int(cut["messages"])
    )
    return Resumed(messages, state.session_id, state.model, cut, state.window)


def _finish(state: _State) -> tuple[list[Message], dict[int, int]]:
    """The messages of ``state.out`` in order, and the fill each response reported (by index)."""
    messages: list[Message] = []
    reported: dict[int, int] = {}
    for item in state.out:
        if isinstance(item, Message):
            messages.append(item)
            continue
        if item.usage is not None:
            reported[len(messages)] = item.usage.context_tokens
        messages.append(
            Message(
                role=Role.ASSISTANT,
                blocks=tuple(item.blocks),
                model=item.model,
                usage=item.usage,
                response_id=item.response_id,
                timestamp=item.timestamp,
                line=item.line,
            )
        )
    return messages, reported
