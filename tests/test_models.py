"""Model knowledge that does not go stale: windows and prices from the price package, tiers by the
spec's family words, one usable window, zones ordered inside it, and ``ctxhealth models``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import invoke
from ctxhealth.accounting.catalog import Catalog, derive_catalog, load_catalog
from ctxhealth.accounting.registry import FAMILIES, ModelRegistry, normalise_model_id
from ctxhealth.accounting.types import ModelInfo, Tier
from ctxhealth.model import Message, Role, TextBlock, Usage
from ctxhealth.monitor import Monitor
from ctxhealth.policy.decision import Action
from ctxhealth.policy.profile import Profile, default_profile
from ctxhealth.signals.zones import Zone

REPO = Path(__file__).resolve().parent.parent
CODEX_FIXTURE = REPO / "tests" / "fixtures" / "codex-rollout-0.60.jsonl"
REG = ModelRegistry.default()
TABLE = derive_catalog()


def package_model(model_id: str) -> dict[str, Any]:
    """The package's own entry for ``model_id`` (its id), from the derived table."""
    for provider in TABLE["providers"]:
        for model in provider["models"]:
            if model["id"] == model_id:
                return dict(model)
    raise KeyError(model_id)


# ------------------------------------------------------------------------ the default model is known


@pytest.mark.parametrize(
    ("model_id", "tier"),
    [
        ("claude-opus-5-5", Tier.FULL),
        ("claude-opus-4-7", Tier.FULL),
        ("claude-opus-4-8", Tier.FULL),
        ("claude-opus-5", Tier.FULL),
        ("claude-sonnet-5", Tier.FULL),
        ("gpt-5.5", Tier.FULL),
    ],
)
def test_current_models_take_window_and_prices_from_the_package(model_id: str, tier: Tier) -> None:
    info = REG.lookup(model_id)
    entry = package_model(model_id)
    assert info.known and info.tier is tier
    assert info.window == entry["window"]
    assert info.priced_as == model_id  # its own prices, never another model's
    assert info.prices is not None and info.prices.input == entry["prices"]["input"]
    assert info.window_from.startswith("genai-prices ")


@pytest.mark.parametrize(
    "model_id",
    ["claude-sonnet-4-6", "claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-sonnet-4-20250514"],
)
def test_a_model_whose_1m_context_is_asked_for_reads_its_standard_window(model_id: str) -> None:
    """Sonnet 4 to 4.6 and Opus 4.6 answer within 200K unless a request asks for the 1M context (the
    real Claude Code 2.1.332 reports ``contextWindow`` 200,000 for them, 1,000,000 with ``[1m]``);
    the package gives their maximum. The ``[1m]`` id, and a prompt above 200K, read 1M."""
    info = REG.lookup(model_id)
    assert (info.window, info.usable_window, info.variant_window) == (200_000, 167_000, 1_000_000)
    assert REG.lookup(f"{model_id}[1m]").window == 1_000_000
    assert info.with_prompt_seen(150_000) is info
    wider = info.with_prompt_seen(250_000)
    assert (wider.window, wider.usable_window) == (1_000_000, 967_000)
    assert "variant" in wider.window_from


@pytest.mark.parametrize(
    "model_id", ["claude-opus-4-7", "claude-opus-5", "claude-sonnet-5", "gpt-4o", "gpt-5.5"]
)
def test_a_model_without_a_larger_variant_keeps_its_window_past_any_prompt(model_id: str) -> None:
    info = REG.lookup(model_id)
    assert info.variant_window is None
    assert info.with_prompt_seen(info.window + 50_000) is info


def test_a_stated_window_is_not_widened() -> None:
    """A window a host or log states is the window: a prompt above it proves nothing more."""
    stated = REG.lookup("claude-sonnet-4-6").with_window(200_000, usable=False, origin="status line")
    assert stated.with_prompt_seen(300_000) is stated


def test_the_default_claude_code_model_has_its_1m_window() -> None:
    info = REG.lookup("claude-opus-5-5")
    assert info.window == 1_000_000 and info.tier is Tier.FULL
    assert info.usable_window == 1_000_000 - 20_000 - 13_000


