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
from collections.abc import Callable
from pathlib import Path

import click

from ctxhealth.cli.check import count_inputs
from ctxhealth.cli.common import echo_json, guarded, transcripts_argument
from ctxhealth.cli.labels import label_options, labelled_runs
from ctxhealth.cli.progress import ProgressBar
from ctxhealth.config import load_settings
from ctxhealth.errors import ConfigError
from ctxhealth.evaluation import (
    EVAL_POINTS,
    POOLED,
    AgentValidation,
    AucFigure,
    Validation,
    validate_by_agent,
    validate_runs,
)
from ctxhealth.policy.profile import Profile, resolve_profile
from ctxhealth.risk import RiskModel


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
    label = "risk (fitted here)" if v.trained_on_these_runs >= 0.5 else "risk (this profile)"
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


def render_by_agent(results: list[AgentValidation]) -> str:
    """Each agent's table, then the leave-one-agent-out figures side by side."""
    blocks = []
    for r in results:
        title = (
            "all agents pooled (mixes agents whose failure rates differ: judge by the agents' own rows)"
            if r.agent == POOLED
            else f"agent: {r.agent}"
        )
        blocks.append(f"== {title} ==\n{render_validation(r.within)}")
    held = [r for r in results if r.held_out is not None]
    if held:
        head = f"{'held-out agent':<20}{'':<12}" + "".join(
            f"{f'first {p:.0%}' if p < 1 else 'end of run':>22}" for p in EVAL_POINTS
        )
        lines = ["== leave one agent out: fitted on the other agents, scored on this one ==", head]
        for r in held:
            v = r.held_out
            assert v is not None
            lines.append(
                f"{r.agent:<20}{'risk':<12}" + "".join(f"{_cell(v.risk[p]):>22}" for p in EVAL_POINTS)
            )
            if v.versus_best_baseline is not None:
                comps = v.versus_best_baseline
                lines.append(
                    f"{'':<20}{'- best':<12}"
                    + "".join(
                        f"{f'{c.difference:+.3f} [{c.low:+.2f},{c.high:+.2f}]':>22}" for c in comps.values()
                    )
                )
                lines.append(
                    f"{'':<20}{'  (which)':<12}" + "".join(f"{c.baseline:>22}" for c in comps.values())
                )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _model_for(profile: Profile) -> Callable[[str], RiskModel]:
    def model_for(agent: str) -> RiskModel:
        model = profile.for_format(agent).risk
        if model is None:
            raise ConfigError("the profile has no risk model", hint="fit one with `ctxhealth calibrate`")
        return model

    return model_for


@click.command("validate")
@transcripts_argument("paths", many=True)
@label_options
@click.option(
    "--profile", "profile_path", help="A profile written by `ctxhealth calibrate` (default: built-in)."
)
@click.option(
    "--folds", default=5, show_default=True, type=click.IntRange(2, 50), help="Cross-validation folds."
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of folds and bootstrap.")
@click.option("--cv/--no-cv", "force_cv", default=None, help="Force (or skip) the nested cross-validation.")
@click.option(
    "--by",
    "by",
    type=click.Choice(["agent"]),
    help="One table per agent (log format) and pooled, with leave-one-agent-out figures.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@guarded
def validate(
    paths: tuple[str, ...],
    labels_paths: tuple[str, ...],
    report_path: str | None,
    profile_path: str | None,
    folds: int,
    seed: int,
    force_cv: bool | None,
    by: str | None,
    as_json: bool,
) -> None:
    """Measure how well the risk score predicts failed runs, against simple baselines.

    Needs transcripts of finished runs and which of them reached their goal (--labels CSV, --report
    SWE-bench report, or the outcome tau-bench and OpenHands logs record): none ship with ctxhealth.
    Label your own runs, or use a benchmark's published runs and results (SWE-bench: the instances an
    agent resolved, and its trajectories).
    """
    settings = load_settings({"profile": profile_path}, os.environ, Path.cwd())
    profile = resolve_profile(settings.profile, settings.profile_overrides)
    if profile.risk is None:
        raise ConfigError("the profile has no risk model", hint="fit one with `ctxhealth calibrate`")
    with ProgressBar("validating", count_inputs(paths)) as bar:
        runs = labelled_runs(
            paths, labels_paths, report_path, profile, on_session=lambda path: bar.advance(label=path)
        )
    agents = {r.agent for r in runs}
    if by == "agent":
        per_agent = validate_by_agent(runs, _model_for(profile), folds=folds, seed=seed)
        if as_json:
            echo_json({"schema_version": 1, "by": "agent", "agents": [r.to_dict() for r in per_agent]})
        else:
            click.echo(render_by_agent(per_agent))
        return
    # runs of one agent are scored with that agent's own model, when the profile has one
    model = _model_for(profile)(agents.pop() if len(agents) == 1 else POOLED)
    result = validate_runs(runs, model, folds=folds, seed=seed, cross_validate_risk=force_cv)
    if as_json:
        echo_json({"schema_version": 1, **result.to_dict()})
    else:
        click.echo(render_validation(result))
