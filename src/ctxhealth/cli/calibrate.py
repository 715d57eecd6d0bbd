"""``ctxhealth calibrate PATH... --labels CSV [--out FILE]``: fit the risk weights on your own labelled runs.

Reads every transcript under PATH that the labels CSV (``file,resolved``) names, computes the signal
features after 25/50/75/100% of each run's turns and fits the risk model on all runs with
``--procedure``: ``phased`` (default, the shipped one: the candidate features that separate the runs
enter with equal signed weights, all but peak fill phased in over the first turns; the screening
threshold and the phase-in chosen by inner cross-validation), ``screened`` (the same without the
phase-in) or ``anchored`` (peak fill plus a weight, chosen by inner cross-validation, on the
others); a slope and bias then turn the sum into a probability. Writes a profile (atomically) and
prints the nested cross-validated AUC so the user knows how much to trust it.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import click

from ctxhealth.atomic import write_atomic
from ctxhealth.cli.check import count_inputs
from ctxhealth.cli.common import echo_json, guarded
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.config import load_settings
from ctxhealth.risk import CALIBRATION_PROCEDURES, PROCEDURE, Procedure, collect_runs, fit_risk, read_labels
from ctxhealth.signals.profile import resolve_profile


@click.command("calibrate")
@click.argument("paths", nargs=-1, required=True)
@click.option("--labels", "labels_path", required=True, help="CSV with columns file,resolved (1 = success).")
@click.option(
    "--out", "out", default="ctxhealth-profile.json", show_default=True, help="Profile file to write."
)
@click.option(
    "--folds", default=5, show_default=True, type=click.IntRange(2, 50), help="Cross-validation folds."
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the fold assignment.")
@click.option(
    "--procedure",
    "procedure_name",
    type=click.Choice([p.value for p in CALIBRATION_PROCEDURES]),
    default=PROCEDURE.value,
    show_default=True,
    help="How the risk weights are fitted.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the fit summary as JSON.")
@guarded
def calibrate(
    paths: tuple[str, ...],
    labels_path: str,
    out: str,
    folds: int,
    seed: int,
    procedure_name: str,
    as_json: bool,
) -> None:
    """Fit a risk profile on labelled transcripts and write it to --out."""
    settings = load_settings({}, os.environ, Path.cwd())
    base = resolve_profile(settings.profile, settings.profile_overrides)
    with ProgressBar("calibrating", count_inputs(paths)) as bar:
        runs = collect_runs(
            paths, read_labels(labels_path), profile=base, on_session=lambda path: bar.advance(label=path)
        )
    model, cv = fit_risk(runs, folds=folds, seed=seed, procedure=Procedure(procedure_name))
    profile = replace(base, name=f"calibrated on {len(runs)} runs", risk=model)
    write_atomic(out, json.dumps(profile.to_dict(), indent=2, sort_keys=True) + "\n")
    summary = {
        "profile": out,
        "runs": len(runs),
        "failed": sum(r.failed for r in runs),
        "features": list(model.features),
        "weights": [round(w, 4) for w in model.weights],
        "procedure": procedure_name,
        "cv_auc": {f"{p:g}": round(a, 4) for p, a in cv.auc.items()},
    }
    if as_json:
        echo_json(summary)
        return
    click.echo(f"fitted on {summary['runs']} runs ({summary['failed']} failed); wrote {out}")
    click.echo(
        "features: "
        + ", ".join(f"{f} ({w:+.3f})" for f, w in zip(model.features, model.weights, strict=True))
    )
    click.echo(
        f"{folds}-fold nested cross-validated ROC AUC (predicting failure): "
        + ", ".join(f"{p:.0%} of turns {a:.3f}" for p, a in cv.auc.items())
    )
