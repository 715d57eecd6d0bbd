"""Reader for SWE-agent trajectories (``<instance>.traj``), SWE-agent 0.x and 1.x.

A ``.traj`` is one JSON object: ``trajectory`` (steps ``{action, observation, response, thought,
state, ...}``), ``history`` (the messages the model saw: ``{role, content, agent?, is_demo?,
thought?, action?, message_type?, tool_calls?, tool_call_ids?}``), ``info`` (``exit_status``,
``submission``, ``model_stats {tokens_sent, tokens_received, api_calls, instance_cost}``) and in
1.x ``replay_config`` (the run's configuration as a JSON string, with the model's name) and
``environment``.

``history`` is read when present (it is what was in the context), else the steps are turned into
messages. An assistant message with an ``action`` (0.x, and 1.x without function calling) becomes
text plus one tool call holding the command; the next user or tool message is that call's result.
With function calling (1.x), ``tool_calls`` and ``tool_call_ids`` pair calls and results.
Multi-agent logs name an ``agent`` on each entry: the first agent is the main thread, each other
agent's messages form a sidechain. SWE-agent writes no per-response usage, so fill is counted from
the text; ``model_stats`` holds run totals only.

A result is failed when its text shows a failure SWE-agent's tools print (a traceback, a syntax
error the editor refused, an unknown command, a missing file) or an exit code other than 0.
"""

from __future__ import annotations

import re
from typing import Any

from ctxhealth.model import Block, Format, Message, Role, Session, TextBlock, ToolCall, ToolResult
from ctxhealth.sources.lines import (
    BadJSON,
    WarningSink,
    get_dict,
    get_list,
    get_str,
    load_document,
    loads,
    type_name,
)
from ctxhealth.sources.openai_chat import _tool_calls

_ROLES = {"system": Role.SYSTEM, "user": Role.USER, "assistant": Role.ASSISTANT, "tool": Role.TOOL}
_FAILED = re.compile(
    r"Traceback \(most recent call last\)|Your proposed edit has introduced new syntax error"
    r"|: command not found|No such file or directory|^(?:Error|ERROR)\b|exit code[: ]+[1-9]",
    re.MULTILINE,
)
_OBSERVATION_PREFIX = re.compile(r"\A\s*OBSERVATION:\s*\n?")


def parse(data: bytes, path: str) -> Session:
    """Read one ``.traj`` document into a :class:`Session` (other agents as sidechains)."""
    sink = WarningSink(path)
    doc = load_document(data, sink)
    if not isinstance(doc, dict):
        if doc is not None:
            sink.add(None, f"document is {type_name(doc)}, expected an object")
        return Session(path=path, format=Format.SWE_AGENT, messages=(), warnings=sink.result())
    history = get_list(doc, "history")
    if history is None:
        history = _history_from_steps(get_list(doc, "trajectory") or [], sink)
    threads: dict[str, list[Message]] = {}
    pending: dict[str, list[str]] = {}
    for index, entry in enumerate(history, start=1):
        if not isinstance(entry, dict):
            sink.add(index, f"history entry is {type_name(entry)}, expected object")
            continue
        agent = get_str(entry, "agent") or "main"
        message = _message(entry, index, pending.setdefault(agent, []), sink)
        if message is not None:
            threads.setdefault(agent, []).append(message)
    names = list(threads)
    main = threads[names[0]] if names else []
    stem = path.rsplit("/", 1)[-1].removesuffix(".gz").removesuffix(".json").removesuffix(".traj")
    model = _model(doc)
    sidechains = tuple(
        Session(
            path=path,
            format=Format.SWE_AGENT,
            messages=tuple(threads[n]),
            session_id=f"{stem}:{n}",
            model=model,
        )
        for n in names[1:]
    )
    return Session(
        path=path,
        format=Format.SWE_AGENT,
        messages=tuple(main),
        session_id=stem or None,
        model=model,
        sidechains=sidechains,
        warnings=sink.result(),
        task_id=stem or None,
    )


def _history_from_steps(steps: list[Any], sink: WarningSink) -> list[Any]:
    history: list[Any] = []
    for index, step in enumerate(steps, start=1):
        if not isinstance(step, dict):
            sink.add(index, f"trajectory step is {type_name(step)}, expected object")
            continue
        history.append(
            {
                "role": "assistant",
                "content": get_str(step, "response") or get_str(step, "thought") or "",
                "action": get_str(step, "action"),
            }
        )
        history.append({"role": "user", "content": get_str(step, "observation") or ""})
    return history


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") if isinstance(part, dict) and isinstance(part.get("text"), str) else ""
            for part in content
        )
    return ""


def _message(entry: dict[str, Any], index: int, pending: list[str], sink: WarningSink) -> Message | None:
    role = _ROLES.get(str(entry.get("role")))
    if role is None:
        sink.add(index, f"unknown role {str(entry.get('role'))[:40]!r}")
        return None
    text = _text(entry.get("content"))
    demo = bool(entry.get("is_demo"))
    if role is Role.ASSISTANT and not demo:
        blocks: list[Block] = [TextBlock(text)] if text else []
        calls = _tool_calls(entry.get("tool_calls"), sink, index)
        if not calls:
            action = get_str(entry, "action")
            if action and action.strip():
                calls = [ToolCall(f"action-{index}", _command_name(action), {"command": action})]
        blocks.extend(calls)
        pending[:] = [c.id for c in calls if isinstance(c, ToolCall)]
        return Message(role=role, blocks=tuple(blocks), line=index)
    if (
        pending
        and not demo
        and (role is Role.TOOL or (role is Role.USER and entry.get("message_type") != "thought"))
    ):
        ids = [i for i in (get_list(entry, "tool_call_ids") or []) if isinstance(i, str)] or pending[:1]
        body = _OBSERVATION_PREFIX.sub("", text)
        failed = _FAILED.search(body) is not None
        results = tuple(ToolResult(call_id, body, failed) for call_id in ids)
        for call_id in ids:
            if call_id in pending:
                pending.remove(call_id)
        if role is Role.USER:
            pending.clear()
        return Message(role=Role.TOOL, blocks=results, line=index)
    if role is Role.TOOL:
        sink.add(index, "tool message with no open tool call")
        return None
    return Message(role=role, blocks=(TextBlock(text),), line=index)


def _command_name(action: str) -> str:
    """The tool a SWE-agent action runs: its first word (``open``, ``edit``, ``python`` ...)."""
    first = action.strip().split(None, 1)[0] if action.strip() else ""
    return first[:40] or "bash"


def _model(doc: dict[str, Any]) -> str | None:
    replay = doc.get("replay_config")
    config: Any = replay
    if isinstance(replay, str):
        try:
            config = loads(replay)
        except BadJSON:
            config = None
    agent = get_dict(config, "agent") if isinstance(config, dict) else None
    model = get_dict(agent, "model") if agent is not None else None
    name = get_str(model, "name") if model is not None else None
    return name.rsplit("/", 1)[-1] if name else None
