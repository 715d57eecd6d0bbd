"""Import boundaries that keep hooks and the status line fast: the per-turn path loads only what
it uses. Checked in a fresh interpreter, since the test process has imported everything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import CLIENT_MODULES

REPO = Path(__file__).resolve().parents[1]


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; import json; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def test_monitor_loads_only_the_scoring_part_of_risk() -> None:
    modules = loaded_after("import ctxhealth.monitor")
    risk = {m for m in modules if m.startswith("ctxhealth.risk")}
    assert risk <= {"ctxhealth.risk", "ctxhealth.risk.model"}, risk
    assert not {m for m in modules if m.startswith("ctxhealth.evaluation")}
    for heavy in ("click", "ctxhealth.sources.reader", "csv", "random"):
        assert heavy not in modules, heavy


def test_package_import_is_lazy() -> None:
    modules = loaded_after("import ctxhealth")
    assert not {m for m in modules if m.startswith(("ctxhealth.monitor", "ctxhealth.sources", "click"))}


def test_a_small_tail_feed_does_not_import_the_typed_schema(tmp_path: Path) -> None:
    """The model's classes are ``msgspec.Struct`` (so msgspec itself is loaded), but a small feed
    takes the lenient path: the typed schema and its decoder are not built."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((REPO / "examples" / "claude-code-session.jsonl").read_bytes())
    modules = loaded_after(
        "from ctxhealth.integrations.claude_code import tail; "
        "from ctxhealth.sources.claude_code import ClaudeCodeTail; "
        f"assert ClaudeCodeTail().feed(open({str(transcript)!r}, 'rb').read())"
    )
    assert "ctxhealth.integrations.claude_code.tail" in modules
    assert {"ctxhealth.sources.claude_code.typed", "ctxhealth.sources.claude_code.schema"} & modules == set()


def test_the_hooks_per_turn_path_compiles_no_rarely_used_patterns() -> None:
    modules = loaded_after(
        "import ctxhealth.integrations.claude_code.tail; "
        "import ctxhealth.signals.indicators as i; assert i._pattern.cache_info().currsize == 0; "
        "import ctxhealth.redact; from ctxhealth import lazy; assert not lazy._patterns, lazy._patterns"
    )
    assert "ctxhealth.redact" in modules


def test_the_status_line_and_hook_commands_start_as_small_clients() -> None:
    """Before asking the per-turn helper, a command has loaded only the package roots, the CLI entry
    and the helper's client: no pipeline module, no dataclasses, typing or socket module (no ``re``
    or ``json`` either: ``tests/test_helper.py`` checks those, this probe prints with ``json``)."""
    for module in ("ctxhealth.cli.hook", "ctxhealth.cli.statusline"):
        modules = loaded_after(f"import {module}")
        ours = {m for m in modules if m.startswith("ctxhealth")}
        assert ours <= CLIENT_MODULES - {"ctxhealth.home"}, ours  # the home is read when a call starts
        for heavy in ("dataclasses", "typing", "socket", "subprocess", "sqlite3", "msgspec", "orjson"):
            assert heavy not in modules, (module, heavy)


def test_the_sniffers_config_and_failure_rules_compile_no_pattern_at_import() -> None:
    # a walk of Claude Code sessions never asks the other formats' sniffers; a config error is rare
    loaded_after(
        "import ctxhealth.sources.sniff, ctxhealth.config, ctxhealth.failures; from ctxhealth import lazy; "
        "assert not lazy._patterns, lazy._patterns; "
        'from ctxhealth.sources import sniff; assert sniff.swe_agent(b\'{"history": [], "info": {}}\'); '
        "assert list(lazy._patterns) == [(sniff._SWE_AGENT_HEAD, 0)]"
    )


def test_a_lazy_pattern_is_the_compiled_pattern_kept_per_source_and_flags() -> None:
    import re

    from ctxhealth.lazy import pattern

    assert pattern(r"ab+c") is pattern(r"ab+c")
    assert pattern(r"ab+c") == re.compile(r"ab+c")
    assert pattern(r"ab+c", re.I).match("ABBC") and not pattern(r"ab+c").match("ABBC")
    assert pattern(rb"x\d").match(b"x1")
