"""The risk model: AUC against hand-computed examples, bootstrap, the logistic fit, nested CV, profiles,
and ``calibrate`` / ``validate`` end to end on our own small trajectories."""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ctxhealth.accounting.types import Tier
from ctxhealth.cli.main import cli
from ctxhealth.errors import ConfigError
from ctxhealth.risk import (
    RiskModel,
    bootstrap_auc_ci,
    cross_validate,
    fingerprint,
    fit_model,
    fit_weights,
    group_folds,
    read_labels,
    roc_auc,
    run_key,
    sigmoid,
    stratified_folds,
)
from ctxhealth.signals.profile import Profile, default_profile, load_profile


def test_auc_hand_computed() -> None:
    # positives 0.8, 0.4; negatives 0.5, 0.1: pairs (0.8>0.5) (0.8>0.1) (0.4<0.5) (0.4>0.1) -> 3/4
    assert roc_auc([0.8, 0.4, 0.5, 0.1], [1, 1, 0, 0]) == 0.75
    # a tie between a positive and a negative counts one half: (1 + 0.5) / 2
    assert roc_auc([0.9, 0.5, 0.5], [1, 1, 0]) == 0.75
    assert roc_auc([0.1, 0.2], [1, 0]) == 0.0
    assert math.isnan(roc_auc([0.1, 0.2], [1, 1]))


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 1)), min_size=2, max_size=40))
def test_auc_matches_pair_counting(pairs: list[tuple[int, int]]) -> None:
    scores = [float(s) for s, _ in pairs]
    labels = [y for _, y in pairs]
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return
    expected = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg) / (len(pos) * len(neg))
    assert abs(roc_auc(scores, labels) - expected) < 1e-12


def test_bootstrap_ci_is_seeded_and_brackets_the_estimate() -> None:
    rng = random.Random(3)
    labels = [i % 3 == 0 for i in range(90)]
    scores = [rng.random() + (0.6 if y else 0.0) for y in labels]
    y = [int(v) for v in labels]
    lo, hi = bootstrap_auc_ci(scores, y, rounds=300, seed=1)
    assert (lo, hi) == bootstrap_auc_ci(scores, y, rounds=300, seed=1)
    assert lo <= roc_auc(scores, y) <= hi and hi - lo < 0.3


def test_fit_weights_reaches_a_stationary_point() -> None:
    rng = random.Random(0)
    x = [[rng.gauss(0, 1), rng.gauss(0, 1)] for _ in range(200)]
    y = [int(rng.random() < sigmoid(1.5 * a - 0.5 * b + 0.3)) for a, b in x]
    l2 = 2.0
    w, b = fit_weights(x, y, l2=l2)
    # the penalised gradient vanishes at the optimum
    grad = [l2 * w[0], l2 * w[1], 0.0]
    for row, label in zip(x, y, strict=True):
        err = sigmoid(w[0] * row[0] + w[1] * row[1] + b) - label
        grad[0] += err * row[0]
        grad[1] += err * row[1]
        grad[2] += err
    assert max(abs(g) for g in grad) < 1e-6
    assert w[0] > 0.8 and w[1] < 0


