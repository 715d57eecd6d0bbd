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
from pathlib import Path
from typing import Any

import click
from msgspec.structs import replace

from ctxhealth.cli.check import count_inputs
from ctxhealth.cli.common import echo_json, guarded, transcripts_argument, write_output
from ctxhealth.cli.labels import label_options, labelled_runs
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.config import load_settings
from ctxhealth.errors import ConfigError
from ctxhealth.evaluation import (
    CALIBRATION_PROCEDURES,
    PROCEDURE,
    CVResult,
    LabelledRun,
    Procedure,
    fit_risk,
)
from ctxhealth.evaluation.calibration import MIN_AGENT_RUNS, fit_by_agent
from ctxhealth.policy.profile import resolve_profile
from ctxhealth.risk import RiskModel


@click.command("calibrate")
@transcripts_argument("paths", many=True, homes=True)
@label_options
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
@click.option(
    "--by",
    "by",
    type=click.Choice(["agent"]),
    help="Also fit each agent (log format) with enough labelled runs its own model; the pooled model "
    "scores every other agent.",
)
@click.option(
    "--min-runs",
    default=MIN_AGENT_RUNS,
    show_default=True,
    type=click.IntRange(2, None),
    help="With --by agent: the fewest labelled runs for an agent's own model.",
)
@click.option(
    "--zones",
    is_flag=True,
    help="Instead of risk weights: write where your own slip rate rises, per model family, into the "
    "profile (no labels needed; see ctxhealth insights).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the fit summary as JSON.")
@guarded
def calibrate(
    paths: tuple[str, ...],
    labels_paths: tuple[str, ...],
    report_path: str | None,
    out: str,
    folds: int,
    seed: int,
    procedure_name: str,
    by: str | None,
    min_runs: int,
    zones: bool,
    as_json: bool,
) -> None:
    """Fit a risk profile on labelled transcripts and write it to --out.

    Needs transcripts of finished runs and which of them reached their goal (--labels CSV, --report
    SWE-bench report, or the outcome tau-bench and OpenHands logs record): none ship with ctxhealth.
    With --zones, no labels: the fill at which your own sessions start slipping more, per model
    family, is written into the profile (kept with the rest of --out when it exists).
    Label your own runs, or use a benchmark's published runs and results (SWE-bench: the instances an
    agent resolved, and its trajectories). A few hundred runs with both
    outcomes give a stable fit.
    """
    settings = load_settings({}, os.environ, Path.cwd())
    base = resolve_profile(settings.profile, settings.profile_overrides)
    if zones:
        _calibrate_zones(paths, base, out, settings.registry(), as_json)
        return
    with ProgressBar("calibrating", count_inputs(paths)) as bar:
        runs = labelled_runs(
            paths, labels_paths, report_path, base, on_session=lambda path: bar.advance(label=path)
        )
    procedure = Procedure(procedure_name)
    if by == "agent":
        per_agent = fit_by_agent(runs, folds=folds, seed=seed, procedure=procedure, min_runs=min_runs)
        if not per_agent:
            raise ConfigError(
                f"no agent has {min_runs} labelled runs with both outcomes",
                hint="label more runs, or lower --min-runs",
            )
        profile = replace(
            base,
            name=f"calibrated per agent on {len(runs)} runs",
            risk_by_format={**base.risk_by_format, **{agent: fit[0] for agent, fit in per_agent.items()}},
        )
        fits = [(agent, fit, [r for r in runs if r.agent == agent]) for agent, fit in per_agent.items()]
    else:
        fit = fit_risk(runs, folds=folds, seed=seed, procedure=procedure)
        profile = replace(
            base,
            name=f"calibrated on {len(runs)} runs",
            risk=fit[0],
            risk_by_format={},
            risk_formats=tuple(sorted({r.agent for r in runs})),
        )
        fits = [("all runs", fit, list(runs))]
    write_output(str(out), json.dumps(profile.to_dict(), indent=2, sort_keys=True) + "\n", "profile")
    summaries = {title: _fit_summary(fit[0], fit[1], mine) for title, fit, mine in fits}
    if as_json:
        if by is None:
            echo_json({"profile": out, **summaries["all runs"], "procedure": procedure_name})
        else:
            echo_json({"profile": out, "procedure": procedure_name, "by": by, "fits": summaries})
        return
    click.echo(f"wrote {out}")
    for title, summary in summaries.items():
        click.echo(f"{title}: fitted on {summary['runs']} runs ({summary['failed']} failed)")
        click.echo(
            "  features: "
            + ", ".join(
                f"{f} ({w:+.3f})" for f, w in zip(summary["features"], summary["weights"], strict=True)
            )
        )
        click.echo(
            f"  {folds}-fold nested cross-validated ROC AUC (predicting failure): "
            + ", ".join(f"{float(p):.0%} of turns {a:.3f}" for p, a in summary["cv_auc"].items())
        )


def _fit_summary(model: RiskModel, cv: CVResult, runs: list[LabelledRun]) -> dict[str, Any]:
    return {
        "runs": len(runs),
        "failed": sum(r.failed for r in runs),
        "features": list(model.features),
        "weights": [round(w, 4) for w in model.weights],
        "cv_auc": {f"{p:g}": round(a, 4) for p, a in cv.auc.items()},
    }


def _calibrate_zones(paths: tuple[str, ...], base: Any, out: str, registry: Any, as_json: bool) -> None:
    """``calibrate --zones``: the slip rise per model family, written into the profile at ``out``."""
    from ctxhealth.insights.build import InsightsBuilder, slip_rises
    from ctxhealth.policy.profile import load_profile
    from ctxhealth.sources import read_sessions

    builder = InsightsBuilder(registry=registry)
    with ProgressBar("calibrating zones", count_inputs(paths)) as bar:
        for session in read_sessions(paths, on_skip=lambda s: bar.advance(label=s.path)):
            builder.add(session)
            bar.advance(label=session.path)
    rises, rows = slip_rises(builder.measured)
    profile = load_profile(out) if Path(out).is_file() else base
    profile = replace(profile, slip_rise={**profile.slip_rise, **rises})
    write_output(str(out), json.dumps(profile.to_dict(), indent=2, sort_keys=True) + "\n", "profile")
    if as_json:
        echo_json({"profile": out, "families": rows})
        return
    click.echo(f"wrote {out}")
    for row in rows:
        head = (
            f"{row['family']}: {row['steps']:,} steps in {row['sessions']} sessions, {row['slips']:,} slipped"
        )
        if row["at_tokens"] is None:
            click.echo(
                f"  {head}; no fill where the slip rate rises with the 95% intervals apart (none written)"
            )
        else:
            below, above = row["below"], row["above"]
            click.echo(
                f"  {head}; slips rise at {row['at_tokens']:,} tokens: {below['rate']:.1%} of "
                f"{below['steps']:,} steps below, {above['rate']:.1%} of {above['steps']:,} above"
            )
    if rises:
        click.echo(
            "use it: set profile = " + out + " in .ctxhealth.toml (or CTXHEALTH_PROFILE); the zone turns "
            "yellow at these fills in check, the status line, the hooks and the policy"
        )
