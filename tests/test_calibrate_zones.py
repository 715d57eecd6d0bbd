"""``ctxhealth calibrate --zones``: the fill where the user's own slips rise, per model family, is
written into the profile with the step counts behind it, moves the zone of that family's sessions,
and ``config show`` says it came from the user's sessions."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke
from ctxhealth.accounting.types import FillSource, Tier
from ctxhealth.insights.build import slip_rises
from ctxhealth.insights.steps import Composition, SessionSteps, Step
from ctxhealth.monitor import Monitor
from ctxhealth.policy.profile import Profile, SlipRise, load_profile


def _measured(family: str, rise_at: int | None, sessions: int = 20) -> list[SessionSteps]:
    """Sessions of 40 steps from 1K to 79K tokens; above ``rise_at`` every other step slips."""
    out = []
    for n in range(sessions):
        steps = tuple(
            Step(
                i,
                i,
                1_000 + 2_000 * i,
                0.0,
                FillSource.REPORTED,
                ("failed_call",)
                if rise_at is not None and 1_000 + 2_000 * i >= rise_at and (i + n) % 2
                else (),
            )
            for i in range(40)
        )
        out.append(
            SessionSteps(
                f"s{n}",
                None,
                "claude-code",
                family,
                family,
                "p",
                200_000,
                187_000,
                None,
                steps,
                Composition(),
                {},
                0,
            )
        )
    return out


def test_the_rise_is_found_per_family_with_its_step_counts() -> None:
    rises, rows = slip_rises(_measured("claude-sonnet-4", 40_000) + _measured("claude-opus-4", None))
    assert set(rises) == {"claude-sonnet-4"}
    rise = rises["claude-sonnet-4"]
    assert rise.at_tokens == 40_000
    assert rise.steps_below + rise.steps_above == 800 and rise.slips_below == 0 and rise.sessions == 20
    assert {r["family"]: r["at_tokens"] for r in rows} == {"claude-sonnet-4": 40_000, "claude-opus-4": None}


def test_a_rise_below_the_sweet_spot_moves_the_family_s_zone() -> None:
    rise = SlipRise(40_000, 600, 0, 200, 100, 20)
    profile = Profile(slip_rise={"claude-sonnet-4": rise})
    assert profile.thresholds(Tier.FULL, "claude-sonnet-4").sweet_spot == 40_000
    assert (
        profile.thresholds(Tier.FULL, "claude-opus-4").sweet_spot
        == Profile().thresholds(Tier.FULL).sweet_spot
    )
    assert Profile.from_dict(profile.to_dict()).slip_rise == profile.slip_rise
    from ctxhealth.model import Message, Role, TextBlock, Usage

    reply = Message(
        Role.ASSISTANT,
        (TextBlock("ok"),),
        response_id="r1",
        model="claude-sonnet-4-5",
        usage=Usage(input_tokens=50_000),
    )
    family = Monitor("claude-sonnet-4-5").info.family  # the registry's family of the model
    mine = Monitor("claude-sonnet-4-5", Profile(slip_rise={family: rise})).observe(reply)
    plain = Monitor("claude-sonnet-4-5", Profile()).observe(reply)
    assert (plain.zone.value, mine.zone.value) == ("green", "yellow")


def test_calibrate_zones_writes_the_profile_and_config_show_names_its_origin(
    mini_swe_data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "profile.json"
    result = invoke("calibrate", "--zones", "--json", str(mini_swe_data / "trajs"), "--out", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (row,) = doc["families"]
    profile = load_profile(out)
    assert row["at_tokens"] is not None  # these runs slip more past a fill (docs/insights.md)
    rise = profile.slip_rise[row["family"]]
    assert rise.at_tokens == row["at_tokens"]
    assert rise.steps_below + rise.steps_above == row["steps"] and rise.sessions == row["sessions"]
    shown = invoke("config", "show", env={"CTXHEALTH_PROFILE": str(out)})
    assert shown.exit_code == 0
    lines = [line for line in shown.output.splitlines() if "slip_rise" in line]
    assert all("your own sessions" in line for line in lines)
    assert len(lines) == len(profile.slip_rise) == 1