def test_folds_are_stratified_and_groups_stay_together() -> None:
    labels = [1] * 10 + [0] * 30
    folds = stratified_folds(labels, 5, seed=0)
    for f in range(5):
        assert sum(1 for i, k in enumerate(folds) if k == f and labels[i]) == 2
    groups = [i // 4 for i in range(40)]
    g_labels = [1 if g % 4 == 0 else 0 for g in groups]
    gf = group_folds(g_labels, groups, 5, seed=0)
    for g in set(groups):
        assert len({gf[i] for i in range(40) if groups[i] == g}) == 1


def test_nested_cv_finds_the_informative_feature() -> None:
    rng = random.Random(5)
    rows, y = [], []
    for _ in range(160):
        signal = rng.gauss(0, 1)
        rows.append({"useful": signal, "noise": rng.gauss(0, 1)})
        y.append(int(rng.random() < sigmoid(2.5 * signal)))
    cv = cross_validate(rows, y, ["noise", "useful"], folds=4, seed=0, max_features=2, min_gain=0.01)
    assert cv.auc[1.0] > 0.8
    assert all(f[0] == "useful" for f in cv.fold_features)
    assert len(cv.scores[1.0]) == 160


def test_risk_model_round_trips_and_validates_shape() -> None:
    model = fit_model(
        [{"a": 1.0}, {"a": 3.0}, {"a": 2.0}, {"a": 5.0}], [0, 1, 0, 1], ["a"], log_features=frozenset({"a"})
    )
    again = RiskModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert again == model
    assert 0 < model.score({"a": 4.0}) < 1 and model.score({"a": 9.0}) > model.score({"a": 1.0})
    with pytest.raises(ConfigError):
        RiskModel(("a",), (1.0, 2.0), 0.0, (0.0,), (1.0,))


def test_profile_overrides_and_round_trip(tmp_path: Path) -> None:
    p = Profile().with_overrides({"cooldown": 5, "tiers": {"full": {"hard_limit": 150_000}}})
    assert (
        p.cooldown == 5
        and p.tiers[Tier.FULL].hard_limit == 150_000
        and p.tiers[Tier.FULL].sweet_spot == 80_000
    )
    path = tmp_path / "p.json"
    path.write_text(json.dumps(p.to_dict()))
    q = load_profile(path)
    assert q.cooldown == 5 and q.to_dict() == p.to_dict()
    with pytest.raises(ConfigError, match="unknown profile key"):
        Profile().with_overrides({"coooldown": 1})
    with pytest.raises(ConfigError):
        Profile().with_overrides({"cooldown": "soon"})


def test_default_profile_ships_a_fitted_model() -> None:
    p = default_profile()
    assert p.risk is not None and p.risk.features
    assert p.risk.meta["runs"] == 249 and "cv_auc" in p.risk.meta
    assert p.cooldown == Profile().cooldown  # thresholds stay the code's defaults


def test_default_profile_recognises_its_training_runs(mini_swe_data: Path) -> None:
    labels = read_labels(str(mini_swe_data / "labels.csv"))
    risk = default_profile().risk
    assert risk is not None
    trained = set(risk.meta["training_runs"])
    assert all(h in trained for h in fingerprint(list(labels)))


def test_read_labels(tmp_path: Path) -> None:
    f = tmp_path / "l.csv"
    f.write_text("file,resolved\ntrajs/a/a.traj.json,1\nb.traj.json,0\n")
    assert read_labels(str(f)) == {"a.traj.json": 0, "b.traj.json": 1}
    f.write_text("name,ok\nx,1\n")
    with pytest.raises(ConfigError):
        read_labels(str(f))
    assert run_key("a/b/c.json") == "c.json"


# ------------------------------------------------------------------ end to end on our own trajectories


def _trajectory(path: Path, turns: int, fails: int, prompt_step: int) -> None:
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>Fix the widget parser.</pr_description>"},
    ]
    for t in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: step {t} on the widget parser.\n\n```bash\npython check_{t}.py\n```",
                "extra": {
                    "response": {"usage": {"prompt_tokens": 1000 + prompt_step * t, "completion_tokens": 50}}
                },
            }
        )
        code = 1 if t < fails else 0
        messages.append(
            {"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\nok\n</output>"}
        )
    doc = {
        "info": {"exit_status": "Submitted", "submission": ""},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": path.stem,
    }
    path.write_text(json.dumps(doc))


@pytest.fixture
def labelled(tmp_path: Path) -> tuple[Path, Path]:
    rng = random.Random(7)
    runs = tmp_path / "runs"
    runs.mkdir()
    rows = []
    for i in range(24):
        failed = i % 3 == 0
        turns = rng.randint(12, 20) + (8 if failed else 0)
        _trajectory(runs / f"run{i}.traj.json", turns, rng.randint(0, 3), 3000 if failed else 1200)
        rows.append((f"run{i}.traj.json", 0 if failed else 1))
    labels = tmp_path / "labels.csv"
    with labels.open("w", newline="") as h:
        w = csv.writer(h)
        w.writerow(["file", "resolved"])
        w.writerows(rows)
    return runs, labels


def test_calibrate_then_validate_end_to_end(labelled: tuple[Path, Path], tmp_path: Path) -> None:
    runs, labels = labelled
    out = tmp_path / "profile.json"
    runner = CliRunner()
    r = runner.invoke(
        cli, ["calibrate", str(runs), "--labels", str(labels), "--out", str(out), "--folds", "3"]
    )
    assert r.exit_code == 0, r.output
    assert "cross-validated" in r.output
    profile = load_profile(out)
    assert profile.risk is not None and profile.risk.meta["runs"] == 24
    r = runner.invoke(
        cli, ["validate", str(runs), "--labels", str(labels), "--profile", str(out), "--folds", "3", "--json"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["trained_on_these_runs"] == 1.0
    assert doc["cross_validated_risk"] is not None
    assert set(doc["baselines"]) == {"peak fill", "number of turns", "tool error rate"}
    assert set(doc["risk"]) == {"0.25", "0.5", "0.75", "1"}
    # the two classes differ strongly in growth: the fitted score separates them
    assert doc["risk"]["1"]["auc"] > 0.9
    r = runner.invoke(
        cli, ["validate", str(runs), "--labels", str(labels), "--profile", str(out), "--folds", "3"]
    )
    assert "honest figure" in r.output and "baseline: peak fill" in r.output


def test_validate_without_matching_labels_is_an_input_error(
    labelled: tuple[Path, Path], tmp_path: Path
) -> None:
    runs, _ = labelled
    labels = tmp_path / "other.csv"
    labels.write_text("file,resolved\nnope.json,1\n")
    r = CliRunner().invoke(cli, ["validate", str(runs), "--labels", str(labels)])
    assert r.exit_code == 3