def test_gpt_5_5_is_not_priced_as_gpt_5() -> None:
    assert REG.lookup("gpt-5.5").prices != REG.lookup("gpt-5").prices
    assert REG.lookup("gpt-5.5").priced_as == "gpt-5.5"


@pytest.mark.parametrize(
    ("model_id", "tier"),
    [
        ("claude-opus-7-1", Tier.FULL),
        ("claude-sonnet-6-20270101", Tier.FULL),
        ("claude-haiku-6", Tier.COMPACT),
        ("gpt-4o-mini-2027-01-01", Tier.COMPACT),
        ("gpt-7.2", Tier.FULL),
        ("gemini-9-flash-preview", Tier.COMPACT),
        ("gemini-9.1-pro", Tier.FULL),
        ("us.anthropic.claude-opus-9-v1:0", Tier.FULL),
    ],
)
def test_a_new_version_of_a_known_family_keeps_its_tier(model_id: str, tier: Tier) -> None:
    info = REG.lookup(model_id)
    assert info.known and info.tier is tier


def test_a_model_the_package_lacks_is_named_not_priced_as_another() -> None:
    info = REG.lookup("claude-opus-7-1")
    assert info.prices is None and info.priced_as is None
    result = invoke("models", "claude-opus-7-1")
    assert "prices unknown" in result.output and "not in the price package" in result.output


# ------------------------------------------------------------------------ the cached table


