"""Reader for tau-bench result files: one JSON array of runs, each run one session.

A run is ``{task_id, trial, reward, info, traj}`` where ``traj`` is a Chat Completions message
list (system policy, simulated user, assistant with ``tool_calls``, ``tool`` results). Each run
becomes a :class:`Session` with id ``task-<task_id>-trial-<trial>``, ``task_id`` kept (repeated
trials of one task share it) and ``reward`` kept as ``outcome`` (1.0 is a success).

tau-bench tools answer a refused action with a result that starts ``Error:``; such results are
failed tool results. The log has no usage: fill is counted from the text by accounting.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec.structs

from ctxhealth.model import Format, Message, Role, Session, ToolResult
from ctxhealth.sources.lines import WarningSink, as_float, as_int, get_list, load_document, type_name
from ctxhealth.sources.openai_chat import chat_messages

_ERROR = re.compile(r"\s*error\b", re.IGNORECASE)


def parse(data: bytes, path: str) -> Session:
    """The first run of the file (use :func:`parse_all` for every run)."""
    sessions = parse_all(data, path)
    if sessions:
        return sessions[0]
    return Session(path=path, format=Format.TAU_BENCH, messages=())


def parse_all(data: bytes, path: str) -> list[Session]:
    """Every run of a tau-bench result file, in file order."""
    sink = WarningSink(path)
    doc = load_document(data, sink)
    if not isinstance(doc, list):
        if doc is not None:
            sink.add(None, f"document is {type_name(doc)}, expected an array of runs")
        return [Session(path=path, format=Format.TAU_BENCH, messages=(), warnings=sink.result())]
    sessions = []
    for index, run in enumerate(doc, start=1):
        if not isinstance(run, dict):
            sink.add(index, f"run {index} is {type_name(run)}, expected object; skipped")
            continue
        sessions.append(_run(run, index, path))
    if sink.result() and sessions:
        first = sessions[0]
        sessions[0] = msgspec.structs.replace(first, warnings=(*sink.result(), *first.warnings))
    return sessions


def _run(run: dict[str, Any], index: int, path: str) -> Session:
    sink = WarningSink(path)
    task = run.get("task_id")
    task_id = str(task) if isinstance(task, (int, str)) else None
    trial = as_int(run.get("trial"))
    session_id = f"task-{task_id if task_id is not None else index}-trial-{trial if trial is not None else 0}"
    traj = get_list(run, "traj")
    if traj is None:
        sink.add(index, f"run {session_id} has no 'traj' message list")
        traj = []
    messages, model = chat_messages(traj, sink)
    reward = run.get("reward")
    outcome = as_float(reward)
    if outcome is None:
        sink.add(index, f"run {session_id} has no numeric 'reward'")
    return Session(
        path=path,
        format=Format.TAU_BENCH,
        messages=tuple(_mark_errors(m) for m in messages),
        session_id=session_id,
        model=model,
        warnings=sink.result(),
        outcome=outcome,
        task_id=task_id,
    )


def _mark_errors(message: Message) -> Message:
    if message.role is not Role.TOOL:
        return message
    blocks = tuple(
        msgspec.structs.replace(b, is_error=True) if isinstance(b, ToolResult) and _ERROR.match(b.text) else b
        for b in message.blocks
    )
    return msgspec.structs.replace(message, blocks=blocks)
