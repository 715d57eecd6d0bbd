"""The risk model: AUC against hand-computed examples, bootstrap, the logistic fit, nested CV, profiles,
and ``calibrate`` / ``validate`` end to end on our own small trajectories."""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import invoke
from ctxhealth.accounting.types import Tier
from ctxhealth.errors import ConfigError
from ctxhealth.evaluation import (
    BASELINES,
    CANDIDATE_FEATURES,
    LOG_FEATURES,
    PROCEDURE,
    LabelledRun,
    Procedure,
    bootstrap_auc_ci,
    bootstrap_auc_difference_ci,
    cross_validate,
    cross_validate_runs,
    fingerprint,
    fit_anchored,
    fit_model,
    fit_risk,
    fit_screened,
    fit_weights,
    group_folds,
    point_strata,
    procedure_of,
    read_labels,
    roc_auc,
    run_key,
    screen_features,
    select_alpha,
    select_features,
    select_screening,
    select_threshold,
    stratified_auc,
    stratified_folds,
    training_rows,
)
from ctxhealth.model import Message, Role, TextBlock, Usage
from ctxhealth.monitor import FEATURE_NAMES, Monitor
from ctxhealth.policy.profile import Profile, default_profile, load_profile
from ctxhealth.risk import RiskModel, sigmoid
from ctxhealth.signals.hedging import HEDGE_WORDS, count_hedges


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


def test_paired_difference_ci_is_seeded_and_tells_a_better_score_from_a_copy() -> None:
    rng = random.Random(5)
    y = [int(i % 3 == 0) for i in range(120)]
    good = [rng.random() + (0.8 if v else 0.0) for v in y]
    weak = [g + rng.gauss(0.0, 1.0) for g in good]
    lo, hi = bootstrap_auc_difference_ci(good, weak, y, rounds=300, seed=2)
    assert (lo, hi) == bootstrap_auc_difference_ci(good, weak, y, rounds=300, seed=2)
    assert 0.0 < lo <= roc_auc(good, y) - roc_auc(weak, y) <= hi
    # a score against itself: exactly zero in every resample
    assert bootstrap_auc_difference_ci(good, good, y, rounds=50) == (0.0, 0.0)
    # paired is narrower than the two separate intervals side by side
    a_lo, a_hi = bootstrap_auc_ci(good, y, rounds=300, seed=2)
    b_lo, b_hi = bootstrap_auc_ci(weak, y, rounds=300, seed=2)
    assert hi - lo < (a_hi - b_lo) - (a_lo - b_hi)
    with pytest.raises(ValueError):
        bootstrap_auc_difference_ci(good, weak[:-1], y)


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


def test_stratified_auc_ignores_shifts_between_points() -> None:
    # within each point the score ranks perfectly; point 1 is shifted up by a constant
    scores = [0.1, 0.2, 0.3, 0.4, 10.1, 10.2, 10.3, 10.4]
    labels = [0, 0, 1, 1, 0, 0, 1, 1]
    strata = [0, 0, 0, 0, 1, 1, 1, 1]
    assert stratified_auc(scores, labels, strata) == 1.0
    assert roc_auc(scores, labels) < 1.0
    assert stratified_auc(scores, labels, None) == roc_auc(scores, labels)
    assert point_strata([4, 4, 4, 7, 7, 7]) == [0, 1, 2, 0, 1, 2] and point_strata(None) is None


def _synthetic(n: int, seed: int) -> tuple[list[dict[str, float]], list[int]]:
    rng = random.Random(seed)
    rows, y = [], []
    for _ in range(n):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        rows.append({"up": a, "down": -b, "noise": rng.gauss(0, 1)})
        y.append(int(rng.random() < sigmoid(1.5 * a + 1.5 * b)))
    return rows, y


