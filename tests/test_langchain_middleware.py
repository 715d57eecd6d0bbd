"""The LangChain v1 middleware in a real ``create_agent`` loop with a scripted chat model whose replies
carry usage, so the fill (and the decision) is what the replies report.

LangChain is imported when the first test runs (:func:`kit`), not while the suite is collected."""

from __future__ import annotations

import functools
import importlib.util
from types import SimpleNamespace
from typing import Any

import pytest

from ctxhealth.recovery.pairing import find_orphans

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("langchain") is None, reason="langchain is not installed"
)

INSTRUCTION = "Fix the failing parser test in src/parser.py and run the parser test suite."


@functools.cache
def kit() -> SimpleNamespace:
    """LangChain's pieces, the tool and the scripted model, built on first use."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool

    from ctxhealth.integrations.langchain import CtxHealthMiddleware, to_message

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"def parse(text):  # {path}\n    return text.split()\n" * 5

    class ScriptedModel(GenericFakeChatModel):
        """Replies from a script and records the messages of every call."""

        seen: list[list[BaseMessage]] = []  # noqa: RUF012 (pydantic field default)

        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
            return self

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            self.seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    return SimpleNamespace(
        create_agent=create_agent,
        AIMessage=AIMessage,
        HumanMessage=HumanMessage,
        ToolMessage=ToolMessage,
        CtxHealthMiddleware=CtxHealthMiddleware,
        to_message=to_message,
        read_file=read_file,
        ScriptedModel=ScriptedModel,
    )


def reply(i: int, fill: int, *, call: bool = True) -> Any:
    calls = [{"id": f"call_{i}", "name": "read_file", "args": {"path": "src/parser.py"}}] if call else []
    return kit().AIMessage(
        content=f"Reading the parser module src/parser.py for the failing parser test, step {i}.",
        tool_calls=calls,
        usage_metadata={"input_tokens": fill, "output_tokens": 40, "total_tokens": fill + 40},
        response_metadata={"model_name": "claude-sonnet-4-5"},
    )


def run(mode: str, fills: list[int]) -> tuple[list[Any], list[list[Any]]]:
    lc = kit()
    script = [reply(i, f, call=i < len(fills) - 1) for i, f in enumerate(fills)]
    model = lc.ScriptedModel(messages=iter(script), seen=[])
    agent = lc.create_agent(model, [lc.read_file], middleware=[lc.CtxHealthMiddleware(mode)])
    state = agent.invoke({"messages": [lc.HumanMessage(INSTRUCTION)]})
    return list(state["messages"]), model.seen


def test_observe_changes_nothing() -> None:
    messages, seen = run("observe", [5_000, 8_000, 125_000, 130_000])
    assert len(seen) == 4 and len(messages) == 1 + 3 * 2 + 1
    assert all(len(seen[i + 1]) == len(seen[i]) + 2 for i in range(3))


def test_enforce_truncates_the_state_and_keeps_pairs() -> None:
    fills = [5_000, 8_000, 12_000, 15_000, 125_000, 30_000, 31_000]
    messages, seen = run("enforce", fills)
    # after the reply that reported 125K tokens, the next call saw a truncated conversation
    assert len(seen[5]) < len(seen[4]) + 2
    first = seen[5][0]
    assert isinstance(first, kit().HumanMessage) and INSTRUCTION in str(first.content)
    assert "[CONTEXT CHECKPOINT" in "\n".join(str(m.content) for m in seen[5])
    for call in seen:
        assert find_orphans([kit().to_message(m) for m in call]) == ()
    # the state itself was rewritten, the run went on to the end
    assert len(messages) < 1 + (len(fills) - 1) * 2 + 1
    assert isinstance(messages[-1], kit().AIMessage) and not messages[-1].tool_calls
    assert any(isinstance(m, kit().ToolMessage) and m.tool_call_id == "call_5" for m in messages)


def test_enforce_halt_ends_the_run_with_the_reason() -> None:
    messages, seen = run("enforce", [5_000, 145_000, 150_000])
    assert len(seen) == 2  # no third model call
    assert isinstance(messages[-1], kit().AIMessage) and "halted this session" in str(messages[-1].content)


def test_advise_adds_a_note_to_the_request_only() -> None:
    messages, seen = run("advise", [5_000, 100_000, 101_000, 102_000])
    note = seen[2][-1]
    assert isinstance(note, kit().HumanMessage) and str(note.content).startswith("[CTXHEALTH -- WARN]")
    assert not any("CTXHEALTH" in str(m.content) for m in messages)  # the state keeps no note
    assert not any("CTXHEALTH" in str(m.content) for m in seen[3])  # once per episode


def long_loop(fills: list[int], texts: list[str] | None = None) -> tuple[Any, Any, list[Any]]:
    """An enforcing ``create_agent`` loop over scripted replies; each call reads another file."""
    script = []
    for i, fill in enumerate(fills):
        calls = [{"id": f"call_{i}", "name": "read_file", "args": {"path": f"src/m{i}.py"}}]
        script.append(
            kit().AIMessage(
                content=texts[i] if texts else f"Reading src/m{i}.py for the failing parser test, step {i}.",
                tool_calls=calls if i < len(fills) - 1 else [],
                usage_metadata={"input_tokens": fill, "output_tokens": 40, "total_tokens": fill + 40},
                response_metadata={"model_name": "claude-sonnet-4-5"},
            )
        )
    model = kit().ScriptedModel(messages=iter(script), seen=[])
    middleware = kit().CtxHealthMiddleware("enforce")
    agent = kit().create_agent(model, [kit().read_file], middleware=[middleware])
    state = agent.invoke({"messages": [kit().HumanMessage(INSTRUCTION)]}, {"recursion_limit": 1_000})
    return middleware, state, model.seen


def test_the_policy_counters_survive_the_middlewares_own_rewrites_over_a_long_loop() -> None:
    fills = [5_000]
    while len(fills) < 80:
        fills += [130_000, 20_000, 21_000, 22_000, 23_000]  # the compact zone, then room again
    middleware, _, seen = long_loop(fills[:80])
    assert len(seen) == 80
    assert len(middleware.threads) == 1  # one thread across truncations and restarts
    thread = next(iter(middleware.threads.values()))
    assert thread.resets == 0  # its own rewrites are known, not taken for someone else's edit
    # two truncations, then restarts; after the third restart the circuit breaker truncates again
    assert thread.actions.get("restart") == 3
    assert thread.monitor.counters.restarts == 3
    assert thread.monitor.counters.truncations > 2


def test_re_anchor_messages_never_pile_up() -> None:
    on = "Fix the failing parser test in src/parser.py: run the parser test suite again now."
    off = "Meanwhile the garden hose and the tomato plants on the balcony need watering today. " * 25
    texts = [on, off, off, on, on, off, off, on, off, off, off]
    fills = [5_000] + [85_000 + i * 100 for i in range(1, len(texts))]
    _, state, seen = long_loop(fills, texts)
    assert any("[RE-ANCHOR" in str(m.content) for m in state["messages"])
    for call in seen:
        assert sum("[RE-ANCHOR" in str(m.content) for m in call) <= 1


@pytest.mark.parametrize("mode", ["observe", "advise", "enforce"])
def test_the_middleware_fails_open(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxhealth.monitor import Monitor

    def broken(self: Monitor, message: Any, *, fill: int | None = None) -> Any:
        raise RuntimeError("detector exploded")

    monkeypatch.setattr(Monitor, "update", broken)  # what the middleware feeds each message to
    script = [reply(i, f, call=i < 2) for i, f in enumerate([5_000, 130_000, 170_000])]
    model = kit().ScriptedModel(messages=iter(script), seen=[])
    middleware = kit().CtxHealthMiddleware(mode)
    agent = kit().create_agent(model, [kit().read_file], middleware=[middleware])
    state = agent.invoke({"messages": [kit().HumanMessage(INSTRUCTION)]})
    assert len(model.seen) == 3 and len(state["messages"]) == 1 + 2 * 2 + 1  # ran to the end, unchanged
    assert middleware.errors and "detector exploded" in middleware.errors[-1]
