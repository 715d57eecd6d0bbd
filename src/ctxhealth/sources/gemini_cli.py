"""Reader for Gemini CLI chats (``~/.gemini/tmp/<project>/chats/session-<date>-<8hex>.jsonl``; older
versions wrote the same conversation record as one JSON document, ``chats/session-*.json``).

The JSONL file is a log of writes, read in order:

* a header ``{sessionId, projectHash, startTime, lastUpdated, kind}`` (resume appends another);
* message records ``{id, timestamp, type, content, ...}`` that are upserts by ``id``: a ``gemini``
  record is written when the response arrives (``model``, ``thoughts[]``, ``tokens``) and again with
  ``toolCalls[{id, name, args, result, status}]`` once its tools ran; later fields win, earlier ones
  the later write lacks are kept;
* ``{"$set": {...}}`` patches. ``$set.messages`` replaces the conversation the CLI holds: it brings
  the first context (``<session_context>``), on resume it restates the history (ids reused, usage
  dropped), after compression it holds the compressed context (0.45: with the history the compression
  kept after it, under new ids). The history that was billed stays what it was: a message whose id
  was written before is not a new one, nor is one of the kept history. The compression's summary,
  a new user message holding a ``<state_snapshot>``, becomes a :class:`CompactionSummary` where it
  was written (the CLI's "Got it" acknowledgement after it is not a model response and is skipped);
* ``{"$rewindTo": id}`` (the person rewound): the messages stay in the history that was billed.

How records become messages: the first user message holding ``<session_context>`` is the harness's
environment text (SYSTEM, not the request). A ``gemini`` record is one model response: its
``thoughts`` are thinking, ``content`` text, each tool call a :class:`ToolCall`, followed by one TOOL
message per call holding its ``result`` (a user record that only repeats those ``functionResponse``
parts is not read twice). ``tokens.input`` (``promptTokenCount``, cached included) is the fill;
usage is input − cached uncached, ``cached`` cache reads, ``output`` + ``thoughts`` output (billed as
output; ``tool``, the prompt of built-in tools such as search grounding, is not part of the fill and is
left out). A shell command that exited non-zero still has ``status: "success"``: the ``Exit Code: N``
line of its output says it failed; ``status: "error"`` / ``"cancelled"`` is a failure too.
``info`` / ``error`` / ``warning`` records are the CLI's own notices, not context.

The project a chat belongs to (``Session.cwd``) is the path ``~/.gemini/projects.json`` maps to the
chat's ``tmp/<project>`` folder name (:func:`project_path`; the reader registry looks it up for a file
on disk).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ctxhealth.model import (
    Block,
    CompactionSummary,
    Format,
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
    get_list,
    get_str,
    load_document,
    loads,
    split_lines,
    token_count,
    type_name,
)
from ctxhealth.sources.sniff import GEMINI_HEADER_KEYS

_EXIT_CODE = re.compile(r"(?m)^Exit Code:\s*(-?\d{1,9})\b")
SNAPSHOT = "<state_snapshot>"
ENVIRONMENT = "<session_context>"
_NOTICES = frozenset({"info", "error", "warning"})
_FAILED_STATUS = frozenset({"error", "cancelled"})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text")) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def _responses(content: Any) -> list[dict[str, Any]]:
    """The ``functionResponse`` parts of a record's content."""
    parts = content if isinstance(content, list) else [content]
    return [
        p["functionResponse"]
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
    ]


def response_text(result: Any) -> str:
    """The output text of a tool call's ``result`` (a list of parts with ``functionResponse``; the
    proxy's Gemini adapter reads a request's parts with it too)."""
    texts = []
    for response in _responses(result):
        body = response.get("response")
        if isinstance(body, dict):
            value = body.get("output", body.get("error", body))
            texts.append(value if isinstance(value, str) else dumps(value))
        elif body is not None:
            texts.append(str(body))
    if not texts and result is not None:
        texts.append(_text(result) or (result if isinstance(result, str) else dumps(result)))
    return "\n".join(texts)


def tool_result(call_id: str, text: str, status: str | None) -> ToolResult:
    """A Gemini CLI tool outcome: failed when its status says so or its output's exit code is not 0."""
    match = _EXIT_CODE.search(text[-4096:]) or _EXIT_CODE.search(text[:4096])
    exit_code = int(match.group(1)) if match is not None else None
    failed = status in _FAILED_STATUS or (exit_code is not None and exit_code != 0)
    return ToolResult(call_id, text, is_error=failed, exit_code=exit_code)