def test_screening_keeps_informative_features_with_their_sign() -> None:
    rows, y = _synthetic(300, 1)
    kept = dict(screen_features(rows, y, ["noise", "up", "down"], 0.1))
    assert kept == {"up": 1, "down": -1}
    # nothing clears an impossible threshold: the single strongest feature is kept
    assert len(screen_features(rows, y, ["noise", "up", "down"], 0.6)) == 1
    assert screen_features(rows, y, ["noise", "up", "down"], 0.6, fallback=False) == []
    model = fit_screened(rows, y, ["noise", "up", "down"], threshold=0.1)
    assert model.features == ("up", "down")
    assert model.weights[0] > 0 > model.weights[1] and abs(model.weights[0] + model.weights[1]) < 1e-12
    assert model.meta["procedure"] == "screened"
    # the calibrated score separates the classes on the data it was fitted on
    assert roc_auc([model.score(r) for r in rows], y) > 0.8
    assert RiskModel.from_dict(json.loads(json.dumps(model.to_dict()))) == model


def test_nested_cv_of_the_screened_procedure_chooses_inside_folds() -> None:
    rows, y = _synthetic(200, 2)
    cv = cross_validate(
        rows, y, ["noise", "up", "down"], folds=4, seed=0, procedure=Procedure.SCREENED, grid=(0.05, 0.15)
    )
    assert cv.auc[1.0] > 0.8 and len(cv.fold_thresholds) == 4
    assert all("up" in f and "down" in f and "noise" not in f for f in cv.fold_features)
    fixed = cross_validate(
        rows, y, ["noise", "up", "down"], folds=4, seed=0, procedure=Procedure.SCREENED, select=False
    )
    assert fixed.fold_thresholds == (0.05,) * 4


def _anchored_data(n: int, seed: int, other_weight: float) -> tuple[list[dict[str, float]], list[int]]:
    """``fill`` (positive, logged) carries a weak signal; ``other`` carries ``other_weight``."""
    rng = random.Random(seed)
    rows, y = [], []
    for _ in range(n):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        rows.append({"fill": math.exp(8 + a), "other": -b, "noise": rng.gauss(0, 1)})
        y.append(int(rng.random() < sigmoid(0.7 * a + other_weight * b)))
    return rows, y


def test_anchored_model_keeps_the_anchor_and_weighs_the_rest_by_alpha() -> None:
    rows, y = _anchored_data(300, 11, 2.0)
    logs = frozenset({"fill"})
    alone = fit_anchored(rows, y, ["fill", "other", "noise"], alpha=0.0, anchor="fill", log_features=logs)
    assert alone.features == ("fill",) and alone.meta["procedure"] == "anchored"
    fill_auc = roc_auc([r["fill"] for r in rows], y)
    assert roc_auc([alone.score(r) for r in rows], y) == pytest.approx(fill_auc)
    model = fit_anchored(
        rows, y, ["fill", "other", "noise"], alpha=2.0, anchor="fill", threshold=0.1, log_features=logs
    )
    assert model.features == ("fill", "other") and model.meta["alpha"] == 2.0
    # the other feature enters with its sign, at alpha times the anchor's standardised weight
    assert model.weights[0] > 0 > model.weights[1]
    assert abs(model.weights[1]) == pytest.approx(2.0 * model.weights[0])
    assert roc_auc([model.score(r) for r in rows], y) > fill_auc + 0.1
    # no other feature clears the threshold: the anchor alone, whatever alpha
    assert fit_anchored(rows, y, ["fill", "noise"], alpha=2.0, anchor="fill", threshold=0.4).features == (
        "fill",
    )
    assert RiskModel.from_dict(json.loads(json.dumps(model.to_dict()))) == model


def test_alpha_is_chosen_by_inner_cv_and_inside_outer_folds() -> None:
    names = ["fill", "other", "noise"]
    logs = frozenset({"fill"})
    strong = _anchored_data(240, 12, 2.5)
    assert select_alpha(*strong, names, anchor="fill", log_features=logs, grid=(0.0, 0.5, 2.0)) == 2.0
    useless = _anchored_data(240, 13, 0.0)
    assert select_alpha(*useless, names, anchor="fill", log_features=logs, grid=(0.0, 2.0)) == 0.0
    rows, y = strong
    cv = cross_validate(
        [{"peak_fill": r["fill"], "other": r["other"]} for r in rows],
        y,
        ["peak_fill", "other"],
        log_features=frozenset({"peak_fill"}),
        folds=4,
        procedure=Procedure.ANCHORED,
        threshold=0.03,
        grid=(0.0, 2.0),
    )
    assert cv.fold_alphas == (2.0,) * 4 and cv.auc[1.0] > 0.8
    fixed = cross_validate(
        [{"peak_fill": r["fill"], "other": r["other"]} for r in rows],
        y,
        ["peak_fill", "other"],
        folds=4,
        procedure=Procedure.ANCHORED,
        select=False,
        alpha=0.0,
    )
    assert fixed.fold_alphas == (0.0,) * 4 and all(f == ("peak_fill",) for f in fixed.fold_features)


