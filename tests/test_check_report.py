"""The check report dictionary: keys, merge point for later assessments, text rendering, robustness."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import invoke
from ctxhealth.accounting.fill import account_session
from ctxhealth.model import CompactionSummary, Format, Message, ReadWarning, Role, Session, TextBlock, Usage
from ctxhealth.policy.profile import Profile
from ctxhealth.report.check_report import (
    WARNINGS_SHOWN,
    build_check_report,
    fill_is_unhealthy,
    render_check_text,
)
from ctxhealth.signals.zones import Zone, window_zone_of


def sample(fills: list[int], warnings: int = 0) -> Session:
    messages: list[Message] = []
    for n, fill in enumerate(fills):
        messages.append(Message(Role.USER, (TextBlock(f"q{n}"),)))
        if n == 1:
            messages.append(
                Message(Role.USER, (CompactionSummary("summary", trigger="auto", pre_tokens=99_000),))
            )
        messages.append(
            Message(
                Role.ASSISTANT,
                (TextBlock("a"),),
                response_id=f"r{n}",
                model="claude-opus-4-5-20251101",
                usage=Usage(input_tokens=10, cache_read_tokens=fill - 10, output_tokens=100),
            )
        )
    return Session(
        path="s.jsonl",
        format=Format.CLAUDE_CODE,
        messages=tuple(messages),
        session_id="abc",
        model="claude-opus-4-5-20251101",
        warnings=tuple(ReadWarning("s.jsonl", i + 1, "bad line") for i in range(warnings)),
    )


def test_report_keys_and_values() -> None:
    session = sample([90_000, 30_000, 40_000], warnings=5)
    report = build_check_report(session, account_session(session))
    assert report["turns"] == 3
    assert report["fill"] == {
        "current": 40_000,
        "peak": 90_000,
        "source": "reported",
        "current_pct": 20.0,
        "peak_pct": 45.0,
    }
    assert report["compactions"] == [
        {"index": 0, "message_index": 3, "pre_tokens": 99_000, "post_tokens": 30_000, "trigger": "auto"}
    ]
    assert report["warnings"][0] == "s.jsonl:1: bad line"
    assert report["healthy"] is True
    json.dumps(report)  # plain JSON types only


def test_assessment_is_merged_last_and_can_decide_health() -> None:
    session = sample([10_000])
    account = account_session(session)
    report = build_check_report(session, account, {"zone": "red", "action": "restart", "healthy": False})
    assert (report["zone"], report["action"], report["healthy"]) == ("red", "restart", False)
    text = render_check_text(report)
    assert "zone         red" in text
    assert "UNHEALTHY" in text


def test_fill_rule_boundary() -> None:
    assert not fill_is_unhealthy(89, 100)
    assert fill_is_unhealthy(90, 100)


def test_fill_rule_is_the_profiles_red_window_zone() -> None:
    # Without an assessment, "unhealthy" is where the Monitor's window zone turns red: one fact, read
    # from the Profile's defaults, not a constant of the report's own.
    p = Profile()
    for pct in range(50, 100):
        zone = window_zone_of(
            pct / 100, p.window_yellow, p.window_orange, p.window_critical, p.window_autocompact
        )
        assert fill_is_unhealthy(pct, 100) is (zone.level >= Zone.RED.level), pct


def test_text_lists_first_warnings_and_counts_the_rest() -> None:
    session = sample([10_000, 20_000], warnings=WARNINGS_SHOWN + 4)
    text = render_check_text(build_check_report(session, account_session(session)))
    assert f"warnings     {WARNINGS_SHOWN + 4}" in text
    assert "s.jsonl:1: bad line" in text
    assert f"s.jsonl:{WARNINGS_SHOWN + 1}: bad line" not in text
    assert "and 4 more" in text
    assert "99,000 → 20,000 (auto)" in text
    # Opus 4.5: 5 USD / Mtok input, 0.50 cache read, 25 output.
    cost = (2 * 10 * 5 + (9_990 + 19_990) * 0.5 + 2 * 100 * 25) / 1e6
    assert f"${cost:,.2f}" in text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400), st.sampled_from([".jsonl", ".json", ".gz", ""]))
def test_check_never_crashes_on_junk(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"junk{suffix}"
    path.write_bytes(data)
    result = invoke(["check", "--json", str(path)])
    assert result.exit_code in (0, 1, 3), result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    if result.exit_code in (0, 1):
        assert all("schema_version" in json.loads(line) for line in result.output.splitlines())
