"""``ctxhealth models [ID]``: what ctxhealth knows about a model and where each fact comes from."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from ctxhealth.cli.common import SCHEMA_VERSION, echo_json, guarded
from ctxhealth.config import load_settings
from ctxhealth.policy.knowledge import describe_model, describe_registry
from ctxhealth.policy.profile import resolve_profile


@click.command("models", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("model_id", required=False)
@click.option("--window", type=click.IntRange(min=1), help="A window a log or payload states for this model.")
@click.option(
    "--window-is-usable",
    is_flag=True,
    help="The --window is already what the prompt may fill (as Codex states it): reserve nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@guarded
def models(model_id: str | None, window: int | None, window_is_usable: bool, as_json: bool) -> None:
    """Show the window, usable window, tier, zones and prices of MODEL_ID, each with its origin (the
    price package and its version, our family table, a config override, a stated window); without
    MODEL_ID, the package in use, the family table and the config overrides."""
    settings = load_settings({}, os.environ, Path.cwd())
    registry = settings.registry()
    if model_id is None:
        doc = describe_registry(registry)
        if as_json:
            echo_json({"schema_version": SCHEMA_VERSION, **doc})
        else:
            _print_registry(doc)
        return
    profile = resolve_profile(settings.profile, settings.profile_overrides)
    doc = describe_model(model_id, registry, profile, window=window, window_is_usable=window_is_usable)
    if as_json:
        echo_json({"schema_version": SCHEMA_VERSION, **doc})
    else:
        _print_model(doc)


def _package_line(package: dict[str, Any]) -> str:
    if not package["version"]:
        return f"{package['name']}: {package['table']} (no windows or prices from a package)"
    return f"{package['name']} {package['version']}: {package['models']:,} models ({package['table']})"


def _print_registry(doc: dict[str, Any]) -> None:
    click.echo(f"windows and prices: {_package_line(doc['package'])}")
    click.echo("tiers, reserved output and auto-compact buffer: the family table (first match wins)")
    for f in doc["families"]:
        window = f"{f['fallback_window']:,}" if f["fallback_window"] else "-"
        click.echo(
            f"  {f['name']:<18} {f['tier']:<8} reserve {f['reserved_output']:>7,}  "
            f"buffer {f['autocompact_buffer']:>6,}  window if the package has none {window}"
        )
    if doc["overrides"]:
        click.echo("config overrides:")
        for o in doc["overrides"]:
            click.echo(f"  {o['prefix']}: {o['fields']}  ({o['origin']})")


def _print_model(doc: dict[str, Any]) -> None:
    z = doc["zones"]
    prices = doc["prices"]
    p = prices["value"]
    click.echo(f"{doc['id']}  (matched as {doc['key']!r}, family {doc['family']})")
    click.echo(f"  tier            {doc['tier']['value']}  ({doc['tier']['from']})")
    click.echo(f"  window          {doc['window']['value']:,}  ({doc['window']['from']})")
    click.echo(
        f"  usable window   {doc['usable_window']:,} = window - reserved output "
        f"{doc['reserved_output']:,} - auto-compact buffer {doc['autocompact_buffer']:,}"
    )
    click.echo(
        f"  zones           sweet spot to {z['sweet_spot']:,}, approaching to {z['compact_zone']:,}, "
        f"compact zone to {z['hard_limit']:,}, hard limit from {z['hard_limit']:,}  (tier zones "
        f"{z['tier_zones'][0]:,} / {z['tier_zones'][1]:,} / {z['tier_zones'][2]:,}, scaled by "
        f"(window / {z['reference_window']:,}) ** {z['window_exponent']:g} above that window, "
        "fitted inside the usable window)"
    )
    if p is None:
        click.echo("  prices          unknown: cost is not computed")
    else:
        long = ""
        if p.get("long_context") is not None:
            lc = p["long_context"]
            long = f"; above {p['long_context_above']:,} prompt tokens {lc['input']:g} / {lc['output']:g}"
        click.echo(
            f"  prices          input {p['input']:g}, output {p['output']:g}, cache write "
            f"{p['cache_write']:g}, cache read {p['cache_read']:g} USD/M{long}  "
            f"({prices['from']}, as {prices['priced_as'] or doc['id']})"
        )
    click.echo(f"  tokenizer       {doc['encoding'] or 'estimate (about 4 characters a token)'}")
    if doc["override"]:
        o = doc["override"]
        click.echo(f'  config          [models."{o["prefix"]}"] {o["fields"]}  ({o["origin"]})')
    click.echo(f"  package         {_package_line(doc['package'])}")
    for note in doc["notes"]:
        click.echo(f"  unknown         {note}")
