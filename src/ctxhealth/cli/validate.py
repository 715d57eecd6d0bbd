"""``ctxhealth validate PATH... --labels CSV [--profile FILE] [--folds K] [--json]``: is risk predictive?

Prints the ROC AUC (bootstrap 95% CI) of the profile's risk score for predicting a failed run, at the
end of each run and using only the first 25/50/75% of its turns, next to single-feature baselines
(peak fill, number of turns, tool error rate) computed in the same run, and at each point the
difference between risk and the best baseline there with a paired bootstrap 95% CI (risk "beats" it
only where the whole interval is above zero). When the profile was fitted on these very runs (the
default profile on its own development data), it says so and uses the nested cross-validated AUC as
the honest figure, in the comparison too.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ctxhealth.cli.check import count_inputs
from ctxhealth.cli.common import echo_json, guarded
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.config import load_settings
from ctxhealth.errors import ConfigError
from ctxhealth.risk import EVAL_POINTS, AucFigure, Validation, collect_runs, read_labels, validate_runs
from ctxhealth.signals.profile import resolve_profile


def _cell(f: AucFigure) -> str:
    return f"{f.auc:.3f} [{f.low:.2f}-{f.high:.2f}]"


def render_validation(v: Validation) -> str:
    head = f"{'':<26}" + "".join(f"{f'first {p:.0%}' if p < 1 else 'end of run':>22}" for p in EVAL_POINTS)
    lines = [
        f"{v.runs} runs, {v.failed} failed; ROC AUC for predicting failure [bootstrap 95% CI]",
        head,
    ]
    if v.cross_validated is not None:
        lines.append(
            f"{'risk (cross-validated)':<26}"
            + "".join(f"{_cell(v.cross_validated[p]):>22}" for p in EVAL_POINTS)
        )
    label = "risk (fitted here)" if v.cross_validated is not None else "risk"
    lines.append(f"{label:<26}" + "".join(f"{_cell(v.risk[p]):>22}" for p in EVAL_POINTS))
    for name, table in v.baselines.items():
        lines.append(f"{'baseline: ' + name:<26}" + "".join(f"{_cell(table[p]):>22}" for p in EVAL_POINTS))
    if v.versus_best_baseline is not None:
        comps = v.versus_best_baseline
        lines.append(
            f"{'risk - best baseline':<26}"
            + "".join(f"{f'{c.difference:+.3f} [{c.low:+.2f},{c.high:+.2f}]':>22}" for c in comps.values())
        )
        lines.append(f"{'  (best baseline)':<26}" + "".join(f"{c.baseline:>22}" for c in comps.values()))
        beats = [p for p, c in comps.items() if c.beats]
        lines.append(
            "risk beats the best baseline (paired bootstrap 95% CI above 0) at: "
            + (", ".join(f"{p:.0%}" if p < 1 else "end of run" for p in beats) if beats else "none")
        )
    lines.append("risk features: " + ", ".join(v.features))
    if v.trained_on_these_runs >= 0.5:
        lines.append(
            f"note: this profile was fitted on {v.trained_on_these_runs:.0%} of these runs, so its own AUC "
            "is optimistic; the cross-validated row (fit on k-1 folds, scored on the held-out fold) is "
            "the honest figure."
        )
    return "\n".join(lines)


@click.command("validate")
@click.argument("paths", nargs=-1, required=True)
@click.option("--labels", "labels_path", required=True, help="CSV with columns file,resolved (1 = success).")
@click.option(
    "--profile", "profile_path", help="A profile written by `ctxhealth calibrate` (default: built-in)."
)
@click.option(
    "--folds", default=5, show_default=True, type=click.IntRange(2, 50), help="Cross-validation folds."
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of folds and bootstrap.")
@click.option("--cv/--no-cv", "force_cv", default=None, help="Force (or skip) the nested cross-validation.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@guarded
def validate(
    paths: tuple[str, ...],
    labels_path: str,
    profile_path: str | None,
    folds: int,
    seed: int,
    force_cv: bool | None,
    as_json: bool,
) -> None:
    """Measure how well the risk score predicts failed runs, against simple baselines."""
    settings = load_settings({"profile": profile_path}, os.environ, Path.cwd())
    profile = resolve_profile(settings.profile, settings.profile_overrides)
    if profile.risk is None:
        raise ConfigError("the profile has no risk model", hint="fit one with `ctxhealth calibrate`")
    with ProgressBar("validating", count_inputs(paths)) as bar:
        runs = collect_runs(
            paths, read_labels(labels_path), profile=profile, on_session=lambda path: bar.advance(label=path)
        )
    result = validate_runs(runs, profile.risk, folds=folds, seed=seed, cross_validate_risk=force_cv)
    if as_json:
        echo_json({"schema_version": 1, **result.to_dict()})
    else:
        click.echo(render_validation(result))
