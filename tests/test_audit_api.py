"""The audit package's public names, and its place in the layers (nothing above it is imported)."""

from __future__ import annotations

import json
import subprocess
import sys

import ctxhealth.audit


def test_every_public_name_resolves_and_all_is_sorted() -> None:
    assert ctxhealth.audit.__all__ == sorted(ctxhealth.audit.__all__)
    for name in ctxhealth.audit.__all__:
        assert getattr(ctxhealth.audit, name) is not None, name


def test_the_audit_imports_nothing_from_the_layers_above_it() -> None:
    code = "import sys, json, ctxhealth.audit.run; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    above = ("ctxhealth.integrations", "ctxhealth.fleet", "ctxhealth.report", "ctxhealth.cli", "click")
    # ctxhealth.report.text comes in through recovery.checkpoint (not through the audit).
    loaded = [m for m in json.loads(done.stdout) if m.startswith(above)]
    assert set(loaded) <= {"ctxhealth.report", "ctxhealth.report.text"}, loaded
