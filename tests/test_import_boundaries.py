"""Import boundaries that keep hooks and the status line fast: the per-turn path loads only what
it uses. Checked in a fresh interpreter, since the test process has imported everything."""

from __future__ import annotations

import json
import subprocess
import sys


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; import json; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


def test_monitor_loads_only_the_scoring_part_of_risk() -> None:
    modules = loaded_after("import ctxhealth.monitor")
    risk = {m for m in modules if m.startswith("ctxhealth.risk")}
    assert risk <= {"ctxhealth.risk", "ctxhealth.risk.model"}, risk
    for heavy in ("click", "ctxhealth.sources.reader", "csv", "random"):
        assert heavy not in modules, heavy


def test_package_import_is_lazy() -> None:
    modules = loaded_after("import ctxhealth")
    assert not {m for m in modules if m.startswith(("ctxhealth.monitor", "ctxhealth.sources", "click"))}
