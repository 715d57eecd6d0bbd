"""A LangChain v1 agent middleware that applies the health policy: ``CtxHealthMiddleware``.

For agents built with ``langchain.agents.create_agent`` (needs ``pip install 'ctxhealth[langchain]'``)::

    agent = create_agent(model, tools, middleware=[CtxHealthMiddleware(mode="enforce")])

* ``before_model`` feeds the messages the conversation gained since the last model call to the
  thread's :class:`~ctxhealth.monitor.Monitor` (the usage LangChain records on each ``AIMessage``,
  ``usage_metadata``, gives the reported fill) and decides. In ``enforce`` mode it carries the decision
  out in the agent's state, as LangChain's own summarisation does (every message replaced): clear tool
  results, compress history, truncate, restart with the recovery code; re-anchor appends the spec's
  re-anchor message; halt ends the run with an ``AIMessage`` that says why and what to do.
* ``wrap_model_call`` adds the note (``advise``: for any intervention; ``enforce``: for a warning) to
  the request only, once per episode; the state keeps no note.

Threads are told apart by LangGraph's ``thread_id`` (the run's config) when there is one, else by
the id of their first message; the messages ctxhealth writes (a recovery's, a re-anchor) carry ids of
its own (``ctxhealth-...``), so a rewritten conversation is still known as the same thread and its
counters (truncations, restarts, cooldown) go on. A conversation whose known messages changed
(another middleware summarised it) is observed afresh, with the counters kept. Messages unchanged by a
recovery are handed back as the same LangChain objects (ids, metadata and all); an earlier re-anchor
message is removed when a new one is added, so they never pile up.

Fail open: an error inside ctxhealth leaves the state and the request as they are (the agent goes on),
is logged (logger ``ctxhealth.langchain``) and counted in ``errors``.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import hook_config
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from ctxhealth.errors import UsageError
from ctxhealth.integrations.guard import Mode
from ctxhealth.integrations.guard.apply import RECOVERIES, recover
from ctxhealth.integrations.guard.notes import halt_text, note_text
from ctxhealth.model import Block, Format, Message, Role, Session, TextBlock, ToolCall, ToolResult, Usage
from ctxhealth.monitor import Assessment, Monitor
from ctxhealth.policy import Action
from ctxhealth.policy.decision import Counters
from ctxhealth.policy.profile import Profile
from ctxhealth.recovery.reanchor import reanchor

__all__ = ["CtxHealthMiddleware", "to_message"]

MAX_THREADS = 1_000
"""Threads kept per middleware; a forgotten thread is observed afresh if it comes back."""
ID_PREFIX = "ctxhealth-"
"""The ids of the messages ctxhealth writes into a thread."""
MAX_ERRORS = 100

log = logging.getLogger("ctxhealth.langchain")


def _new_id() -> str:
    return ID_PREFIX + uuid.uuid4().hex


def _thread_id() -> str | None:
    """LangGraph's ``thread_id`` of the running graph, when it has one."""
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a runnable
        return None
    value = configurable.get("thread_id")
    return None if value is None else str(value)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p if isinstance(p, str) else str(p.get("text", ""))
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")
        ]
        return "\n".join(parts)
    return ""


def _usage(message: AIMessage) -> Usage | None:
    meta = message.usage_metadata
    if not meta:
        return None
    details: Any = meta.get("input_token_details") or {}
    out_details: Any = meta.get("output_token_details") or {}
    cache_read = int(details.get("cache_read") or 0)
    cache_write = int(details.get("cache_creation") or 0)
    total = int(meta.get("input_tokens") or 0)
    return Usage(
        input_tokens=max(0, total - cache_read - cache_write),
        output_tokens=int(meta.get("output_tokens") or 0),
        cache_creation_tokens=cache_write,
        cache_read_tokens=cache_read,
        reasoning_tokens=int(out_details.get("reasoning") or 0),
    )


