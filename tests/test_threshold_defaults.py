"""The spec's default thresholds live in one import-free module (``ctxhealth.policy.defaults``) that
the Profile, the pressure gate, the ``state checkpoint`` command and the status line's fallback
all read."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from ctxhealth.cli.state import checkpoint_state_cmd
from ctxhealth.integrations.claude_code import assess
from ctxhealth.policy import Profile, defaults
from ctxhealth.state.gate import Thresholds

GATES = (defaults.PRESSURE_WARNING, defaults.PRESSURE_COMPRESS, defaults.PRESSURE_CRITICAL)


def test_the_gates_are_the_spec_numbers() -> None:
    assert GATES == (0.55, 0.70, 0.85)


def test_profile_gate_cli_and_fallback_share_the_pressure_gates() -> None:
    p = Profile()
    assert (p.pressure_warning, p.pressure_compress, p.pressure_critical) == GATES
    g = Thresholds()
    assert (g.warning, g.compress, g.critical) == GATES
    assert Thresholds.from_profile(p) == g
    # the command has no gates of its own: with no flag it takes the configured profile's
    cli_defaults = {o.name: o.default for o in checkpoint_state_cmd.params}
    assert (cli_defaults["warning"], cli_defaults["compress"], cli_defaults["critical"]) == (None, None, None)
    from ctxhealth.cli.state import _gate_thresholds

    assert _gate_thresholds(None, None, None) == g


def test_the_status_line_keeps_no_window_of_its_own() -> None:
    """The status line's fast reading has no built-in window or zones (it had a 200,000 / 187,000
    fallback that disagreed with the registry): every window-sized number comes from the one path."""
    tree = ast.parse(Path(assess.__file__).read_text("utf-8"))
    numbers = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is int]
    assert not [n for n in numbers if n >= 10_000], numbers


def test_the_defaults_module_imports_nothing() -> None:
    tree = ast.parse(Path(defaults.__file__).read_text("utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    code = (
        "import sys, json; import ctxhealth.integrations.claude_code.assess; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ctxhealth.policy'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["ctxhealth.policy", "ctxhealth.policy.defaults"]
