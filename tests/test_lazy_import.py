"""The suite's ``lazy()`` stand-in keeps heavy SDKs out of collection: pytest probes every module
global for private names (``_mock_name``, ``_pytestfixturefunction``), and such a probe must not
import the module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lazy_import import lazy


def test_private_probe_does_not_import() -> None:
    missing = lazy("ctxhealth_no_such_module")
    for name in ("_mock_name", "_pytestfixturefunction", "__wrapped__"):
        with pytest.raises(AttributeError):
            getattr(missing, name)
    with pytest.raises(ModuleNotFoundError):
        _ = missing.anything  # a public name does import it


def test_public_name_reads_the_module() -> None:
    assert lazy("json").dumps([1]) == "[1]"


HEAVY_SDKS = (
    "anthropic",
    "openai",
    "mcp",
    "langchain",
    "langchain_core",
    "langsmith",
    "playwright",
    "minisweagent",
)


def test_no_test_module_imports_a_heavy_sdk_at_collection() -> None:
    # Collecting the suite imports every test module: an SDK imported at module level costs every run
    # (anthropic alone was 1.7 s of CPU). Import it inside the test, or through lazy().

    offenders = []
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        source = path.read_text("utf-8")
        if '__name__ == "__main__"' in source:
            continue  # a script the tests run in a process of its own, never imported
        for node in ast.parse(source).body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.name}:{node.lineno} {n}" for n in names if n.split(".")[0] in HEAVY_SDKS]
    assert offenders == []
