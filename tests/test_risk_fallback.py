"""Risk that never does harm: a session of a format no risk model was fitted on is scored by peak
fill alone (ranked exactly as fill ranks it), and ``check --json`` says which model scored it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import invoke
from ctxhealth.evaluation.metrics import roc_auc
from ctxhealth.model import Format
from ctxhealth.monitor import Monitor
from ctxhealth.policy.profile import Profile, default_profile
from ctxhealth.risk.model import FILL_FALLBACK, RiskModel, fill_fallback
from ctxhealth.sources import read_session

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claude-code-session.jsonl"


def _model() -> RiskModel:
    return RiskModel(
        features=("peak_fill", "hedges"),
        weights=(0.5, -2.0),
        bias=-1.0,
        mean=(10.0, 1.0),
        scale=(1.0, 1.0),
        log_features=frozenset({"peak_fill", "hedges"}),
    )


def test_the_fallback_ranks_runs_exactly_as_peak_fill_does() -> None:
    runs = [{"peak_fill": 1_000.0 * (i % 17 + 1), "hedges": float(i % 5)} for i in range(60)]
    labels = [int((i * 7) % 3 == 0) for i in range(60)]
    fallback = fill_fallback(_model())
    assert roc_auc([fallback.score(r) for r in runs], labels) == roc_auc(
        [r["peak_fill"] for r in runs], labels
    )
    # the fitted model, with its negative hedge weight, ranks them differently
    assert roc_auc([_model().score(r) for r in runs], labels) != roc_auc(
        [r["peak_fill"] for r in runs], labels
    )
    # at the model's mean fill the fallback gives the model's probability at its mean (same scale)
    at_mean = {"peak_fill": float(2.718281828459045**10 - 1)}
    assert abs(fallback.linear(at_mean) - _model().bias) < 1e-9


def test_a_format_the_model_was_not_fitted_on_falls_back_to_fill() -> None:
    profile = Profile(risk=_model(), risk_formats=("mini-swe-agent",), risk_by_format={"tau-bench": _model()})
    assert profile.risk_for("mini-swe-agent") == (profile.risk, "mini-swe-agent")
    assert profile.risk_for("tau-bench")[1] == "tau-bench"
    model, name = profile.risk_for("claude-code")
    assert name == FILL_FALLBACK and model is not None and model.features == ("peak_fill",)
    # a profile that does not say what its model was fitted on scores every format with it
    assert Profile(risk=_model()).risk_for("claude-code")[1] == "profile"


def test_the_shipped_profile_names_what_its_model_was_fitted_on() -> None:
    profile = default_profile()
    assert profile.risk_formats == ("mini-swe-agent",)
    assert Profile.from_dict(profile.to_dict()).risk_formats == ("mini-swe-agent",)
    assert profile.risk_for("claude-code")[1] == FILL_FALLBACK


def _check(path: Path) -> dict[str, Any]:
    result = invoke(["check", "--json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout.splitlines()[0])


def test_check_says_which_model_scored_the_session() -> None:
    report = _check(EXAMPLE)
    assert report["risk_model"] == FILL_FALLBACK
    fallback = fill_fallback(default_profile().risk)
    assert report["risk"] == round(fallback.score({"peak_fill": float(report["fill"]["peak"])}), 4)


def test_a_restored_monitor_keeps_the_model_of_its_format() -> None:
    session = read_session(EXAMPLE)
    live = Monitor(profile=default_profile(), source_format=Format.CLAUDE_CODE)
    for message in session.messages[:10]:
        live.observe(message)
    resumed = Monitor.restore(live.snapshot(), profile=default_profile())
    assert live.risk_model == resumed.risk_model == FILL_FALLBACK
    after_live = live.observe(session.messages[10])
    after_resumed = resumed.observe(session.messages[10])
    assert after_resumed.risk == after_live.risk