def test_phased_model_damps_all_but_the_anchor_over_the_first_turns() -> None:
    model = RiskModel(
        features=("fill", "x", "turns"),
        weights=(1.0, 2.0, 0.0),
        bias=-1.0,
        mean=(0.0, 0.0, 0.0),
        scale=(1.0, 1.0, 1.0),
        phase_in=10.0,
        anchor="fill",
    )
    assert model.linear({"fill": 1.0, "x": 1.0, "turns": 5.0}) == pytest.approx(-1.0 + 1.0 + 0.5 * 2.0)
    assert model.linear({"fill": 1.0, "x": 1.0, "turns": 40.0}) == pytest.approx(2.0)
    assert model.linear({"fill": 1.0, "x": 1.0}) == pytest.approx(2.0)  # turns unknown: fully in
    assert model.contributions({"fill": 1.0, "x": 1.0, "turns": 0.0}) == {"fill": 1.0, "x": 0.0, "turns": 0.0}
    assert RiskModel.from_dict(json.loads(json.dumps(model.to_dict()))) == model
    plain = RiskModel(("x",), (1.0,), 0.0, (0.0,), (1.0,))
    assert "phase_in" not in plain.to_dict() and RiskModel.from_dict(plain.to_dict()).phase_in == 0.0
    with pytest.raises(ConfigError):
        RiskModel(("fill", "x"), (1.0, 1.0), 0.0, (0.0, 0.0), (1.0, 1.0), phase_in=5.0, anchor="fill")


def _phased_data(n: int, seed: int) -> tuple[list[dict[str, float]], list[int], list[int], list[int]]:
    """Each run gives an early row (3 turns, ``x`` is noise) and a late row (40 turns, ``x`` tells)."""
    rng = random.Random(seed)
    rows, y, groups, strata = [], [], [], []
    for run in range(n):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        label = int(rng.random() < sigmoid(1.0 * a + 2.0 * b))
        rows.append({"peak_fill": a + 0.3 * rng.gauss(0, 1), "x": 3.0 * rng.gauss(0, 1), "turns": 3.0})
        rows.append({"peak_fill": a, "x": b, "turns": 40.0})
        y += [label, label]
        groups += [run, run]
        strata += [0, 1]
    return rows, y, groups, strata


def test_phase_in_is_chosen_by_inner_cv_when_early_rows_are_noise() -> None:
    rows, y, groups, strata = _phased_data(150, 21)
    names = ["peak_fill", "x"]
    thr, phase = select_screening(
        rows, y, names, grid=(0.03,), phase_grid=(0.0, 30.0), groups=groups, strata=strata
    )
    assert (thr, phase) == (0.03, 30.0)
    assert (
        select_threshold(rows, y, names, grid=(0.03, 0.05), groups=groups, strata=strata)
        == (select_screening(rows, y, names, grid=(0.03, 0.05), groups=groups, strata=strata)[0])
    )
    model = fit_screened(rows, y, names, threshold=thr, strata=strata, phase_in=phase)
    assert model.features == ("peak_fill", "x", "turns") and model.weights[2] == 0.0
    assert model.meta["procedure"] == "phased" and model.meta["phase_in"] == 30.0
    assert model.anchor == "peak_fill" and model.phase_in == 30.0
    assert fit_screened(rows, y, names, threshold=thr).features == ("peak_fill", "x")
    fixed = cross_validate(
        rows, y, names, folds=3, procedure=Procedure.PHASED, select=False, threshold=0.03, phase_in=20.0
    )
    assert fixed.fold_phase_in == (20.0,) * 3 and all(f[-1] == "turns" for f in fixed.fold_features)
    screened = cross_validate(
        rows, y, names, folds=3, procedure=Procedure.SCREENED, select=False, threshold=0.03, phase_in=20.0
    )
    assert screened.fold_phase_in == (0.0,) * 3 and all("turns" not in f for f in screened.fold_features)


