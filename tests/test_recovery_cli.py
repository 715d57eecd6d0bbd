"""`ctxhealth recover` end to end: a hand-made transcript (always) and a real Claude Code session."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke
from ctxhealth.recovery.checkpoint import CHECKPOINT_HEADER
from test_writers import anthropic_errors, openai_errors

F67 = "-home-kenth56-vsla/f67ab274-e83b-41ac-ac85-77488d6b5c28.jsonl"


def transcript(tmp_path: Path) -> Path:
    messages = [
        {"role": "system", "content": "Be careful."},
        {"role": "user", "content": "Fix the failing test."},
    ]
    for i in range(6):
        messages.append(
            {
                "role": "assistant",
                "content": f"step {i}",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i} " * 50})
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": messages}))
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = invoke(["recover", *args])
    return result.exit_code, result.stdout, result.stderr


def test_recover_truncate_anthropic_body(tmp_path: Path) -> None:
    code, out, err = run(str(transcript(tmp_path)), "--strategy", "truncate", "--json")
    assert code == 0, err
    body = json.loads(out)
    assert set(body) == {"system", "messages"} and body["system"] == "Be careful."
    assert anthropic_errors(body) == []
    first = body["messages"][0]["content"]
    assert first[0]["text"] == "Fix the failing test." and first[1]["text"].startswith(CHECKPOINT_HEADER)
    assert "recover truncate:" in err and "dropped" in err


def test_recover_openai_and_markdown_and_budget(tmp_path: Path) -> None:
    path = str(transcript(tmp_path))
    code, out, _ = run(path, "--strategy", "restart", "--format", "openai", "--json")
    body = json.loads(out)
    assert code == 0 and set(body) == {"messages"} and openai_errors(body["messages"]) == []
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    code, out, _ = run(path, "--strategy", "restart", "--format", "markdown")
    assert code == 0 and out.startswith("## Checkpoint: Fix the failing test.")
    code, out, _ = run(path, "--strategy", "restart", "--format", "markdown", "--json", "--budget", "200")
    doc = json.loads(out)
    assert (
        doc["schema_version"] == 1 and doc["tokens"] <= 200 and doc["markdown"].startswith("## Checkpoint:")
    )
    code, _, err = run(path, "--strategy", "truncate", "--budget", "3")
    assert code == 2 and "raise --budget to at least" in err
    code, _, err = run(path, "--strategy", "clear", "--before-compaction", "1")
    assert code == 2 and "0 compaction" in err


def test_recover_real_session_json_shape(claude_code_data: Path) -> None:
    path = str(claude_code_data / F67)
    code, out, err = run(path, "--strategy", "truncate", "--before-compaction", "1", "--json")
    assert code == 0, err
    body = json.loads(out)
    assert set(body) <= {"system", "messages"}
    assert anthropic_errors(body) == []
    texts = [b["text"] for b in body["messages"][0]["content"] if b["type"] == "text"]
    with open(path, encoding="utf-8") as handle:
        first_request = json.loads(handle.readline())["message"]["content"]  # the raw first user line
    assert texts[0] == first_request and texts[1].startswith(CHECKPOINT_HEADER)
    assert len(body["messages"]) <= 1 + 4  # instruction+checkpoint, then at most 2 pairs
    code, out, err = run(
        path, "--strategy", "clear", "--before-compaction", "1", "--format", "openai", "--json"
    )
    assert code == 0, err
    assert openai_errors(json.loads(out)["messages"]) == []
    assert "cleared" in err
    code, out, _ = run(path, "--strategy", "reanchor", "--json")
    last = json.loads(out)["messages"][-1]["content"][-1]["text"]
    assert last.startswith("[RE-ANCHOR -- Context drift detected]")


TAU_RESULTS = Path(__file__).parent / "fixtures" / "agents" / "tau-bench-results.json"


def test_a_file_holding_several_sessions_names_them_and_one_is_picked_with_path_hash_id(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs.json"
    runs.write_bytes(TAU_RESULTS.read_bytes())
    for command in (["recover", "--strategy", "truncate"], ["retention"]):
        result = invoke([*command, str(runs)])
        assert result.exit_code == 3, result.output
        assert "task-7-trial-0, task-7-trial-1" in result.stderr
        assert f"{runs}#task-7-trial-0" in result.stderr  # how to name one
        assert "read_sessions" not in result.stderr  # a library name means nothing on the command line
    picked = invoke(["recover", "--strategy", "restart", f"{runs}#task-7-trial-1"])
    assert picked.exit_code == 0, picked.output
    assert json.loads(picked.stdout)["messages"]
    missing = invoke(["recover", "--strategy", "restart", f"{runs}#task-9-trial-0"])
    assert (
        missing.exit_code == 3 and "task-9-trial-0" in missing.stderr and "task-7-trial-0" in missing.stderr
    )