def gemini_usage(prompt: int, cached: int, output: int, thoughts: int) -> Usage:
    """Gemini's counts as :class:`Usage`: the prompt (cached included) split into uncached + cache
    reads, thoughts billed as output."""
    cached = min(cached, prompt)
    return Usage(
        input_tokens=prompt - cached,
        cache_read_tokens=cached,
        output_tokens=output + thoughts,
        reasoning_tokens=thoughts,
    )


def _usage(tokens: dict[str, Any], problems: list[str]) -> Usage:
    return gemini_usage(
        token_count(tokens, "input", problems, "tokens"),
        token_count(tokens, "cached", problems, "tokens"),
        token_count(tokens, "output", problems, "tokens"),
        token_count(tokens, "thoughts", problems, "tokens"),
    )


@dataclass(slots=True)
class _Log:
    """The history of a chat file: records by id in the order they were first written."""

    sink: WarningSink
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    session_id: str | None = None
    restated: set[str] = field(default_factory=set)
    """Ids of the history a compression kept, restated under new ids (never news)."""

    def upsert(self, record: dict[str, Any], line: int | None) -> None:
        key = get_str(record, "id")
        if key is None:
            self.sink.add(line, "message record without a string id")
            return
        known = self.records.get(key)
        if known is not None and known.get("type") != record.get("type"):
            key = f"{record.get('type')}:{key}"  # another kind of record under the same id
            known = self.records.get(key)
        if known is None:
            self.records[key] = dict(record)
            self.lines[key] = line or 0
            self.order.append(key)
        else:
            known.update(record)

    def replace(self, messages: list[Any], line: int | None) -> None:
        """``$set.messages``: a message whose id was written before is a restatement (resume), not news;
        the rest are new (the first context, a compression's summary and acknowledgement). What follows
        the acknowledgement in the same patch is the part of the history the compression kept, restated
        (0.45 gives it new ids): already read where it was first written."""
        kept = -1  # the position after which the kept history starts (none yet)
        for at, message in enumerate(messages):
            if not isinstance(message, dict):
                continue
            key = get_str(message, "id")
            if 0 <= kept < at:
                if key is not None:
                    self.restated.add(key)  # a later restatement (resume) is not news either
                continue
            if key is not None and (
                key in self.records or f"user:{key}" in self.records or key in self.restated
            ):
                continue
            compression = get_str(message, "type") == "user" and SNAPSHOT in _text(message.get("content"))
            if compression:
                kept = at + 1  # the acknowledgement comes next
            self.upsert({**message, "compression": True} if compression else message, line)


