"""``ctxhealth doctor`` and ``ctxhealth watch``: what they see, on settings we write and a transcript."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import invoke
from ctxhealth.integrations.claude_code.assess import tool_counts
from ctxhealth.integrations.claude_code.doctor import CheckStatus, diagnose
from ctxhealth.integrations.claude_code.install import apply_plan, plan_install
from ctxhealth.integrations.claude_code.watch import SessionWatch, find_newest_session, render_frame

FIXTURES = Path(__file__).parent / "fixtures"


def _transcript(path: Path, n_turns: int, *, fail_every: int = 0) -> Path:
    lines = [
        {
            "type": "user",
            "uuid": "u0",
            "sessionId": "s1",
            "message": {"role": "user", "content": "Fix the parser"},
        }
    ]
    for i in range(1, n_turns + 1):
        usage = {"input_tokens": 5, "cache_read_input_tokens": 1000 * i, "output_tokens": 3}
        call = {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"make {i}"}}
        lines.append(
            {
                "type": "assistant",
                "uuid": f"a{i}",
                "sessionId": "s1",
                "message": {
                    "id": f"m{i}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [call],
                    "usage": usage,
                },
            }
        )
        failed = bool(fail_every) and i % fail_every == 0
        result = {
            "type": "tool_result",
            "tool_use_id": f"t{i}",
            "content": "boom" if failed else "ok",
            "is_error": failed,
        }
        lines.append(
            {
                "type": "user",
                "uuid": f"r{i}",
                "sessionId": "s1",
                "message": {"role": "user", "content": [result]},
            }
        )
    with path.open("a") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    return path


def test_doctor_reports_install_state(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    claude.mkdir()
    shutil.copy(FIXTURES / "claude-settings-with-hooks.json", claude / "settings.json")
    before = diagnose(
        user_settings=claude,
        project_settings=tmp_path / "p" / ".claude",
        home=tmp_path / "h",
        projects=claude / "projects",
    )
    hooks = next(c for c in before if c.name == "user hooks")
    assert hooks.status is CheckStatus.INFO and "install" in hooks.fix
    apply_plan(plan_install(claude, python="/no/such/python"))
    after = diagnose(
        user_settings=claude,
        project_settings=tmp_path / "p" / ".claude",
        home=tmp_path / "h",
        projects=claude / "projects",
    )
    assert next(c for c in after if c.name == "user hooks").status is CheckStatus.OK
    assert next(c for c in after if c.name == "user interpreter").status is CheckStatus.FAIL


def test_doctor_cli_json_and_exit_code(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    (claude / "projects" / "p").mkdir(parents=True)
    _transcript(claude / "projects" / "p" / "s1.jsonl", 3)
    result = invoke(["doctor", "--claude-dir", str(claude), "--project", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["ok"] and any(c["name"] == "newest session" for c in doc["checks"])


def test_watch_follows_a_growing_transcript(tmp_path: Path) -> None:
    path = _transcript(tmp_path / "s1.jsonl", 4, fail_every=2)
    watch = SessionWatch(path)
    assert watch.poll() > 0
    assert (
        watch.counters.turns == 4
        and tool_counts(watch.counters).failed == 2
        and list(watch.fills)[-1] == 4005
    )
    assert watch.poll() == 0  # nothing new
    with path.open("a") as handle:
        usage = {"input_tokens": 5, "cache_read_input_tokens": 9000, "output_tokens": 3}
        handle.write(
            json.dumps(
                {
                    "type": "assistant",
                    "uuid": "a9",
                    "sessionId": "s1",
                    "message": {
                        "id": "m9",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "done"}],
                        "usage": usage,
                    },
                }
            )
            + "\n"
        )
    assert watch.poll() == 1 and watch.counters.fill == 9005
    frame = render_frame(watch, width=100)
    assert "fill 9,005" in frame and "tool calls   4 (2 failed" in frame and "tool failed: boom" in frame
    assert watch.assessment is not None and watch.assessment.fill == 9005
    assert f"assessment: zone {watch.assessment.zone.value}" in frame


def test_find_newest_and_watch_cli_once(tmp_path: Path) -> None:
    projects = tmp_path / ".claude" / "projects" / "p"
    projects.mkdir(parents=True)
    _transcript(projects / "old.jsonl", 1)
    newest = _transcript(projects / "new.jsonl", 2)
    import os

    os.utime(projects / "old.jsonl", (1, 1))
    assert find_newest_session(tmp_path / ".claude" / "projects") == newest
    result = invoke(["watch", "--claude-dir", str(tmp_path / ".claude"), "--once"])
    assert result.exit_code == 0, result.output
    assert "new.jsonl" in result.output and "turns 2" in result.output
    missing = invoke(["watch", "nope", "--claude-dir", str(tmp_path / ".claude"), "--once"])
    assert missing.exit_code == 3