def _labelled_runs(n: int, seed: int) -> list[LabelledRun]:
    rng = random.Random(seed)
    runs = []
    for i in range(n):
        failed = int(i % 4 == 0)
        feats = {}
        for p in (0.25, 0.5, 0.75, 1.0):
            row = {f: rng.random() * 10 for f in CANDIDATE_FEATURES}
            row["peak_fill"] = p * (30000 + 40000 * failed + 20000 * rng.random())
            feats[p] = row
        runs.append(LabelledRun(f"r{i}.json", failed, feats))
    return runs


def test_fit_risk_per_procedure_and_refusal_of_logistic() -> None:
    runs = _labelled_runs(40, 3)
    model, cv = fit_risk(runs, folds=4, procedure=Procedure.ANCHORED)
    assert model.features[0] == "peak_fill" and model.meta["procedure"] == "anchored"
    assert len(model.meta["fold_alphas"]) == 4 and "fold_thresholds" not in model.meta
    assert procedure_of(model) is Procedure.ANCHORED and cv.auc[1.0] > 0.9
    screened, _ = fit_risk(runs, folds=4, procedure=Procedure.SCREENED)
    assert procedure_of(screened) is Procedure.SCREENED and len(screened.meta["fold_thresholds"]) == 4
    assert "fold_phase_in" not in screened.meta and screened.phase_in == 0.0
    phased, _ = fit_risk(runs, folds=4, procedure=Procedure.PHASED)
    assert procedure_of(phased) is Procedure.PHASED and len(phased.meta["fold_phase_in"]) == 4
    unknown = RiskModel(("x",), (1.0,), 0.0, (0.0,), (1.0,), meta={"procedure": "???"})
    assert procedure_of(unknown) is PROCEDURE
    with pytest.raises(ConfigError):
        cross_validate_runs(runs, folds=4, procedure=Procedure.LOGISTIC)


def test_pooled_training_rows_and_required_features() -> None:
    rows, y = _synthetic(120, 3)
    points = {0.5: rows, 1.0: rows}
    tr_rows, tr_y, groups = training_rows(rows, y, range(10), points)
    assert len(tr_rows) == 20 and groups == [i for i in range(10) for _ in range(2)]
    assert tr_y == [y[i] for i in range(10) for _ in range(2)]
    feats, _ = select_features(rows, y, ["noise", "up", "down"], required=("noise",), max_features=2)
    assert feats[0] == "noise" and len(feats) == 2


def test_shipped_candidates_are_monitor_features() -> None:
    names = set(FEATURE_NAMES)
    assert set(CANDIDATE_FEATURES) <= names and len(CANDIDATE_FEATURES) <= 6
    assert {feat for _, feat in BASELINES} <= names
    assert names >= LOG_FEATURES


def test_reasoning_tokens_are_missing_until_a_response_reports_them() -> None:
    m = Monitor(profile=default_profile())
    assert default_profile().risk is not None and "reasoning_tokens" in default_profile().risk.features
    m.observe(Message(Role.USER, (TextBlock("fix it"),)))
    m.observe(Message(Role.ASSISTANT, (TextBlock("on it"),), usage=Usage(output_tokens=40)))
    assert "reasoning_tokens" not in m.features() and "output_tokens" in m.features()
    a = m.observe(
        Message(Role.ASSISTANT, (TextBlock("done"),), usage=Usage(output_tokens=9, reasoning_tokens=30))
    )
    assert m.features()["reasoning_tokens"] == 30.0 and a.features["reasoning_tokens"] == 30.0


# ------------------------------------------------------------------ hedging and the new monitor features

_SEPARATORS = (" ", ", ", ".\n", "_", "  ")
_TOKENS = (
    *(w for w in HEDGE_WORDS if " " not in w),
    "not",
    "sure",
    "hm",
    "hmm",
    "HMMM",
    "rebut",
    "stillness",
    "Maybe",
    "x",
    "seemed",
)


