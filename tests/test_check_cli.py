"""`ctxhealth check` end to end on transcripts written here: exit codes, JSON Lines, overrides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.report.check_report import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[1]
REQUIRED_KEYS = {
    "schema_version",
    "path",
    "format",
    "session_id",
    "model",
    "turns",
    "window",
    "fill",
    "compactions",
    "tool_calls",
    "tool_errors",
    "cost_usd",
    "warnings",
}


def chat(path: Path, prompt_tokens: list[int], model: str = "gpt-4o") -> Path:
    """An OpenAI Chat Completions transcript with one reported response per fill."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for n, fill in enumerate(prompt_tokens):
        messages.append({"role": "user", "content": f"step {n}"})
        messages.append(
            {
                "role": "assistant",
                "id": f"resp-{n}",
                "content": "ok",
                "usage": {"prompt_tokens": fill, "completion_tokens": 10},
            }
        )
    path.write_text(json.dumps({"model": model, "messages": messages}))
    return path


def test_readme_first_command_runs_on_the_shipped_example() -> None:
    exe = Path(sys.executable).with_name("ctxhealth")
    command = (
        [str(exe)] if exe.exists() else [sys.executable, "-c", "from ctxhealth.cli.main import main; main()"]
    )
    done = subprocess.run(
        [*command, "check", "examples/claude-code-session.jsonl"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode in (0, 1), done.stderr  # 1 would mean the example session is unhealthy
    assert done.stderr == ""
    assert "format       claude-code" in done.stdout
    assert "verdict      " + ("healthy" if done.returncode == 0 else "UNHEALTHY") in done.stdout


def test_json_lines_one_object_per_session_with_required_keys(tmp_path: Path) -> None:
    a = chat(tmp_path / "a.json", [1_000, 5_000])
    b = chat(tmp_path / "b.json", [2_000])
    result = invoke("check", "--json", str(a), str(b))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert set(first) >= REQUIRED_KEYS
    assert first["schema_version"] == SCHEMA_VERSION
    assert (first["turns"], first["fill"]["current"], first["fill"]["peak"]) == (2, 5_000, 5_000)
    assert (first["window"], first["format"], first["model"]) == (128_000, "openai-chat", "gpt-4o")
    # gpt-4o at 2.50 USD / Mtok in, 10 out: (6,000 * 2.5 + 20 * 10) / 1e6
    assert first["cost_usd"] == pytest.approx(0.0152)
    assert second["turns"] == 1


def test_exit_code_follows_the_policy_verdict(tmp_path: Path) -> None:
    usable = 128_000 - 16_384  # gpt-4o window minus its reserved output
    healthy = chat(tmp_path / "ok.json", [30_000])
    sick = chat(tmp_path / "sick.json", [10_000, int(0.9 * usable) + 1])
    ok = invoke("check", "--json", str(healthy))
    assert ok.exit_code == 0
    assert json.loads(ok.output)["action"] == "continue"
    result = invoke("check", str(healthy), str(sick))
    assert result.exit_code == 1
    assert "UNHEALTHY" in result.output
    # 90% of the usable window is the window's critical zone: the hard-limit branch restarts.
    sick_report = json.loads(invoke("check", "--json", str(sick)).output)
    assert (sick_report["action"], sick_report["healthy"]) == ("restart", False)
    # A session that was full but has since compacted back down is healthy now.
    recovered = chat(tmp_path / "rec.json", [int(0.95 * usable), 20_000])
    assert invoke("check", str(recovered)).exit_code == 0


def test_model_override_changes_window_and_prices(tmp_path: Path) -> None:
    path = chat(tmp_path / "a.json", [150_000])
    assert invoke("check", str(path)).exit_code == 1  # above gpt-4o's window
    result = invoke("check", "--json", "--model", "gpt-4.1", str(path))
    report = json.loads(result.output)
    assert (report["model"], report["window"]) == (
        "gpt-4.1",
        ModelRegistry.default().lookup("gpt-4.1").window,
    )
    assert report["window"] >= 1_000_000
    assert report["cost_usd"] == pytest.approx((150_000 * 2 + 10 * 8) / 1e6)
    # In a 1M window 150K tokens is far from capacity, and the full tier's zones scale with the
    # large window (sqrt(5) x at 1M: sweet spot to 179K): nothing to do.
    assert (report["zone"], report["action"]) == ("green", "continue")
    assert result.exit_code == 0


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert invoke("check").exit_code == 2
    assert invoke("check", "--format", "nonsense", str(tmp_path)).exit_code == 2
    assert invoke("check", "--no-such-flag", str(tmp_path)).exit_code == 2


def test_bad_input_exits_3_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\xff\x13garbage")
    for target in (tmp_path / "missing.jsonl", junk):
        result = invoke("check", str(target))
        assert result.exit_code == 3, result.output
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_strict_turns_warnings_into_exit_3(tmp_path: Path) -> None:
    source = (REPO / "examples" / "claude-code-session.jsonl").read_text()
    broken = tmp_path / "broken.jsonl"
    broken.write_text(source + '{"type": "assistant", "truncated\n')
    bad_line = source.count("\n") + 1
    lenient = invoke("check", "--json", str(broken))
    assert lenient.exit_code == 0
    assert any(f":{bad_line}:" in w for w in json.loads(lenient.output)["warnings"])
    text = invoke("check", str(broken))
    assert "warnings     1" in text.output
    strict = invoke("check", "--strict", str(broken))
    assert strict.exit_code == 3
    assert f"broken.jsonl:{bad_line}" in strict.output


def test_project_config_model_table_changes_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = chat(tmp_path / "a.json", [200_000], model="acme-coder-1")
    monkeypatch.chdir(tmp_path)
    unknown = json.loads(invoke("check", "--json", str(path)).output)
    assert (unknown["model_known"], unknown["tier"], unknown["window"]) == (False, "compact", 128_000)
    (tmp_path / ".ctxhealth.toml").write_text('[models."acme-coder"]\nwindow = 400000\ntier = "full"\n')
    assert unknown["action"] == "restart"  # 200K is past the compact tier's 50K hard limit
    result = invoke("check", "--json", str(path))
    report = json.loads(result.output)
    assert (report["model_known"], report["tier"], report["window"]) == (True, "full", 400_000)
    # full tier scaled for a 400K window (x sqrt 2: 113K / 170K / 255K): 200K is in the compact zone
    assert report["action"] == "truncate"


def test_bad_project_config_exits_3_with_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = chat(tmp_path / "a.json", [1_000])
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".ctxhealth.toml").write_text('model = "x"\n[models\nwindow = 3\n')
    result = invoke("check", str(path))
    assert result.exit_code == 3
    assert ".ctxhealth.toml:2" in result.output


def codex_expected(path: Path) -> dict[str, Any]:
    """Figures of a Codex rollout from its raw lines (token_count events, tool items)."""
    fills: list[int] = []
    cost = 0.0
    window = None
    last_total = None
    calls = errors = 0
    compactions: list[int] = []  # number of fills seen before each compaction
    for line in path.read_text().splitlines():
        row = json.loads(line)
        payload = row["payload"]
        kind = payload.get("type")
        if row["type"] == "compacted":
            compactions.append(len(fills))
        elif kind == "token_count" and payload.get("info"):
            info = payload["info"]
            window = info.get("model_context_window", window)
            if info["total_token_usage"] == last_total:
                continue
            last_total = info["total_token_usage"]
            last = info["last_token_usage"]
            fills.append(last["input_tokens"])
            cached = last["cached_input_tokens"]
            # gpt-5: 1.25 USD / Mtok input, 0.125 cached input, 10 output (reasoning included).
            cost += (
                (last["input_tokens"] - cached) * 1.25 + cached * 0.125 + last["output_tokens"] * 10
            ) / 1e6
        elif kind in ("function_call", "custom_tool_call"):
            calls += 1
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = payload["output"]
            if output.startswith("{"):
                code = json.loads(output).get("metadata", {}).get("exit_code", 0)
            else:
                code = int(output.split("\n")[0].removeprefix("Exit code: "))
            errors += code != 0
    return {
        "fills": fills,
        "window": window,
        "cost": cost,
        "calls": calls,
        "errors": errors,
        "compactions": [(fills[n - 1], fills[n]) for n in compactions],
    }


def test_codex_rollout_matches_raw_figures() -> None:
    path = REPO / "tests" / "fixtures" / "codex-rollout.jsonl"
    expected = codex_expected(path)
    result = invoke("check", "--json", str(path))
    assert result.exit_code == 0
    report = json.loads(result.output)
    assert report["format"] == "codex"
    assert report["turns"] == len(expected["fills"])
    assert (report["fill"]["current"], report["fill"]["peak"]) == (
        expected["fills"][-1],
        max(expected["fills"]),
    )
    assert report["window"] == report["usable_window"] == expected["window"]
    assert [(c["pre_tokens"], c["post_tokens"]) for c in report["compactions"]] == expected["compactions"]
    assert (report["tool_calls"], report["tool_errors"]) == (expected["calls"], expected["errors"])
    assert report["cost_usd"] == pytest.approx(expected["cost"], abs=1e-6)


def test_inline_profile_table_in_project_config_changes_the_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = chat(tmp_path / "a.json", [30_000])
    monkeypatch.chdir(tmp_path)
    assert json.loads(invoke("check", "--json", str(path)).output)["zone"] == "green"
    # Lower the full tier's thresholds inline: 30K tokens is now past the hard limit.
    (tmp_path / ".ctxhealth.toml").write_text(
        "[profile.tiers.full]\nsweet_spot = 5000\ncompact_zone = 10000\nhard_limit = 20000\n"
    )
    result = invoke("check", "--json", str(path))
    report = json.loads(result.output)
    assert report["zone"] != "green"
    assert (report["action"], result.exit_code) == ("restart", 1)
    (tmp_path / ".ctxhealth.toml").write_text("[profile]\nno_such_threshold = 1\n")
    bad = invoke("check", str(path))
    assert bad.exit_code == 3
    assert "no_such_threshold" in bad.output


def test_the_drift_reading_is_shown_as_on_task(tmp_path: Path) -> None:
    """The drift detector's value is the share of the request's words in the recent output (1.0 on
    task; it fires *below* the threshold): check names it ``on_task`` in ``--json`` (``drift`` kept
    beside it, deprecated) and ``on-task`` in the reason it gives."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Refactor the invoice parser so totals include shipping"},
    ]
    for n, fill in enumerate([20_000, 50_000, 55_000, 60_000]):
        messages.append(
            {
                "role": "assistant",
                "id": f"resp-{n}",
                # 4 x 552 characters: drift is read once a whole window (2,000) was written for the request
                "content": "Weather in Lisbon today is sunny with a light breeze from the ocean. " * 8,
                "usage": {"prompt_tokens": fill, "completion_tokens": 10},
            }
        )
        messages.append({"role": "user", "content": "go on"})
    path = tmp_path / "off_task.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages}))
    result = invoke("check", "--json", str(path))
    report = json.loads(result.stdout)
    signals = report["signals"]
    assert signals["on_task"] == signals["drift"] and signals["on_task"]["fired"]
    assert list(signals).index("on_task") == list(signals).index("drift") - 1
    assert report["action"] == "reanchor"
    (reason,) = report["reasons"]
    value = signals["on_task"]["value"]
    assert reason.startswith(f"task drift: on-task {value:.2f} < ") and "similarity" not in reason
    text = invoke("check", str(path)).stdout
    assert f"on-task {value:.2f}" in text