def _read_lines(data: bytes, log: _Log) -> None:
    for line, raw in split_lines(data, sink=log.sink):
        try:
            obj = loads(raw)
        except BadJSON as exc:
            log.sink.add(line, f"invalid JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            log.sink.add(line, f"line is a JSON {type_name(obj)}, expected an object")
            continue
        patch = obj.get("$set")
        if isinstance(patch, dict):
            log.session_id = log.session_id or get_str(patch, "sessionId")
            messages = get_list(patch, "messages")
            if messages is not None:
                log.replace(messages, line)
            continue
        if "$rewindTo" in obj:
            continue
        if "type" not in obj and all(k in obj for k in GEMINI_HEADER_KEYS):
            log.session_id = log.session_id or get_str(obj, "sessionId")
            continue
        log.upsert(obj, line)


def _gemini(record: dict[str, Any], line: int, sink: WarningSink) -> list[Message]:
    blocks: list[Block] = []
    for thought in get_list(record, "thoughts") or []:
        subject, description = get_str(thought, "subject"), get_str(thought, "description")
        text = "\n".join(t for t in (subject, description) if t)
        if text:
            blocks.append(ThinkingBlock(text))
    text = _text(record.get("content"))
    if text:
        blocks.append(TextBlock(text))
    results: list[Message] = []
    for k, call in enumerate(get_list(record, "toolCalls") or []):
        if not isinstance(call, dict):
            sink.add(line, f"toolCalls entry is {type_name(call)}, expected object")
            continue
        call_id = get_str(call, "id") or f"call-{line}-{k}"
        blocks.append(ToolCall(call_id, get_str(call, "name") or "", call.get("args")))
        if "result" in call or get_str(call, "status") in _FAILED_STATUS:
            result = tool_result(call_id, response_text(call.get("result")), get_str(call, "status"))
            results.append(
                Message(role=Role.TOOL, blocks=(result,), timestamp=get_str(call, "timestamp"), line=line)
            )
    tokens = get_dict(record, "tokens")
    usage = None
    if tokens is not None:
        problems: list[str] = []
        usage = _usage(tokens, problems)
        for problem in problems:
            sink.add(line, problem)
    assistant = Message(
        role=Role.ASSISTANT,
        blocks=tuple(blocks),
        id=get_str(record, "id"),
        response_id=get_str(record, "id"),
        model=get_str(record, "model"),
        usage=usage,
        timestamp=get_str(record, "timestamp"),
        line=line,
    )
    return [assistant, *results]


def _messages(log: _Log) -> list[Message]:
    out: list[Message] = []
    answered: set[str] = set()
    harness_seen = False
    after_snapshot = False
    for slot in log.order:
        record = log.records[slot]
        line = log.lines[slot]
        kind = get_str(record, "type")
        timestamp = get_str(record, "timestamp")
        if kind == "gemini":
            if after_snapshot and record.get("tokens") is None and not record.get("model"):
                after_snapshot = False
                continue  # the CLI's own acknowledgement of a compression summary
            after_snapshot = False
            produced = _gemini(record, line, log.sink)
            answered.update(r.tool_call_id for m in produced for r in m.tool_results)
            out.extend(produced)
            continue
        after_snapshot = False
        if kind in _NOTICES:
            continue
        if kind != "user":
            log.sink.add(line, f"message record of unknown type {dumps(record.get('type'))[:40]}")
            continue
        content = record.get("content")
        for response in _responses(content):
            call_id = get_str(response, "id") or ""
            if call_id in answered:
                continue
            answered.add(call_id)
            result = tool_result(call_id, response_text([{"functionResponse": response}]), None)
            out.append(Message(role=Role.TOOL, blocks=(result,), timestamp=timestamp, line=line))
        text = _text(content)
        if not text:
            continue
        if record.get("compression") or text.lstrip().startswith(SNAPSHOT):
            summary = CompactionSummary(text, trigger="auto")
            out.append(
                Message(
                    role=Role.USER,
                    blocks=(summary,),
                    id=get_str(record, "id"),
                    timestamp=timestamp,
                    line=line,
                )
            )
            after_snapshot = True
            continue
        role = Role.USER
        if not harness_seen and text.lstrip().startswith(ENVIRONMENT):
            harness_seen = True
            role = Role.SYSTEM
        out.append(
            Message(
                role=role, blocks=(TextBlock(text),), id=get_str(record, "id"), timestamp=timestamp, line=line
            )
        )
    return out


def project_path(chat: str, projects: bytes) -> str | None:
    """The project path ``projects.json`` (its bytes) maps to the ``tmp/<project>/chats/`` folder of
    ``chat``, or None."""
    parts = chat.replace("\\", "/").split("/")
    if len(parts) < 3 or parts[-2] != "chats":
        return None
    name = parts[-3]
    try:
        table = loads(projects)
    except BadJSON:
        return None
    mapping = get_dict(table, "projects") or {}
    return next((p for p, n in mapping.items() if n == name and isinstance(p, str)), None)


def parse(data: bytes, path: str) -> Session:
    """Read one Gemini CLI chat (JSONL log, or the older one-document JSON record) into a Session."""
    sink = WarningSink(path)
    log = _Log(sink)
    stripped = data.lstrip()
    document: Any = None
    if stripped.startswith(b"{") and b"\n{" not in stripped.rstrip():
        document = load_document(data, sink)
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        log.session_id = get_str(document, "sessionId")
        for index, record in enumerate(document["messages"], start=1):
            if isinstance(record, dict):
                log.upsert(record, index)
            else:
                sink.add(index, f"message is {type_name(record)}, expected object")
    elif document is None or isinstance(document, dict):
        _read_lines(data, log)
    messages = _messages(log)
    model = next((m.model for m in reversed(messages) if m.model), None)
    return Session(
        path=path,
        format=Format.GEMINI_CLI,
        messages=tuple(messages),
        session_id=log.session_id,
        model=model,
        warnings=sink.result(),
    )