def to_message(message: BaseMessage, line: int | None = None) -> Message:
    """A LangChain message as a ctxhealth :class:`Message` (``line``: its 1-based position)."""
    text = _text(message.content)
    blocks: list[Block] = [TextBlock(text)] if text else []
    if isinstance(message, AIMessage):
        blocks.extend(ToolCall(str(c.get("id") or ""), c["name"], c["args"]) for c in message.tool_calls)
        model = message.response_metadata.get("model_name") or message.response_metadata.get("model")
        return Message(
            Role.ASSISTANT,
            tuple(blocks),
            id=message.id,
            model=model if isinstance(model, str) else None,
            usage=_usage(message),
            line=line,
        )
    if isinstance(message, ToolMessage):
        result = ToolResult(message.tool_call_id, text, is_error=message.status == "error")
        return Message(Role.TOOL, (result,), id=message.id, line=line)
    role = Role.SYSTEM if isinstance(message, SystemMessage) else Role.USER
    return Message(role, tuple(blocks), id=message.id, line=line)


def _from_message(message: Message) -> list[BaseMessage]:
    """A ctxhealth message written by a recovery as LangChain messages."""
    text = "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text)
    if message.role is Role.ASSISTANT:
        calls = [
            {"id": c.id, "name": c.name, "args": c.input if isinstance(c.input, dict) else {"input": c.input}}
            for c in message.tool_calls
        ]
        return [AIMessage(content=text, tool_calls=calls, id=_new_id())]
    out: list[BaseMessage] = [
        ToolMessage(
            content=r.text,
            tool_call_id=r.tool_call_id,
            status="error" if r.is_error else "success",
            id=_new_id(),
        )
        for r in message.tool_results
    ]
    if text:
        kind = SystemMessage if message.role is Role.SYSTEM else HumanMessage
        out.append(kind(content=text, id=_new_id()))
    return out


def _ids_digest(messages: Sequence[BaseMessage]) -> bytes:
    joined = "\x00".join(str(m.id) for m in messages)
    return hashlib.blake2b(joined.encode(), digest_size=16).digest()


@dataclass
class _Thread:
    monitor: Monitor
    count: int = 0
    digest: bytes = b""
    last: Assessment | None = None
    noted: str | None = None
    resets: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    reanchors: list[str] = field(default_factory=list)  # ids of its re-anchor messages