def _fresh_python(code: str, home: Path) -> str:
    env = {**os.environ, "CTXHEALTH_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    return done.stdout


def test_the_package_is_derived_once_then_read_without_importing_it(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from ctxhealth.accounting.catalog import configure_cache_dir\n"
        "from ctxhealth.accounting.registry import ModelRegistry\n"
        f"configure_cache_dir({str(tmp_path)!r})\n"
        "print(ModelRegistry.default().lookup('claude-opus-5-5').window,"
        " 'genai_prices.data' in sys.modules, 'pydantic' in sys.modules)\n"
    )
    first = _fresh_python(code, tmp_path)
    assert first.split() == ["1000000", "True", "True"]  # derived: the package was imported
    cached = list((tmp_path / "cache" / "models").glob("genai_prices-*.json"))
    assert len(cached) == 1
    second = _fresh_python(code, tmp_path)
    assert second.split() == ["1000000", "False", "False"]  # read from the cached table


def test_a_library_process_that_names_no_home_reads_the_default_homes_table(tmp_path: Path) -> None:
    """A program using the Monitor (no CLI, no hook) caches the table under ``$CTXHEALTH_HOME`` as the
    CLI does: only its first process pays for importing the package (it derived the table in memory
    in every process, about 0.2 s of CPU and pydantic imported)."""
    code = (
        "import sys\n"
        "from ctxhealth import Monitor\n"
        "window = Monitor('claude-opus-5-5').info.window\n"
        "print(window, 'genai_prices.data' in sys.modules, 'pydantic' in sys.modules)\n"
    )
    assert _fresh_python(code, tmp_path).split() == ["1000000", "True", "True"]
    assert len(list((tmp_path / "cache" / "models").glob("genai_prices-*.json"))) == 1
    assert _fresh_python(code, tmp_path).split() == ["1000000", "False", "False"]


def test_an_unwritable_cache_falls_back_to_the_package(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    catalog = load_catalog(blocked / "models")
    assert "in memory" in catalog.origin
    assert catalog.find("claude-opus-5-5") is not None


def test_a_damaged_cache_is_derived_again(tmp_path: Path) -> None:
    catalog = load_catalog(tmp_path)
    (path,) = tmp_path.glob("genai_prices-*.json")
    path.write_text("{broken")
    again = load_catalog(tmp_path)
    assert again.find("gpt-5.5") is not None
    assert json.loads(path.read_text())["version"] == catalog.version


def test_without_the_package_nothing_is_priced() -> None:
    registry = ModelRegistry(catalog=Catalog({}, "not installed"))
    info = registry.lookup("claude-opus-5-5")
    assert info.tier is Tier.FULL and info.prices is None and info.window_from == "family table"


# ------------------------------------------------------------------------ one usable window


def test_claude_code_reserve_follows_the_cli() -> None:
    # Claude Code 2.1 debug log: effectiveWindow = window - 20K (max output) - 13K; threshold 67,000
    # for --autocompact 100000
    sonnet = REG.lookup("claude-sonnet-4-5-20250929")
    assert sonnet.usable_window == 167_000
    assert sonnet.with_window(100_000, usable=False).usable_window == 67_000


def test_a_window_the_log_states_is_already_usable() -> None:
    info = REG.lookup("gpt-5.1-codex-max").with_window(121_600, usable=True)
    assert info.usable_window == 121_600


def _codex_rollout(tmp_path: Path, window: int) -> Path:
    text = CODEX_FIXTURE.read_text().replace(
        '"model_context_window":258400', f'"model_context_window":{window}'
    )
    path = tmp_path / "rollout.jsonl"
    path.write_text(text)
    return path


@pytest.mark.parametrize("strategy", ["truncate", "restart", "reanchor", "clear"])
def test_recover_works_on_a_codex_rollout_with_a_small_window(tmp_path: Path, strategy: str) -> None:
    path = _codex_rollout(tmp_path, 121_600)
    result = invoke(["recover", str(path), "--strategy", strategy, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["messages"]
    check = json.loads(invoke("check", "--json", str(path)).output)
    assert check["usable_window"] == 121_600  # check and recover: one usable window


# ------------------------------------------------------------------------ zones


def _turn(n: int) -> Message:
    return Message(Role.ASSISTANT, (TextBlock(f"step {n}: reading the parser"),), id=f"r{n}", usage=Usage())


def _actions(info: ModelInfo, fills: list[int], profile: Profile | None = None) -> list[Action]:
    monitor = Monitor(info=info, profile=profile or default_profile())
    monitor.observe(Message(Role.USER, (TextBlock("fix the failing parser test"),)))
    return [monitor.observe(_turn(n), fill=f).action for n, f in enumerate(fills)]


def test_199k_of_a_1m_window_is_not_critical_and_not_restart() -> None:
    info = REG.lookup("claude-opus-5-5")
    monitor = Monitor(info=info, profile=default_profile())
    monitor.observe(Message(Role.USER, (TextBlock("fix the failing parser test"),)))
    last = monitor.observe(_turn(0), fill=199_000)
    assert last.zone.level < Zone.RED.level
    assert last.action not in (Action.RESTART, Action.HALT, Action.TRUNCATE)


def test_gpt_4o_truncates_before_it_halts() -> None:
    # issue: warn -> re-anchor -> halt at 86% with no truncation (usable window 111,616)
    info = REG.lookup("gpt-4o")
    assert info.usable_window == 111_616
    fills = [round(f * info.usable_window) for f in (0.3, 0.6, 0.75, 0.86)]
    actions = _actions(info, fills)
    assert Action.TRUNCATE in actions
    first_stop = next(i for i, a in enumerate(actions) if a in (Action.HALT, Action.RESTART))
    assert actions.index(Action.TRUNCATE) < first_stop


_MODEL_IDS = sorted({f.name for f in FAMILIES} | {m["id"] for p in TABLE["providers"] for m in p["models"]})


def _zone_case(model_id: str, stated: int | None, usable_stated: bool) -> ModelInfo:
    info = REG.lookup(model_id)
    return info.with_window(stated, usable=usable_stated) if stated else info


@settings(max_examples=300, deadline=None)
@given(
    model_id=st.sampled_from(_MODEL_IDS),
    stated=st.one_of(st.none(), st.integers(min_value=4_000, max_value=4_000_000)),
    usable_stated=st.booleans(),
)
def test_zones_stay_ordered_inside_the_usable_window(
    model_id: str, stated: int | None, usable_stated: bool
) -> None:
    info = _zone_case(model_id, stated, usable_stated)
    profile = default_profile()
    z = profile.zones(info)
    usable = info.usable_window
    assert 0 < z.sweet_spot < z.compact_zone < z.hard_limit <= usable
    # the compact zone (truncate) starts below the critical pressure gate (halt)
    assert z.compact_zone < profile.pressure_critical * min(z.hard_limit, usable)
    # the capacity zones themselves are ordered inside the usable window
    assert profile.window_yellow < profile.window_orange < profile.window_critical
    assert profile.window_critical < profile.window_autocompact <= 1


@settings(max_examples=60, deadline=None)
@given(
    model_id=st.sampled_from(_MODEL_IDS),
    stated=st.one_of(st.none(), st.integers(min_value=20_000, max_value=2_000_000)),
    usable_stated=st.booleans(),
)
def test_a_rising_fill_truncates_before_it_halts_or_restarts(
    model_id: str, stated: int | None, usable_stated: bool
) -> None:
    info = _zone_case(model_id, stated, usable_stated)
    # steps of 5% of the hard limit (or of the usable window, when smaller), up to the usable window
    step = min(default_profile().zones(info).hard_limit, info.usable_window) / 20
    fills = [round(step * k) for k in range(1, int(info.usable_window / step) + 1)]
    actions = _actions(info, fills)
    stops = [i for i, a in enumerate(actions) if a in (Action.HALT, Action.RESTART)]
    assert stops, actions
    assert Action.TRUNCATE in actions[: stops[0]], actions


def test_zone_scaling_is_a_profile_setting_shown_with_its_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shown = json.loads(invoke("config", "show", "--json").output)
    profile = {s["key"]: s for s in shown["profile"]}
    assert profile["profile.zone_window_exponent"]["origin"] == "default"
    assert profile["profile.zone_reference_window"]["value"] == 200_000
    (tmp_path / ".ctxhealth.toml").write_text("[profile]\nzone_window_exponent = 0.0\n")
    shown = json.loads(invoke("config", "show", "--json").output)
    setting = {s["key"]: s for s in shown["profile"]}["profile.zone_window_exponent"]
    assert setting["value"] == 0.0 and setting["origin"].endswith(".ctxhealth.toml")
    # exponent 0: the spec's absolute zones at any window
    flat = default_profile().with_overrides({"zone_window_exponent": 0.0})
    assert flat.zones(REG.lookup("claude-opus-5-5")).hard_limit == 180_000
    assert default_profile().zones(REG.lookup("claude-opus-5-5")).hard_limit > 180_000


def test_config_show_states_the_usable_window_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = invoke("config", "show").output
    assert "genai-prices" in text
    assert "20,000" in text and "13,000" in text  # Claude Code: min(max output, 20K) + 13K
    monkeypatch.setenv("CTXHEALTH_MODEL", "claude-sonnet-4-5")
    assert (
        "claude-sonnet-4-5: usable window 167,000 = 200,000 - 20,000 - 13,000"
        in invoke("config", "show").output
    )


# ------------------------------------------------------------------------ ctxhealth models, check


def test_models_command_says_where_each_fact_comes_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".ctxhealth.toml").write_text('[models."claude-opus-5-5"]\ntier = "compact"\n')
    doc = json.loads(invoke("models", "claude-opus-5-5", "--json").output)
    assert doc["tier"] == {"value": "compact", "from": f"config {tmp_path / '.ctxhealth.toml'}"}
    assert doc["window"]["from"].startswith("genai-prices ")
    assert doc["package"]["name"] == "genai-prices" and doc["package"]["version"]
    assert doc["override"]["prefix"] == "claude-opus-5-5"
    stated = json.loads(
        invoke("models", "gpt-4o", "--window", "64000", "--window-is-usable", "--json").output
    )
    assert stated["window"]["value"] == stated["usable_window"] == 64_000
    listing = json.loads(invoke("models", "--json").output)
    assert {f["name"] for f in listing["families"]} >= {"claude-opus", "claude-sonnet", "gpt-4o-mini"}
    assert listing["overrides"][0]["prefix"] == normalise_model_id("claude-opus-5-5")[0]


def test_check_names_an_unknown_model_and_how_to_configure_it(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "id": "r1",
            "content": "ok",
            "usage": {"prompt_tokens": 900, "completion_tokens": 5},
        },
    ]
    path.write_text(json.dumps({"model": "acme-coder-9", "messages": messages}))
    report = json.loads(invoke("check", "--json", str(path)).output)
    assert report["model_known"] is False
    assert any("tier unknown" in n and '[models."acme-coder-9"]' in n for n in report["model_notes"])
    assert "tier unknown" in invoke("check", str(path)).output


def test_status_line_and_doctor_name_an_unknown_model(tmp_path: Path) -> None:
    from ctxhealth.integrations.claude_code.doctor import _model_checks
    from ctxhealth.integrations.claude_code.statusline import render_status
    from test_claude_code_statusline import _payload, _transcript

    transcript = _transcript(tmp_path / "t.jsonl", [20_000, 40_000])
    transcript.write_text(transcript.read_text().replace("claude-sonnet-4-5-20250929", "acme-coder-9"))
    payload = _payload("claude-statusline-legacy.json", transcript).replace(
        "claude-sonnet-4-5-20250929", "acme-coder-9"
    )
    line = render_status(payload, home=str(tmp_path / "h"), color=False)
    assert "unknown model acme-coder-9" in line
    known = render_status(
        _payload("claude-statusline-legacy.json", _transcript(tmp_path / "k.jsonl", [20_000])),
        home=str(tmp_path / "h2"),
        color=False,
    )
    assert "unknown model" not in known
    (check,) = _model_checks("acme-coder-9")
    assert check.status.value == "warn" and "tier unknown" in check.detail
    (ok,) = _model_checks("claude-opus-5-5")
    assert ok.status.value == "ok" and "1,000,000" in ok.detail


def test_check_at_199k_of_the_default_claude_code_model(tmp_path: Path) -> None:
    # the issue: 199K of claude-opus-5-5's 1M window was critical, cost unknown, decision restart
    path = tmp_path / "chat.json"
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the failing parser test"}]
    for n, fill in enumerate([40_000, 120_000, 199_000]):
        usage = {"prompt_tokens": fill, "completion_tokens": 50}
        messages.append({"role": "assistant", "id": f"r{n}", "content": "reading the parser", "usage": usage})
        messages.append({"role": "user", "content": "go on with the parser test"})
    path.write_text(json.dumps({"model": "claude-opus-5-5", "messages": messages[:-1]}))
    report = json.loads(invoke("check", "--json", str(path)).output)
    assert (report["model_known"], report["tier"], report["window"]) == (True, "full", 1_000_000)
    assert report["zone"] not in ("red", "critical")
    assert report["action"] not in ("restart", "halt")
    assert report["cost_usd"] is not None and report["cost_usd"] > 0


def test_install_derives_the_model_table_so_hooks_only_read_it(tmp_path: Path) -> None:
    home = Path(os.environ["CTXHEALTH_HOME"])  # the isolated home of this test
    claude = tmp_path / "claude"
    claude.mkdir()
    args = ["install", "claude-code", "--claude-dir", str(claude), "--python", sys.executable]
    assert invoke(*args).exit_code == 0  # a dry run derives nothing
    assert not list(home.glob("cache/models/genai_prices-*.json"))
    assert invoke(*args, "--apply").exit_code == 0
    assert len(list(home.glob("cache/models/genai_prices-*.json"))) == 1


@pytest.mark.parametrize(
    ("model_id", "window", "tier"),
    [
        ("claude-fable-5", 1_000_000, Tier.FULL),
        ("claude-fable-5-3", 1_000_000, Tier.FULL),
        ("claude-mythos-5-3", 1_000_000, Tier.FULL),
        ("claude-opus-5-6", 1_000_000, Tier.FULL),
        ("claude-haiku-6", 1_000_000, Tier.COMPACT),
        ("claude-opus-4-9", 1_000_000, Tier.FULL),
    ],
)
def test_claude_models_after_the_4_6_generation_have_1m_and_claude_codes_reserve(
    model_id: str, window: int, tier: Tier
) -> None:
    """Claude Code's model table (2.1.332) gives every model after the 4.6 generation, Fable and Mythos
    included, a native 1M window; a model the price package does not list yet reads the same, with the
    full tier and Claude Code's reserve (Fable was an unknown model: compact tier, no reserve)."""
    info = REG.lookup(model_id)
    assert info.known and info.tier is tier and info.window == window
    assert info.usable_window == window - 20_000 - 13_000


def test_gemma_is_a_local_family_with_the_window_gemini_cli_gives_gemma_4() -> None:
    """Gemini CLI 0.61 runs ``gemma-4-31b-it`` with a 256K token limit; it was an unknown model (128K)."""
    info = REG.lookup("gemma-4-31b-it")
    assert info.known and info.tier is Tier.LOCAL and info.window == 256_000
    assert REG.lookup("gemma-3-27b-it").window == 131_072