@given(st.lists(st.tuples(st.sampled_from(_TOKENS), st.sampled_from(_SEPARATORS)), max_size=30))
def test_count_hedges_matches_a_word_by_word_count(parts: list[tuple[str, str]]) -> None:
    text = "".join(tok + sep for tok, sep in parts)
    # independent count: split into words the way a reader would ("_" joins words), then look them up
    words: list[tuple[str, str]] = []  # (word, separator after it)
    current = ""
    for tok, sep in parts:
        current += tok
        if sep == "_":
            current += "_"
            continue
        words.append((current.lower(), sep))
        current = ""
    if current:
        words.append((current.lower(), ""))
    singles = {w for w in HEDGE_WORDS if " " not in w}
    expected = 0
    for i, (w, sep) in enumerate(words):
        hmm = len(w) >= 3 and w[0] == "h" and set(w[1:]) == {"m"}
        not_sure = w == "not" and sep == " " and i + 1 < len(words) and words[i + 1][0] == "sure"
        expected += int(w in singles or hmm or not_sure)
    assert count_hedges(text) == expected


def _assistant(text: str, out: int = 0, reasoning: int = 0) -> Message:
    usage = Usage(input_tokens=1000, output_tokens=out, reasoning_tokens=reasoning)
    return Message(role=Role.ASSISTANT, blocks=(TextBlock(text),), usage=usage)


def test_monitor_counts_reasoning_and_hedges_per_turn() -> None:
    m = Monitor("gpt-4o", Profile(), track_hedges=True)
    m.observe(Message(role=Role.USER, blocks=(TextBlock("But fix the parser, maybe."),)))
    m.observe(_assistant("But wait, this still fails.", out=100, reasoning=60))
    m.observe(_assistant("Fixed. Running the tests.", out=40, reasoning=0))
    f = m.features()
    assert f["reasoning_tokens"] == 60.0 and f["output_tokens"] == 140.0
    assert f["hedges"] == 3 / 2  # user text does not count
    # without a risk model that needs them, hedges are not counted (the scan costs time per turn)
    quiet = Monitor("gpt-4o", Profile())
    quiet.observe(_assistant("But wait, this still fails."))
    assert quiet.features()["hedges"] == 0.0