class CtxHealthMiddleware(AgentMiddleware):
    """The health policy for ``create_agent`` (see the module docstring).

    ``model`` fixes the model for accounting (else the first response that names one sets it);
    ``profile`` overrides the thresholds.
    """

    def __init__(
        self, mode: Mode | str = Mode.OBSERVE, *, model: str | None = None, profile: Profile | None = None
    ) -> None:
        super().__init__()
        try:
            self.mode = Mode(mode)
        except ValueError:
            raise UsageError(f"unknown mode {mode!r}", hint="use observe, advise or enforce") from None
        self.model = model
        self.profile = profile
        self.threads: OrderedDict[str, _Thread] = OrderedDict()
        self._minted: OrderedDict[str, str] = OrderedDict()  # id of a message ctxhealth wrote -> thread
        self.errors: list[str] = []  # ctxhealth's own failures, latest last (the agent went on)

    # ------------------------------------------------------------------ observing

    def _key(self, messages: Sequence[AnyMessage]) -> str:
        thread_id = _thread_id()
        if thread_id is not None:
            return "thread:" + thread_id
        first = str(messages[0].id) if messages else ""
        return self._minted.get(first, first)

    def _thread(self, messages: Sequence[AnyMessage]) -> _Thread:
        key = self._key(messages)
        thread = self.threads.get(key)
        if thread is None:
            thread = self.threads[key] = _Thread(Monitor(self.model, self.profile))
            while len(self.threads) > MAX_THREADS:
                self.threads.popitem(last=False)  # the least recently used thread is forgotten
        else:
            self.threads.move_to_end(key)
        return thread

    def _mint(self, thread_key: str, messages: Sequence[BaseMessage]) -> None:
        """Remember that a rewritten conversation starting with ``messages[0]`` is ``thread_key``
        (without a ``thread_id``, threads are known by their first message's id)."""
        if messages and messages[0].id and str(messages[0].id) != thread_key:
            self._minted[str(messages[0].id)] = thread_key
            while len(self._minted) > MAX_THREADS:
                self._minted.popitem(last=False)

    def assess(self, messages: Sequence[AnyMessage]) -> tuple[_Thread, Assessment | None]:
        """Observe what ``messages`` added since the last call; the thread and its latest assessment."""
        thread = self._thread(messages)
        count = thread.count
        if count and (count > len(messages) or _ids_digest(messages[:count]) != thread.digest):
            # edited by someone else: observe afresh, the policy's counters kept
            kept = thread.monitor.counters
            thread.monitor = Monitor(self.model, self.profile)
            thread.monitor.counters = Counters(kept.restarts, kept.truncations, kept.cooldown, 0)
            thread.resets += 1
            thread.noted = None
            count = 0
        for i in range(count, len(messages)):
            thread.monitor.update(to_message(messages[i], i + 1))
        observed = len(messages) > count
        if observed:
            thread.last = thread.monitor.assess()
        thread.count = len(messages)
        thread.digest = _ids_digest(messages)
        if observed and thread.last is not None:
            action = thread.last.action.value
            thread.actions[action] = thread.actions.get(action, 0) + 1
            if thread.last.action is Action.CONTINUE:
                thread.noted = None
        return thread, thread.last

    def _failed(self, where: str, exc: Exception) -> None:
        message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        log.warning("ctxhealth %s skipped (the agent goes on unchanged): %s", where, message)
        self.errors = [*self.errors[-(MAX_ERRORS - 1) :], f"{where}: {message}"]

    # ------------------------------------------------------------------ hooks

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        try:
            return self._before_model(list(state["messages"]))
        except Exception as exc:  # fail open: ctxhealth's failure never stops the agent
            self._failed("before_model", exc)
            return None

    def _before_model(self, messages: list[AnyMessage]) -> dict[str, Any] | None:
        thread, assessment = self.assess(messages)
        if assessment is None or self.mode is not Mode.ENFORCE:
            return None
        key = self._key(messages)
        action = assessment.action
        if action is Action.HALT:
            return {"messages": [AIMessage(content=halt_text(assessment), id=_new_id())], "jump_to": "end"}
        if action is Action.REANCHOR and thread.noted != action.value:
            thread.noted = action.value
            session = _session(messages)
            _, report = reanchor(session, similarity=thread.monitor.drift.similarity, tokens=assessment.fill)
            thread.monitor.record_recovery(Action.REANCHOR)
            note = HumanMessage(content=report.injected[0], id=_new_id())
            # the previous re-anchor goes: one at a time in the conversation
            present = {str(m.id) for m in messages}
            stale = [i for i in thread.reanchors if i in present]
            thread.reanchors = [str(note.id)]
            kept = [m for m in messages if str(m.id) not in stale]
            thread.count, thread.digest = len(kept) + 1, _ids_digest([*kept, note])
            return {"messages": [*(RemoveMessage(id=i) for i in stale), note]}
        if action not in RECOVERIES:
            return None
        recovered, report = recover(action, _session(messages))
        new: list[BaseMessage] = []
        for m in recovered.messages:
            original = messages[m.line - 1] if m.line and m.line <= len(messages) else None
            if original is not None and to_message(original, m.line) == m:
                new.append(original)
            else:
                new.extend(_from_message(m))
        thread.monitor.record_recovery(report.action, fill=report.tokens_after)
        thread.count, thread.digest = len(new), _ids_digest(new)
        self._mint(key, new)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *new]}

    async def abefore_model(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def _noted(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        if self.mode is Mode.OBSERVE:
            return request
        try:
            return self._with_note(request)
        except Exception as exc:  # fail open, as in before_model
            self._failed("wrap_model_call", exc)
            return request

    def _with_note(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        thread, assessment = self.assess(request.messages)
        if assessment is None:
            return request
        action = assessment.action
        wanted = (
            action is Action.WARN
            if self.mode is Mode.ENFORCE
            else action
            not in (
                Action.CONTINUE,
                Action.COMPRESS_HISTORY,
            )
        )
        if not wanted or thread.noted == action.value:
            return request
        thread.noted = action.value
        return request.override(
            messages=[*request.messages, HumanMessage(content=note_text(action, assessment))]
        )

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        return handler(self._noted(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._noted(request))


def _session(messages: Sequence[BaseMessage]) -> Session:
    return Session(
        path="langchain",
        format=Format.OPENAI_CHAT,
        messages=tuple(to_message(m, i) for i, m in enumerate(messages, start=1)),
    )
