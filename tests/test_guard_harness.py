"""The guard next to agents that manage their own context: their compaction requests pass
untouched (enforce only adds facts for the summary), sessions follow the agent's own ids across
compactions, ctxhealth's own failures pass the request through, and a halt is final for clients."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from ctxhealth.integrations.guard import Applied, Guard, Mode
from ctxhealth.integrations.guard.store import MemoryStore
from ctxhealth.integrations.wire import ApiStyle, ResponseFacts
from ctxhealth.model import Usage
from ctxhealth.monitor import Monitor
from ctxhealth.policy import Action

TASK = "Fix the failing date parser in src/dates.py and make tests/test_dates.py pass."
CODEX_HEADERS = {
    "session-id": "0199a-codex-1",
    "originator": "codex_exec",
    "user-agent": "codex_exec/0.171.0",
}
CLAUDE_HEADERS = {
    "x-claude-code-session-id": "5f0c-claude-1",
    "user-agent": "claude-cli/2.1.332 (external, cli)",
}


def responses_history(turns: int) -> list[Any]:
    items: list[Any] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]}
    ]
    for i in range(turns):
        items.append(
            {"type": "function_call", "call_id": f"c{i}", "name": "shell", "arguments": '{"cmd":"pytest"}'}
        )
        items.append(
            {
                "type": "function_call_output",
                "call_id": f"c{i}",
                "output": f"FAILED tests/test_dates.py::test_{i} - ValueError: bad month {i}\n" + "x" * 400,
            }
        )
    return items


def anthropic_history(turns: int) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": TASK}]
    for i in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "pytest"}}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"FAILED test_{i}" + "y" * 400}
                ],
            }
        )
    return messages


def responses_body(items: list[Any]) -> dict[str, Any]:
    return {
        "model": "gpt-5",
        "instructions": "You are Codex.",
        "input": items,
        "prompt_cache_key": "0199a-codex-1",
    }


def at_limit(guard: Guard, style: ApiStyle, body: dict[str, Any], headers: dict[str, str]) -> None:
    """One request answered past the hard limit: the next request is decided at restart or halt."""
    first = guard.plan(style, orjson.dumps(body), headers)
    guard.finish(first, 200, ResponseFacts(Usage(input_tokens=500, cache_read_tokens=190_000), "gpt-5", "r1"))


CODEX_TRIGGER = {"type": "compaction_trigger"}
CODEX_PROMPT = (
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will "
    "resume the task."
)
CLAUDE_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the "
    "user's explicit requests and your previous actions."
)


@pytest.mark.parametrize("mode", list(Mode))
def test_codex_remote_compaction_keeps_its_trigger_last_and_is_never_halted(mode: Mode) -> None:
    guard = Guard(mode)
    items = responses_history(3)
    at_limit(guard, ApiStyle.OPENAI_RESPONSES, responses_body(items), CODEX_HEADERS)
    compaction = responses_body(
        [*items, {"type": "message", "role": "assistant", "content": "Done."}, CODEX_TRIGGER]
    )
    raw = orjson.dumps(compaction)
    plan = guard.plan(ApiStyle.OPENAI_RESPONSES, raw, CODEX_HEADERS)
    assert plan.error is None and plan.harness is not None
    if mode is not Mode.ENFORCE:
        assert plan.body is None  # byte for byte: advise puts no note on it
        return
    sent = orjson.loads(plan.body or raw)
    assert sent["input"][-1] == CODEX_TRIGGER
    assert sent["input"][: len(compaction["input"]) - 1] == compaction["input"][:-1]
    facts = sent["input"][-2]["content"][0]["text"]
    assert "KEEP IN THE SUMMARY" in facts and "src/dates.py" in facts


@pytest.mark.parametrize("mode", list(Mode))
def test_custom_provider_compaction_prompt_is_kept_not_replaced(mode: Mode) -> None:
    guard = Guard(mode)
    items = responses_history(3)
    at_limit(guard, ApiStyle.OPENAI_RESPONSES, responses_body(items), CODEX_HEADERS)
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": CODEX_PROMPT}]}
    body = responses_body([*items, prompt])
    plan = guard.plan(ApiStyle.OPENAI_RESPONSES, orjson.dumps(body), CODEX_HEADERS)
    assert plan.error is None and plan.applied in (Applied.NONE, Applied.NOTE)
    sent = body if plan.body is None else orjson.loads(plan.body)
    assert sent["input"][:-1] == body["input"][:-1]  # everything the agent sent, in place
    assert sent["input"][-1]["content"][: len(prompt["content"])] == prompt["content"]  # its prompt first
    assert (plan.body is None) is (mode is not Mode.ENFORCE)
    if mode is Mode.ENFORCE:
        facts = sent["input"][-1]["content"][-1]["text"]
        assert "KEEP IN THE SUMMARY" in facts and "CONTEXT CHECKPOINT COMPACTION" not in facts


@pytest.mark.parametrize("mode", [Mode.ADVISE, Mode.ENFORCE])
def test_claude_code_summary_request_gets_no_note_and_no_halt(mode: Mode) -> None:
    guard = Guard(mode)
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": anthropic_history(3)}
    at_limit(guard, ApiStyle.ANTHROPIC_MESSAGES, body, CLAUDE_HEADERS)
    messages = anthropic_history(3)
    messages[-1] = {
        **messages[-1],
        "content": [*messages[-1]["content"], {"type": "text", "text": CLAUDE_PROMPT}],
    }
    plan = guard.plan(
        ApiStyle.ANTHROPIC_MESSAGES, orjson.dumps({**body, "messages": messages}), CLAUDE_HEADERS
    )
    assert plan.error is None
    if mode is Mode.ADVISE:
        assert plan.body is None
    else:
        sent = orjson.loads(plan.body or b"{}")["messages"]
        assert sent[-1]["content"][: len(messages[-1]["content"])] == messages[-1]["content"]
        assert "KEEP IN THE SUMMARY" in sent[-1]["content"][-1]["text"]


def test_enforce_never_restarts_a_self_compacting_agent() -> None:
    guard = Guard(Mode.ENFORCE)
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": anthropic_history(12)}
    at_limit(guard, ApiStyle.ANTHROPIC_MESSAGES, body, CLAUDE_HEADERS)
    grown = {**body, "messages": anthropic_history(13)}
    plan = guard.plan(ApiStyle.ANTHROPIC_MESSAGES, orjson.dumps(grown), CLAUDE_HEADERS)
    assert plan.action in (Action.HALT, Action.RESTART) and plan.error is None
    sent = orjson.loads(plan.body or b"{}")["messages"]
    assert len(sent) == len(grown["messages"])  # every message kept: stale tool output cleared instead
    assert plan.report is not None and plan.report.action is Action.CLEAR_TOOL_RESULTS


def test_two_agents_with_the_same_start_are_two_sessions() -> None:
    guard = Guard(Mode.OBSERVE)
    body = orjson.dumps(responses_body(responses_history(1)) | {"prompt_cache_key": None})
    a = guard.plan(ApiStyle.OPENAI_RESPONSES, body, {"session-id": "aaa"})
    b = guard.plan(ApiStyle.OPENAI_RESPONSES, body, {"session-id": "bbb"})
    assert a.key != b.key
    claude = guard.plan(ApiStyle.OPENAI_RESPONSES, body, {"x-claude-code-session-id": "ccc"})
    assert claude.key not in (a.key, b.key)


def test_a_compaction_is_a_reset_of_the_same_session_with_its_counters_kept() -> None:
    guard = Guard(Mode.OBSERVE)
    items = responses_history(3)
    first = guard.plan(ApiStyle.OPENAI_RESPONSES, orjson.dumps(responses_body(items)), CODEX_HEADERS)
    session = guard.sessions[first.key or ""]
    session.monitor.record_recovery(Action.RESTART)
    guard.plan(
        ApiStyle.OPENAI_RESPONSES, orjson.dumps(responses_body([*items, CODEX_TRIGGER])), CODEX_HEADERS
    )
    # after compacting, Codex starts from its summary: new first message, new item ids
    summary = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Summary: parser half done."}],
    }
    after = guard.plan(ApiStyle.OPENAI_RESPONSES, orjson.dumps(responses_body([summary])), CODEX_HEADERS)
    assert after.key == first.key and after.reset
    assert guard.sessions[first.key or ""].monitor.counters.restarts == 1
    again = guard.plan(
        ApiStyle.OPENAI_RESPONSES,
        orjson.dumps(responses_body([summary, *responses_history(1)[1:]])),
        CODEX_HEADERS,
    )
    assert again.key == first.key and not again.reset
    assert guard.status()["sessions"][0]["compactions"] == 1


def test_an_internal_failure_passes_the_request_through_and_is_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: Monitor, message: Any, *, fill: int | None = None) -> Any:
        raise RuntimeError("detector exploded")

    monkeypatch.setattr(Monitor, "update", broken)  # what the guard feeds each message to
    store = MemoryStore()
    guard = Guard(Mode.ENFORCE, store=store)
    plan = guard.plan(ApiStyle.OPENAI_RESPONSES, orjson.dumps(responses_body(responses_history(2))), {})
    assert plan.body is None and plan.error is None
    assert guard.metrics.errors == 1
    assert store.errors and "detector exploded" in store.errors[-1][1]
    assert "ctxhealth_proxy_errors_total 1" in guard.metrics_text()


@pytest.fixture
def halting_server() -> Iterator[tuple[str, list[int]]]:
    """A chat-completions server that answers every request with the guard's own halt."""
    guard = Guard(Mode.ENFORCE)
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": TASK}]}
    first = guard.plan(ApiStyle.OPENAI_CHAT, orjson.dumps(chat), {})
    guard.finish(first, 200, ResponseFacts(Usage(input_tokens=100_000), "gpt-4o", "x"))
    grown = {
        **chat,
        "messages": [
            *chat["messages"],
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "go"},
        ],
    }
    plan = guard.plan(ApiStyle.OPENAI_CHAT, orjson.dumps(grown), {})
    assert plan.error is not None
    error = plan.error
    calls: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            calls.append(1)
            data = orjson.dumps(error.body)
            self.send_response(error.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in getattr(error, "headers", {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", calls
    finally:
        server.shutdown()
        server.server_close()


def test_a_halt_is_final_for_litellm_users_such_as_mini_swe_agent(
    halting_server: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network
    litellm = pytest.importorskip("litellm")
    from minisweagent.models.litellm_model import LitellmModel

    url, calls = halting_server
    with pytest.raises(Exception) as caught:  # the type is the assertion below
        litellm.completion(
            model="openai/gpt-4o",
            api_base=url,
            api_key="k",
            messages=[{"role": "user", "content": "hi"}],
            num_retries=0,
            max_retries=0,
        )
    # mini-swe-agent aborts at once on these (it retried any other error ten times)
    abort = tuple(LitellmModel(model_name="openai/gpt-4o").abort_exceptions)
    assert isinstance(caught.value, abort), type(caught.value)
    assert isinstance(caught.value, litellm.exceptions.ContextWindowExceededError)
    assert len(calls) == 1


def test_a_halt_is_not_retried_by_the_openai_sdk(halting_server: tuple[str, list[int]]) -> None:
    openai = pytest.importorskip("openai")
    url, calls = halting_server
    client = openai.OpenAI(base_url=url, api_key="k", max_retries=3)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert len(calls) == 1
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.response.headers["x-should-retry"] == "false"


def chat_history(turns: int, output_chars: int, *, task: str = TASK) -> list[Any]:
    messages: list[Any] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": task},
    ]
    for i in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": f"Running step {i + 1}.",
                "tool_calls": [
                    {
                        "id": f"call{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": f'{{"command": "seq {i} 1500"}}'},
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": f"call{i}", "content": f"{i}\n" * (output_chars // 2)}
        )
    return messages


def _chat_plan(guard: Guard, messages: list[Any], fill: int) -> Any:
    body = {"model": "phi-3", "messages": messages[:-2]}
    first = guard.plan(ApiStyle.OPENAI_CHAT, orjson.dumps(body), {})
    guard.finish(first, 200, ResponseFacts(Usage(input_tokens=fill), "phi-3", "r1"))
    return guard.plan(ApiStyle.OPENAI_CHAT, orjson.dumps({**body, "messages": messages}), {})


def test_enforce_clears_stale_tool_output_instead_of_truncating_when_that_leaves_the_compact_zone() -> None:
    # phi-3: a 16K window, compact zone at 8,192 tokens; four outputs of ~1,750 tokens each
    guard = Guard(Mode.ENFORCE, model="phi-3")
    messages = chat_history(4, 7000)
    plan = _chat_plan(guard, messages, 7_400)
    assert plan.action is Action.TRUNCATE and plan.report is not None
    assert plan.report.action is Action.CLEAR_TOOL_RESULTS and plan.applied is Applied.REWRITE
    sent = orjson.loads(plan.body or b"{}")["messages"]
    assert len(sent) == len(messages)  # every turn kept: the agent still sees what it did
    assert [m.get("tool_calls") for m in sent] == [m.get("tool_calls") for m in messages]
    outputs = [m["content"] for m in sent if m["role"] == "tool"]
    assert (
        all(o.startswith("[cleared by ctxhealth:") for o in outputs[:-1])
        and outputs[-1] == messages[-1]["content"]
    )
    counters = guard.sessions[plan.key].monitor.counters
    assert counters.truncations == 0 and counters.restarts == 0  # a clearing, not a truncation


def test_enforce_truncates_when_clearing_would_not_leave_the_compact_zone() -> None:
    guard = Guard(Mode.ENFORCE, model="phi-3")
    task = (
        TASK + " " + "Keep every detail of this long specification in mind. " * 700
    )  # ~9K tokens of request
    plan = _chat_plan(guard, chat_history(4, 400, task=task), 12_000)
    assert plan.action is Action.TRUNCATE and plan.report is not None
    assert plan.report.action is Action.TRUNCATE