def test_default_monitor_scores_with_the_shipped_model() -> None:
    profile = default_profile()
    risk = profile.risk
    assert risk is not None
    m = Monitor("gpt-4o", profile)
    for t in range(5):
        a = m.observe(_assistant(f"Step {t}: maybe the bug is here, but it still fails.", out=200))
    assert a.risk is not None and a.risk == risk.score(m.features())
    # no response reported reasoning tokens: that feature is missing, not zero
    assert set(a.features) == set(risk.features) - {"reasoning_tokens"}


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
    assert p.risk.meta["procedure"] == PROCEDURE.value == Procedure.PHASED.value
    assert p.risk.phase_in > 0 and p.risk.anchor == "peak_fill"
    # six weighted candidates at most; the turn count only phases them in (weight 0)
    weighted = {f for f, w in zip(p.risk.features, p.risk.weights, strict=True) if w != 0.0}
    assert weighted <= set(CANDIDATE_FEATURES) and set(p.risk.features) - weighted == {"turns"}
    assert p.risk.meta["fold_phase_in"] and len(p.risk.meta["fold_thresholds"]) == p.risk.meta["folds"]
    assert len(p.risk.meta["cv_auc_by_seed"]) >= 3 and "peak fill" in p.risk.meta["baseline_auc"]
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
    r = invoke(["calibrate", str(runs), "--labels", str(labels), "--out", str(out), "--folds", "3"])
    assert r.exit_code == 0, r.output
    assert "cross-validated" in r.output
    profile = load_profile(out)
    assert profile.risk is not None and profile.risk.meta["runs"] == 24
    r = invoke(
        ["validate", str(runs), "--labels", str(labels), "--profile", str(out), "--folds", "3", "--json"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["trained_on_these_runs"] == 1.0
    assert doc["cross_validated_risk"] is not None
    assert set(doc["baselines"]) == {"peak fill", "number of turns", "tool error rate"}
    assert set(doc["risk"]) == {"0.25", "0.5", "0.75", "1"}
    # the two classes differ strongly in growth: the fitted score separates them
    assert doc["risk"]["1"]["auc"] > 0.9
    # the comparison uses the honest (cross-validated) figure against the best baseline at each point
    for point, comp in doc["risk_minus_best_baseline"].items():
        best = max(doc["baselines"].values(), key=lambda t: t[point]["auc"])[point]["auc"]
        expected = doc["cross_validated_risk"][point]["auc"] - best
        assert abs(comp["difference"] - expected) < 1e-3
        assert comp["beats"] == (comp["ci95"][0] > 0)
    r = invoke(["validate", str(runs), "--labels", str(labels), "--profile", str(out), "--folds", "3"])
    assert "honest figure" in r.output and "baseline: peak fill" in r.output
    assert "risk - best baseline" in r.output and "risk beats the best baseline" in r.output


def test_calibrate_with_the_anchored_procedure(labelled: tuple[Path, Path], tmp_path: Path) -> None:
    runs, labels = labelled
    out = tmp_path / "anchored.json"
    args = ["calibrate", str(runs), "--labels", str(labels), "--out", str(out), "--folds", "3"]
    r = invoke([*args, "--procedure", "anchored", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["procedure"] == "anchored" and summary["features"][0] == "peak_fill"
    profile = load_profile(out)
    assert profile.risk is not None and profile.risk.meta["procedure"] == "anchored"
    r = invoke(
        ["validate", str(runs), "--labels", str(labels), "--profile", str(out), "--folds", "3", "--json"]
    )
    assert r.exit_code == 0, r.output
    # validation cross-validates the procedure the profile was fitted with: the anchor in every fold
    assert all(f[0] == "peak_fill" for f in json.loads(r.output)["cv_fold_features"])
    assert invoke([*args, "--procedure", "logistic"]).exit_code == 2


def test_validate_without_matching_labels_is_an_input_error(
    labelled: tuple[Path, Path], tmp_path: Path
) -> None:
    runs, _ = labelled
    labels = tmp_path / "other.csv"
    labels.write_text("file,resolved\nnope.json,1\n")
    r = invoke(["validate", str(runs), "--labels", str(labels)])
    assert r.exit_code == 3


def test_new_features_on_real_runs_match_a_plain_json_count(mini_swe_data: Path) -> None:
    import re

    from ctxhealth.sources import read_sessions

    paths = sorted((mini_swe_data / "trajs").glob("*/*.traj.json"))[:4]
    assert paths
    singles = {w for w in HEDGE_WORDS if " " not in w}
    for session, path in zip(read_sessions([str(p) for p in paths]), paths, strict=True):
        assert run_key(session.path) == path.name
        raw = json.loads(path.read_text())["messages"]
        replies = [m for m in raw if m["role"] == "assistant"]
        usages = [m["extra"]["response"]["usage"] for m in replies]
        reasoning = sum(
            (u.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0 for u in usages
        )
        output = sum(u["completion_tokens"] for u in usages)
        hedges = 0
        for m in replies:
            text = m["content"].lower()
            words = re.findall(r"\w+", text)
            hedges += sum(1 for w in words if w in singles or re.fullmatch(r"hm{2,}", w))
            hedges += text.count("not sure") - len(re.findall(r"\wnot sure|not sure\w", text))
        monitor = Monitor(session.model, Profile(), track_hedges=True)
        monitor.observe_session(session)
        f = monitor.features()
        assert f["reasoning_tokens"] == reasoning and f["output_tokens"] == output
        assert f["hedges"] == pytest.approx(hedges / len(replies))


def test_calibrate_out_into_a_missing_folder_is_an_error_not_a_new_folder(
    labelled: tuple[Path, Path], tmp_path: Path
) -> None:
    """``--out`` is a path the user typed: a missing folder is a clean environment error (exit 4), never
    created silently (as ``report -o`` and ``pack -o``)."""
    runs, labels = labelled
    out = tmp_path / "no-such-folder" / "profile.json"
    r = invoke(["calibrate", str(runs), "--labels", str(labels), "--out", str(out), "--folds", "3"])
    assert r.exit_code == 4, r.output
    assert not out.parent.exists()
