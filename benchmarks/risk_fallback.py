"""Risk that never does harm: leave-one-agent-out and within-task ROC AUC of the risk score as it
ships, beside the length and fill baselines, on every labelled set.

Run: ``python benchmarks/risk_fallback.py [--data DIR] [--rounds N]`` (about two minutes: the
features of every run are computed once).

Leave one agent out: for each agent (log format), a risk model is fitted on the *other* agents'
runs (``fit_on``, the shipped procedure). Scored on the held-out agent two ways: ``fitted`` (that
model, what ctxhealth did before) and ``shipped`` (what ctxhealth does now for an agent no model was
fitted on: :func:`ctxhealth.risk.model.fill_fallback` of that model), beside the baselines peak fill
and number of turns. ``shipped − best`` is the paired difference to the better baseline with its
bootstrap 95% interval: the claim is that its upper end is never below zero (risk is never worse
than the best baseline by more than its interval).

Within task: the AUC inside each task whose runs both failed and succeeded, averaged over those
tasks (task difficulty cannot explain it): tau-bench's 4 trials per task, and the SWE-bench
instances run by both mini-swe-agent and OpenHands (the risk score there is each agent's shipped
one: the mini-swe-agent model, the fill fallback for OpenHands).

Prints one JSON line per figure group.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ctxhealth.evaluation.calibration import fit_on
from ctxhealth.evaluation.metrics import (
    bootstrap_auc_ci,
    bootstrap_auc_difference_ci,
    roc_auc,
    stratified_auc,
)
from ctxhealth.evaluation.runs import EVAL_POINTS, LabelledRun, collect_runs, read_labels
from ctxhealth.policy.profile import default_profile
from ctxhealth.risk.model import RiskModel, fill_fallback

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"


def _scores(
    runs: Sequence[LabelledRun], point: float, score: Callable[[Mapping[str, float]], float]
) -> list[float]:
    return [score(r.features[point]) for r in runs]


def _feature(name: str) -> Callable[[Mapping[str, float]], float]:
    return lambda f: float(f.get(name, 0.0))


def leave_one_agent_out(runs: Sequence[LabelledRun], rounds: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for agent in sorted({r.agent for r in runs}):
        mine = [r for r in runs if r.agent == agent]
        others = [r for r in runs if r.agent != agent]
        if len({r.failed for r in mine}) < 2 or len({r.failed for r in others}) < 2:
            continue
        fitted = fit_on(others)
        shipped = fill_fallback(fitted)
        labels = [r.failed for r in mine]
        for point in EVAL_POINTS:
            row: dict[str, object] = {
                "agent": agent,
                "runs": len(mine),
                "failed": sum(labels),
                "point": point,
            }
            scored = {
                "fitted": _scores(mine, point, fitted.score),
                "shipped": _scores(mine, point, shipped.score),
                "peak_fill": _scores(mine, point, _feature("peak_fill")),
                "turns": _scores(mine, point, _feature("turns")),
            }
            for name, values in scored.items():
                row[name] = round(roc_auc(values, labels), 4)
            low, high = bootstrap_auc_ci(scored["shipped"], labels, rounds=rounds)
            row["shipped_ci"] = [round(low, 4), round(high, 4)]
            best = max(("peak_fill", "turns"), key=lambda k: float(row[k]))  # type: ignore[arg-type]
            d_low, d_high = bootstrap_auc_difference_ci(
                scored["shipped"], scored[best], labels, rounds=rounds
            )
            row["best_baseline"] = best
            row["shipped_minus_best"] = round(float(row["shipped"]) - float(row[best]), 4)  # type: ignore[arg-type]
            row["shipped_minus_best_ci"] = [round(d_low, 4), round(d_high, 4)]
            row["never_worse"] = d_high >= 0.0
            out.append(row)
    return out


def _within(
    runs: Sequence[LabelledRun],
    key: Callable[[LabelledRun], str],
    scorer: Callable[[LabelledRun, float], float],
    point: float,
    rounds: int = 1000,
) -> tuple[float, int, list[float]]:
    """The within-task AUC (averaged over tasks with both outcomes), how many such tasks, and its
    95% interval from resampling those tasks."""
    groups: dict[str, list[LabelledRun]] = {}
    for r in runs:
        groups.setdefault(key(r), []).append(r)
    mixed = [g for g in groups.values() if len({r.failed for r in g}) == 2]

    def auc_of(chosen: Sequence[Sequence[LabelledRun]]) -> float:
        flat = [r for g in chosen for r in g]
        strata = [i for i, g in enumerate(chosen) for _ in g]
        return stratified_auc([scorer(r, point) for r in flat], [r.failed for r in flat], strata)

    if not mixed:
        return float("nan"), 0, []
    rng = random.Random(0)
    draws = sorted(auc_of([rng.choice(mixed) for _ in mixed]) for _ in range(rounds))
    ci = [round(draws[int(0.025 * rounds)], 4), round(draws[int(0.975 * rounds) - 1], 4)]
    return auc_of(mixed), len(mixed), ci


def within_task(runs: Sequence[LabelledRun], rounds: int = 1000) -> list[dict[str, object]]:
    profile = default_profile()
    models: dict[str, RiskModel | None] = {}

    def shipped(r: LabelledRun, point: float) -> float:
        if r.agent not in models:
            models[r.agent] = profile.risk_for(r.agent)[0]
        model = models[r.agent]
        return model.score(r.features[point]) if model is not None else 0.0

    def feature(name: str) -> Callable[[LabelledRun, float], float]:
        return lambda r, p: float(r.features[p].get(name, 0.0))

    sets = {
        "tau-bench (trials of one task)": ([r for r in runs if r.agent == "tau-bench"], lambda r: r.group),
        "SWE-bench instances run by mini-swe-agent and OpenHands": (
            _shared_instances(runs),
            _instance,
        ),
    }
    out: list[dict[str, object]] = []
    for name, (chosen, key) in sets.items():
        for point in EVAL_POINTS:
            row: dict[str, object] = {"set": name, "runs": len(chosen), "point": point}
            for label, scorer in (
                ("shipped", shipped),
                ("peak_fill", feature("peak_fill")),
                ("turns", feature("turns")),
            ):
                auc, tasks, ci = _within(chosen, key, scorer, point, rounds)
                row[label] = round(auc, 4)
                row[f"{label}_ci"] = ci
                row["tasks_with_both_outcomes"] = tasks
            out.append(row)
    return out


def _instance(r: LabelledRun) -> str:
    """The SWE-bench instance of a run (an OpenHands folder, a ``<instance>.traj.json`` file)."""
    return r.group.split(":", 1)[-1].rsplit("/", 1)[-1].removesuffix(".json").removesuffix(".traj")


def _shared_instances(runs: Sequence[LabelledRun]) -> list[LabelledRun]:
    by_agent: dict[str, set[str]] = {}
    for r in runs:
        if r.agent in ("mini-swe-agent", "openhands"):
            by_agent.setdefault(r.agent, set()).add(_instance(r))
    shared = set.intersection(*by_agent.values()) if len(by_agent) == 2 else set()
    return [r for r in runs if r.agent in by_agent and _instance(r) in shared]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--cache", type=Path, help="Keep the runs' features in this file between runs.")
    args = parser.parse_args()
    d = args.data
    openhands = d / "openhands" / "claude-3-5-sonnet-20241022_verified"
    labels = {
        **read_labels(str(d / "mini-swe-agent" / "labels.csv")),
        **read_labels(str(openhands / "labels.csv")),
    }
    if args.cache is not None and args.cache.is_file():
        runs = pickle.loads(args.cache.read_bytes())  # our own file, written below
    else:
        runs = collect_runs(
            [str(d / "mini-swe-agent" / "trajs"), str(openhands / "llm_completions"), str(d / "tau-bench")],
            labels,
        )
        if args.cache is not None:
            args.cache.write_bytes(pickle.dumps(runs))
    for row in leave_one_agent_out(runs, args.rounds):
        print(json.dumps({"leave_one_agent_out": row}))
    for row in within_task(runs, args.rounds):
        print(json.dumps({"within_task": row}))


if __name__ == "__main__":
    main()
