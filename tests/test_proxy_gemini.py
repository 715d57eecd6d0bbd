"""The proxy's Gemini route: ``models/{model}:generateContent`` / ``:streamGenerateContent`` through the
guard, the usage read from ``usageMetadata``, Gemini CLI's ``<state_snapshot>`` compression passed through
in every mode (enforce adds the checkpoint's facts), stale ``functionResponse`` parts cleared instead of a
restart, one session across the compression, and the API key (header or ``key=``) never logged or shown."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import orjson
import pytest

from conformance.fake_gemini import FakeGemini
from ctxhealth.integrations.guard import Guard, Mode
from ctxhealth.integrations.wire import ApiStyle, ResponseFacts, UsageTap, adapter_for_path
from ctxhealth.integrations.wire.gemini import GeminiContents, model_in_path
from ctxhealth.integrations.wire.harness import HarnessRequest
from ctxhealth.model import Role, ToolCall, ToolResult, Usage
from ctxhealth.policy import Action
from ctxhealth.recovery.clear import PLACEHOLDER_PREFIX
from ctxhealth.recovery.restart import restart
from ctxhealth.recovery.truncate import truncate
from proxy_process import ProxyProcess

GEMINI = GeminiContents()
CONTEXT = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "Today's date is Tuesday, December 1, 2026.\nMy operating system is: linux\n"
    "- **Workspace Directories:**\n  - /home/dev/project\n- **Directory Structure:**\n\n/home/dev/project/\n"
    "</session_context>"
)
TASK = "Fix the failing date parser in src/dates.py and make tests/test_dates.py pass."
SYSTEM = {"parts": [{"text": "You are an interactive CLI agent specializing in software engineering tasks."}]}
SNAPSHOT_SYSTEM = {
    "parts": [
        {"text": "You are a specialized system component that distils history into a <state_snapshot>."}
    ]
}
HEADERS = {"user-agent": "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64; terminal)"}
STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
GENERATE = "/v1beta/models/gemini-2.5-pro:generateContent"
SECRET = "AIzaSy-ctxhealth-test-secret-0123456789"


def history(turns: int, *, listing: str = "") -> list[Any]:
    contents: list[Any] = [{"role": "user", "parts": [{"text": CONTEXT + listing}, {"text": TASK}]}]
    for i in range(turns):
        call_id = f"run_shell_command_{i}"
        contents.append(
            {
                "role": "model",
                "parts": [
                    {"text": "**Planning**", "thought": True},
                    {
                        "functionCall": {
                            "id": call_id,
                            "name": "run_shell_command",
                            "args": {"command": "pytest"},
                        },
                        "thoughtSignature": "sig-" + str(i),
                    },
                ],
            }
        )
        output = f"FAILED tests/test_dates.py::test_{i} - ValueError: bad month {i}\n" + "x" * 800
        contents.append(
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": call_id,
                            "name": "run_shell_command",
                            "response": {"output": f"Output: {output}\nExit Code: 1"},
                        }
                    }
                ],
            }
        )
    return contents


def body(contents: list[Any], system: Any = SYSTEM) -> dict[str, Any]:
    return {"contents": contents, "systemInstruction": system, "generationConfig": {"temperature": 1}}


def snapshot_request(contents: list[Any]) -> dict[str, Any]:
    prompt = {
        "role": "user",
        "parts": [{"text": "Generate the <state_snapshot> based on the provided history."}],
    }
    return body([*contents, prompt], SNAPSHOT_SYSTEM)


def assert_valid_gemini(contents: list[Any]) -> None:
    """Roles alternate, and every function response answers a call of the model turn just before it."""
    assert contents and contents[0]["role"] == "user"
    for before, after in itertools.pairwise(contents):
        assert before["role"] != after["role"]
    for i, content in enumerate(contents):
        responses = [p["functionResponse"] for p in content["parts"] if "functionResponse" in p]
        if not responses:
            continue
        calls = {
            p["functionCall"]["id"]: p["functionCall"]["name"]
            for p in contents[i - 1]["parts"]
            if "functionCall" in p
        }
        for r in responses:
            assert calls.get(r["id"]) == r["name"]
    for content in contents:
        for part in content["parts"]:
            assert part, content


# ---------------------------------------------------------------- the adapter


def test_the_gemini_paths_are_routed_and_count_tokens_is_forwarded_untouched() -> None:
    for path in (
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        "/v1beta/models/gemini-2.5-pro:generateContent",
        "/v1/models/gemini-2.5-flash:generateContent",
        "/gemini/v1beta/models/gemini-3-pro-preview:streamGenerateContent",
    ):
        adapter = adapter_for_path(path)
        assert adapter is not None and adapter.style is ApiStyle.GEMINI, path
    assert model_in_path("/v1beta/models/gemini-2.5-pro:streamGenerateContent") == "gemini-2.5-pro"
    assert adapter_for_path("/v1beta/models/gemini-2.5-pro:countTokens") is None
    assert adapter_for_path("/v1beta/models") is None
    assert adapter_for_path("/v1/messages") is not None  # the other routes are unchanged


def test_contents_become_messages_with_paired_calls_results_and_thinking() -> None:
    contents = history(2)
    messages = GEMINI.to_messages(body(contents), contents, with_head=True)
    # the head, Gemini CLI's environment text (a system message of its own), the person's request ...
    assert [m.role for m in messages] == [
        Role.SYSTEM,
        Role.SYSTEM,
        *[Role.USER, Role.ASSISTANT] * 2,
        Role.USER,
    ]
    assert [m.line for m in messages] == [0, None, 1, 2, 3, 4, 5]
    assert messages[1].text.startswith("<session_context>") and messages[2].text == TASK
    messages = messages[1:]
    call = messages[2].tool_calls[0]
    assert call == ToolCall("run_shell_command_0", "run_shell_command", {"command": "pytest"})
    result = messages[3].tool_results[0]
    assert result.tool_call_id == call.id and result.is_error and result.exit_code == 1
    assert "ValueError: bad month 0" in result.text
    assert messages[2].text == ""  # the thought part is thinking, not text


def test_calls_without_ids_are_paired_by_name() -> None:
    contents = [
        {"role": "user", "parts": [{"text": TASK}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "a"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "A"}}}]},
    ]
    messages = GEMINI.to_messages(body(contents), contents, with_head=False)
    (call,) = messages[1].tool_calls
    (result,) = messages[2].tool_results
    assert call.id and result == ToolResult(call.id, "A")


@pytest.mark.parametrize("recover", [truncate, restart])
def test_a_recovered_conversation_is_valid_gemini_and_keeps_unchanged_turns_byte_for_byte(
    recover: Any,
) -> None:
    from ctxhealth.integrations.guard.apply import recovery_session

    contents = history(12)
    parsed = GEMINI.to_messages(body(contents), contents, with_head=True)
    recovered, _ = recover(recovery_session(parsed, "k"))
    written = GEMINI.write(list(recovered.messages), contents, [m for m in parsed if m.line])
    assert_valid_gemini(written)
    kept = [c for c in written if c in contents]
    assert all(c is next(o for o in contents if o == c) for c in kept)  # the client's own items
    if recover is truncate:
        assert contents[-1] in kept  # the latest turns stay as they were sent
    for content in written:
        for part in content["parts"]:
            if "functionCall" in part and part not in [p for c in contents for p in c["parts"]]:
                assert part["thoughtSignature"]  # a rewritten call carries the signature Gemini accepts


def test_a_note_is_a_text_part_after_the_last_user_turn() -> None:
    contents = history(1)
    noted = GEMINI.add_note(contents, "[CTXHEALTH -- WARN] note")
    assert noted[:-1] == contents[:-1]
    assert noted[-1]["parts"] == [*contents[-1]["parts"], {"text": "[CTXHEALTH -- WARN] note"}]
    halt = GEMINI.error(
        __import__("ctxhealth.integrations.wire.base", fromlist=["ErrorKind"]).ErrorKind.HALT, "x"
    )
    assert halt.status == 400 and halt.body["error"]["status"] == "INVALID_ARGUMENT"
    assert halt.headers["x-should-retry"] == "false"


# ---------------------------------------------------------------- usage


def test_usage_is_read_from_usage_metadata_streamed_or_not() -> None:
    meta = {
        "promptTokenCount": 15413,
        "cachedContentTokenCount": 11776,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 5,
    }
    want = Usage(input_tokens=15413 - 11776, cache_read_tokens=11776, output_tokens=25, reasoning_tokens=5)
    first = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "a"}]}}],
        "modelVersion": "gemini-2.5-pro",
    }
    last = {**first, "usageMetadata": meta, "responseId": "resp-1"}
    stream = b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in (first, last))
    tap = UsageTap(ApiStyle.GEMINI, "text/event-stream")
    for i in range(0, len(stream), 7):
        tap.feed(stream[i : i + 7])
    assert tap.facts() == ResponseFacts(want, "gemini-2.5-pro", "resp-1")
    tap = UsageTap(ApiStyle.GEMINI, "application/json")
    tap.feed(json.dumps(last).encode())
    assert tap.facts().usage == want
    tap = UsageTap(ApiStyle.GEMINI, "application/json")  # a stream without alt=sse: a JSON array
    tap.feed(json.dumps([first, last]).encode())
    assert tap.facts().usage == want


# ---------------------------------------------------------------- the guard


def plan(guard: Guard, doc: dict[str, Any], headers: dict[str, str] = HEADERS) -> Any:
    return guard.plan(ApiStyle.GEMINI, orjson.dumps(doc), headers, path=STREAM)


@pytest.mark.parametrize("mode", list(Mode))
def test_the_state_snapshot_request_passes_in_every_mode_and_enforce_adds_the_facts(mode: Mode) -> None:
    guard = Guard(mode, model="llama-3-8b")
    first = plan(guard, body(history(6)))
    guard.finish(
        first, 200, ResponseFacts(Usage(input_tokens=500, cache_read_tokens=30_000), "gemini-2.5-pro")
    )
    request = snapshot_request(history(6))
    raw = orjson.dumps(request)
    snap = guard.plan(ApiStyle.GEMINI, raw, HEADERS, path=GENERATE)
    assert snap.harness is HarnessRequest.GEMINI_SNAPSHOT and snap.error is None
    assert snap.key == first.key  # its own system instruction, the same conversation
    if mode is not Mode.ENFORCE:
        assert snap.body is None  # byte for byte
        return
    sent = orjson.loads(snap.body or b"{}")
    assert sent["systemInstruction"] == request["systemInstruction"]
    assert sent["contents"][:-1] == request["contents"][:-1]
    parts = sent["contents"][-1]["parts"]
    assert parts[0] == request["contents"][-1]["parts"][0] and "KEEP IN THE SUMMARY" in parts[-1]["text"]
    assert TASK in parts[-1]["text"]


def test_one_session_across_the_compression_as_a_reset() -> None:
    guard = Guard(Mode.OBSERVE)
    first = plan(guard, body(history(4)))
    plan(guard, snapshot_request(history(4)))
    # after compressing, Gemini CLI starts from its snapshot in the first turn (the listing may change)
    after_contents = [
        {
            "role": "user",
            "parts": [{"text": CONTEXT + "hello.txt\n"}, {"text": "<state_snapshot>done 4</state_snapshot>"}],
        },
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
        {"role": "user", "parts": [{"text": "Again."}]},
    ]
    after = plan(guard, body(after_contents))
    assert after.key == first.key and after.reset
    other = plan(
        guard,
        body([{"role": "user", "parts": [{"text": CONTEXT.replace("linux", "darwin")}, {"text": TASK}]}]),
    )
    assert other.key != first.key  # another machine's (or project's) session
    status = guard.status()["sessions"]
    assert {s["session"]: s["compactions"] for s in status}[first.key] == 1


def test_enforce_clears_stale_function_responses_instead_of_restarting_gemini_cli() -> None:
    guard = Guard(Mode.ENFORCE)
    first = plan(guard, body(history(12)))
    guard.finish(
        first, 200, ResponseFacts(Usage(input_tokens=500, cache_read_tokens=1_040_000), "gemini-2.5-pro")
    )
    grown = body(history(13))
    later = plan(guard, grown)
    assert later.action in (Action.HALT, Action.RESTART, Action.TRUNCATE) and later.error is None
    sent = orjson.loads(later.body or b"{}")["contents"]
    assert len(sent) == len(grown["contents"])  # every turn kept
    outputs = [
        p["functionResponse"]["response"]["output"]
        for c in sent
        for p in c["parts"]
        if "functionResponse" in p
    ]
    # cleared on the request before (all but its latest result); this one is sent with that clearing in
    # place and its own new result whole (the next clearing waits for 8 new items)
    assert all(o.startswith(PLACEHOLDER_PREFIX) for o in outputs[:-2])
    assert not any(o.startswith(PLACEHOLDER_PREFIX) for o in outputs[-2:])
    models = [c for c in sent if c["role"] == "model"]
    assert models == [c for c in grown["contents"] if c["role"] == "model"]  # thought signatures kept
    assert_valid_gemini(sent)


def test_another_client_is_restarted_with_valid_contents() -> None:
    guard = Guard(Mode.ENFORCE)
    plain = {"user-agent": "google-genai-sdk/1.30.0 gl-python/3.12"}

    def without_context(turns: int) -> list[Any]:
        contents = history(turns)
        return [{"role": "user", "parts": [{"text": TASK}]}, *contents[1:]]

    first = plan(guard, body(without_context(12)), plain)
    guard.finish(
        first, 200, ResponseFacts(Usage(input_tokens=500, cache_read_tokens=1_040_000), "gemini-2.5-pro")
    )
    later = plan(guard, body(without_context(13)), plain)
    plans = [first, later]
    rewritten = [p for p in plans if p.report is not None]
    assert rewritten and all(p.report.action in (Action.RESTART, Action.TRUNCATE) for p in rewritten)
    for p in plans:
        assert p.error is None and p.body is not None
        sent = orjson.loads(p.body)
        assert_valid_gemini(sent["contents"])
        assert len(sent["contents"]) < len(without_context(12)) and sent["systemInstruction"] == SYSTEM


# ---------------------------------------------------------------- the real proxy


@pytest.mark.parametrize("workers", ["1", "2"])  # the guard beside the relay, or in a process of its own
def test_observe_is_byte_for_byte_and_the_api_key_is_never_logged_or_shown(workers: str) -> None:
    with FakeGemini() as fake:
        proxy = ProxyProcess(fake.url, "-v", "--log-bodies", "--workers", workers)
        try:
            raw = orjson.dumps(body([{"role": "user", "parts": [{"text": "STEP say hello"}]}]))
            url = f"{proxy.url}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key={SECRET}"
            answer = httpx.post(
                url,
                content=raw,
                headers={"x-goog-api-key": SECRET, "content-type": "application/json"},
                timeout=10,
            )
            assert answer.status_code == 200 and b"usageMetadata" in answer.content
            counted = httpx.post(
                f"{proxy.url}/v1beta/models/gemini-2.5-pro:countTokens?key={SECRET}", content=raw, timeout=10
            )
            assert counted.status_code == 200 and "totalTokens" in counted.json()
            status = proxy.status()
            metrics = httpx.get(proxy.url + "/metrics", timeout=5).text
        finally:
            log = proxy.stop()
    turn, count = fake.log
    assert turn.query == {"alt": ["sse"], "key": [SECRET]} and turn.headers["x-goog-api-key"] == SECRET
    assert json.loads(raw) == turn.body and count.path.endswith(":countTokens")
    (session,) = status["sessions"]  # type: ignore[misc]
    assert session["api"] == "gemini" and session["model"] == "gemini-2.5-pro"
    assert session["reported_fill"] == turn.usage["input"]
    assert 'ctxhealth_proxy_requests_total{api="gemini",mode="observe"} 1' in metrics
    for text in (log, json.dumps(status), metrics):
        assert SECRET not in text
    assert "streamGenerateContent" in log  # the -v line was written, without the query


def test_gemini_cli_side_calls_are_forwarded_untouched_and_make_no_session() -> None:
    guard = Guard(Mode.ENFORCE)
    router = body(
        [{"role": "user", "parts": [{"text": "earlier"}]}, {"role": "user", "parts": [{"text": TASK}]}],
        {"parts": [{"text": "You are a specialized Task Routing AI."}]},
    )
    side = guard.plan(ApiStyle.GEMINI, orjson.dumps(router), HEADERS, path=GENERATE)
    assert side.key is None and side.body is None and side.error is None
    assert guard.sessions == {} and guard.metrics.forwarded == 1
    # the same call from another client is its conversation: observed
    other = guard.plan(
        ApiStyle.GEMINI, orjson.dumps(router), {"user-agent": "google-genai-sdk/1.30.0"}, path=GENERATE
    )
    assert other.key is not None and len(guard.sessions) == 1
    # Gemini CLI's turns stream: observed
    turn = guard.plan(ApiStyle.GEMINI, orjson.dumps(body(history(1))), HEADERS, path=STREAM)
    assert turn.key is not None and len(guard.sessions) == 2


def test_a_function_response_restated_twice_on_resume_is_one_result() -> None:
    """Gemini CLI 0.61 sends a resumed history with each function response twice in its turn (seen with
    the real CLI through the proxy: a run of 4 calls and 1 failure read as 6 and 2 after ``--resume``).
    The repeat is no second result, as the chat reader reads it; two different answers both are."""

    def response(call_id: str, output: str) -> dict[str, Any]:
        return {
            "functionResponse": {"name": "run_shell_command", "id": call_id, "response": {"output": output}}
        }

    call = {"functionCall": {"name": "run_shell_command", "id": "c1", "args": {"command": "false"}}}
    failed = "Output: (empty)\nExit Code: 1"
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "Count."}]},
            {"role": "model", "parts": [call]},
            {"role": "user", "parts": [response("c1", failed), response("c1", failed)]},
        ]
    }
    adapter = GeminiContents()
    messages = adapter.to_messages(body, adapter.items(body), with_head=True)
    results = [b for m in messages for b in m.blocks if isinstance(b, ToolResult)]
    assert [r.tool_call_id for r in results] == ["c1"]
    body["contents"][2]["parts"][1] = response("c1", "Output: ok")
    messages = adapter.to_messages(body, adapter.items(body), with_head=True)
    assert len([b for m in messages for b in m.blocks if isinstance(b, ToolResult)]) == 2
