"""Each optional extra declares the packages its modules import: a fresh ``pip install
'ctxhealth[extra]'`` must be enough to run them."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ctxhealth"

_MODULE_TO_DISTRIBUTION = {"distributed": "dask"}  # dask[distributed] provides it


def _declared(extra: str) -> set[str]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return {re.split(r"[<>=\[ ;~!]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in extras[extra]}


def _third_party_imports(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {
        _MODULE_TO_DISTRIBUTION.get(name, name).replace("_", "-")
        for name in found
        if name not in sys.stdlib_module_names and name not in {"ctxhealth", "__future__"}
    }


@pytest.mark.parametrize("extra, folder", [("fleet", "fleet"), ("pack", "pack")])
def test_an_extra_declares_every_package_its_modules_import(extra: str, folder: str) -> None:
    base = {
        re.split(r"[<>=\[ ;~!]", spec, maxsplit=1)[0].lower()
        for spec in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    missing = _third_party_imports(SRC / folder) - _declared(extra) - base
    assert not missing, f"the {extra!r} extra does not declare {sorted(missing)}"
