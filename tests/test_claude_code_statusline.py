"""The status line: payload parsing, fill from the payload or the transcript, zones, colour, fail-open."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.accounting.types import Tier
from ctxhealth.integrations.claude_code.assess import read_counters
from ctxhealth.integrations.claude_code.payloads import parse_status_payload
from ctxhealth.integrations.claude_code.statusline import format_status, render_status
from ctxhealth.integrations.claude_code.tail import resolve_thresholds
from ctxhealth.integrations.claude_code.tailstate import SessionCounters
from ctxhealth.policy.profile import default_profile
from ctxhealth.signals.pressure import Zone, tier_zone, window_zone

FIXTURES = Path(__file__).parent / "fixtures"


def _line(kind: str, n: int, **extra: object) -> str:
    base = {
        "type": kind,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "sessionId": "s1",
        "isSidechain": False,
    }
    return json.dumps({**base, **extra})


def _transcript(path: Path, fills: list[int]) -> Path:
    lines = [_line("user", 0, message={"role": "user", "content": "Fix the parser bug in src/parse.py"})]
    for i, fill in enumerate(fills, start=1):
        usage = {
            "input_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": fill - 10,
            "output_tokens": 5,
        }
        message = {
            "id": f"msg_{i}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "Looking at the parser in src/parse.py now."}],
            "usage": usage,
        }
        lines.append(_line("assistant", i, message=message))
    path.write_text("\n".join(lines) + "\n")
    return path


def _payload(name: str, transcript: Path) -> str:
    return (FIXTURES / name).read_text().replace("TRANSCRIPT", str(transcript))


def test_parse_status_payloads() -> None:
    current = parse_status_payload(_payload("claude-statusline-current.json", Path("/t.jsonl")))
    assert current.model_id == "claude-sonnet-4-5-20250929" and current.cost_usd == 1.2345
    assert current.context_window is not None
    assert current.context_window.size == 200_000 and current.context_window.used_tokens == 125_000
    legacy = parse_status_payload(_payload("claude-statusline-legacy.json", Path("/t.jsonl")))
    assert legacy.context_window is None and legacy.transcript_path == "/t.jsonl" and not legacy.warnings
    odd = parse_status_payload('{"model": "x", "cost": {"total_cost_usd": "free"}, "context_window": 3}')
    assert odd.model_id == "x" and odd.cost_usd is None and len(odd.warnings) == 2


def test_fill_from_payload_context_window(tmp_path: Path) -> None:
    transcript = _transcript(tmp_path / "t.jsonl", [20_000, 40_000])
    line = render_status(
        _payload("claude-statusline-current.json", transcript), home=str(tmp_path / "h"), color=False
    )
    assert line.startswith("● orange")  # 125K tokens: past the full tier's 120K compact zone
    assert "125.0K/" in line and "$1.23" in line and "\x1b[" not in line


def test_a_low_prompt_cache_hit_rate_shows_and_a_good_one_does_not(tmp_path: Path) -> None:
    transcript = _transcript(tmp_path / "t.jsonl", [20_000, 40_000])
    home = str(tmp_path / "h")
    good = _payload("claude-statusline-current.json", transcript)  # 120,000 of 125,000 from cache
    assert parse_status_payload(good).context_window.cache_read_tokens == 120_000  # type: ignore[union-attr]
    assert "cache" not in render_status(good, home=home, color=False)
    doc = json.loads(good)
    doc["context_window"]["current_usage"].update(
        input_tokens=100_000, cache_creation_input_tokens=20_000, cache_read_input_tokens=5_000
    )
    line = render_status(json.dumps(doc), home=home, color=False)
    assert "cache 4%" in line  # 5,000 / 125,000
    # a prompt too short to be cached says nothing
    doc["context_window"]["current_usage"].update(
        input_tokens=900, cache_creation_input_tokens=0, cache_read_input_tokens=0
    )
    assert "cache" not in render_status(json.dumps(doc), home=home, color=False)


def test_fill_from_transcript_for_legacy_payload(tmp_path: Path) -> None:
    transcript = _transcript(tmp_path / "t.jsonl", [20_000, 50_000])
    home = str(tmp_path / "h")
    line = render_status(_payload("claude-statusline-legacy.json", transcript), home=home, color=False)
    assert line.startswith("● green") and "50.0K/" in line and "$0.42" in line
    # The transcript grows: the next refresh reads only the new tail and sees the new fill.
    with transcript.open("a") as handle:
        usage = {"input_tokens": 10, "cache_read_input_tokens": 149_990, "output_tokens": 5}
        message = {
            "id": "msg_9",
            "role": "assistant",
            "model": "claude-opus-4-20250514",
            "content": [],
            "usage": usage,
        }
        handle.write(_line("assistant", 9, message=message) + "\n")
    line = render_status(_payload("claude-statusline-legacy.json", transcript), home=home, color=True)
    assert "150.0K/" in line and "\x1b[" in line and "orange" in line


def test_statusline_process_respects_no_color_and_fails_open(tmp_path: Path) -> None:
    transcript = _transcript(tmp_path / "t.jsonl", [10_000])
    env = {**os.environ, "CTXHEALTH_HOME": str(tmp_path / "h"), "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "ctxhealth.cli.statusline"]
    ok = subprocess.run(
        cmd,
        input=_payload("claude-statusline-legacy.json", transcript).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (
        ok.returncode == 0
        and ok.stderr == b""
        and b"\x1b[" not in ok.stdout
        and ok.stdout.startswith("● green".encode())
    )
    bad = subprocess.run(cmd, input=b"garbage", capture_output=True, env=env, timeout=60, check=False)
    assert bad.returncode == 0 and bad.stdout.strip() == b"ctxhealth: n/a"
    assert len(bad.stderr.decode().strip().splitlines()) == 1


def test_then_chains_the_users_own_status_line(tmp_path: Path) -> None:
    transcript = _transcript(tmp_path / "t.jsonl", [10_000])
    env = {**os.environ, "CTXHEALTH_HOME": str(tmp_path / "h")}
    cmd = [sys.executable, "-m", "ctxhealth.cli.statusline", "--no-color", "--then", "echo mine"]
    done = subprocess.run(
        cmd,
        input=_payload("claude-statusline-legacy.json", transcript).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.decode().startswith("mine │ ● green")


@settings(max_examples=300, deadline=None)
@given(fill=st.integers(min_value=0, max_value=2_000_000), tier=st.sampled_from(list(Tier)))
def test_status_zone_is_the_signal_layers_zone(fill: int, tier: Tier) -> None:
    profile = default_profile()
    counters = SessionCounters("/t.jsonl")
    counters.model = {
        "full": "claude-opus-4-20250514",
        "compact": "claude-3-5-haiku-20241022",
        "local": "llama-3-8b",
    }[tier.value]
    th = resolve_thresholds(counters)
    real_th = profile.zones_for(Tier(th["tier"]), th["window"], th["usable"])
    expected = max(tier_zone(fill, real_th), window_zone(fill / th["usable"], profile), key=lambda z: z.level)
    reading = read_counters(counters, fill=fill)
    assert reading.zone is expected
    # indicators that raised the monitor's zone raise the status line's too
    counters.assessment = {"zone": "yellow", "base_zone": "green", "action": "warn"}
    assert read_counters(counters, fill=fill).zone is expected.raised()


def _monitor_zone(model: str, window: int, fill: int) -> Zone:
    """The zone the session's own monitor gives a response of ``fill`` tokens under a host that states
    ``window`` (public API only: a Monitor with the session's ModelInfo, observing one response)."""
    from ctxhealth.accounting.registry import ModelRegistry
    from ctxhealth.integrations.claude_code.monitoring import claude_code_profile, session_info
    from ctxhealth.model import Message, Role
    from ctxhealth.monitor import Monitor

    info = session_info(model, window, ModelRegistry.default())
    monitor = Monitor(model, claude_code_profile(), info=info)
    return monitor.observe(Message(role=Role.ASSISTANT, blocks=(), model=model), fill=fill).base_zone


def test_the_zone_for_the_hosts_window_is_the_monitors(tmp_path: Path) -> None:
    # The hooks cached the thresholds of the registry's 200K window; the host then states a 1M
    # window (a 1M variant): the line's zone for its fill is the monitor's for that window (the
    # profile's zones for 1M), not the 200K zones stretched over it (which said red at 300K).
    model = "claude-sonnet-4-5-20250929"
    transcript = _transcript(tmp_path / "t.jsonl", [20_000])
    home = tmp_path / "h"
    from ctxhealth.integrations.claude_code.tailstate import save_counters

    counters = SessionCounters(str(transcript))
    counters.model, counters.hooks_seen = model, True
    resolve_thresholds(counters)
    counters.offset = transcript.stat().st_size  # nothing new to read: the cached counters draw it
    save_counters(str(home), counters)
    doc = json.loads(_payload("claude-statusline-current.json", transcript))
    doc["context_window"]["context_window_size"] = 1_000_000
    for fill in (150_000, 300_000, 600_000):
        doc["context_window"]["current_usage"].update(
            input_tokens=fill - 120_000 - 4988,
            cache_creation_input_tokens=4988,
            cache_read_input_tokens=120_000,
        )
        line = render_status(json.dumps(doc), home=str(home), color=False)
        assert line.startswith(f"● {_monitor_zone(model, 1_000_000, fill).value} "), (fill, line)
    assert _monitor_zone(model, 1_000_000, 300_000) is Zone.ORANGE  # (the stretched 200K zones: red)


@settings(max_examples=60, deadline=None)
@given(
    fill=st.integers(min_value=1, max_value=1_500_000),
    window=st.sampled_from([200_000, 400_000, 1_000_000]),
)
def test_status_zone_is_the_monitors_for_any_fill_and_window(fill: int, window: int) -> None:
    model = "claude-sonnet-4-5-20250929"
    counters = SessionCounters("/t.jsonl")
    counters.model = model
    resolve_thresholds(counters)  # the registry's window, as the hooks cache it
    assert read_counters(counters, fill=fill, window=window).zone is _monitor_zone(model, window, fill)


def test_the_line_says_on_task_higher_is_better(tmp_path: Path) -> None:
    transcript = _transcript(tmp_path / "t.jsonl", [20_000, 40_000])
    counters = SessionCounters(str(transcript))
    counters.drift = 0.36
    line = format_status(
        parse_status_payload(_payload("claude-statusline-current.json", transcript)), counters, color=False
    )
    assert "on-task 0.36" in line and "drift" not in line


def test_status_payload_2_1_fields(tmp_path: Path) -> None:
    # Claude Code 2.1 states the session's summed input and whether the prompt is past 200K (priced
    # at the long-context rate): both are read, and the second is shown.
    transcript = _transcript(tmp_path / "t.jsonl", [20_000, 40_000])
    doc = json.loads(_payload("claude-statusline-current.json", transcript))
    doc["context_window"]["total_input_tokens"] = 912_345
    doc["exceeds_200k_tokens"] = True
    parsed = parse_status_payload(json.dumps(doc)).context_window
    assert parsed is not None and parsed.total_input_tokens == 912_345 and parsed.exceeds_200k
    assert "200K+" in render_status(json.dumps(doc), home=str(tmp_path / "h"), color=False)
    doc["exceeds_200k_tokens"] = False
    assert "200K+" not in render_status(json.dumps(doc), home=str(tmp_path / "h"), color=False)


def test_right_after_compact_a_zero_percent_payload_is_no_fill(tmp_path: Path) -> None:
    # Right after /compact Claude Code's payload has no current_usage yet and says used_percentage 0:
    # the line showed a fill of 0; it shows the transcript's fill (what the compaction left) instead.
    transcript = _transcript(tmp_path / "t.jsonl", [20_000, 40_000])
    doc = json.loads(_payload("claude-statusline-current.json", transcript))
    doc["context_window"].pop("current_usage", None)
    doc["context_window"]["used_percentage"] = 0
    line = render_status(json.dumps(doc), home=str(tmp_path / "h"), color=False)
    assert "40.0K/" in line and " 0/" not in line, line


def test_right_after_compact_a_usage_of_zeros_is_no_fill(tmp_path: Path) -> None:
    # What 2.1.332 really pipes right after /compact (seen in the conformance suite): a current_usage of
    # zeros, 0%. No prompt is empty: the line shows the transcript's fill, not "0/".
    transcript = _transcript(tmp_path / "t.jsonl", [20_000, 40_000])
    doc = json.loads(_payload("claude-statusline-current.json", transcript))
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        doc["context_window"]["current_usage"][key] = 0
    doc["context_window"]["used_percentage"] = 0
    line = render_status(json.dumps(doc), home=str(tmp_path / "h"), color=False)
    assert "40.0K/" in line and " 0/" not in line, line
