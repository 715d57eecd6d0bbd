"""The layer order (``ctxhealth.layers.LAYERS``) holds for every import of every module.

Every import counts: module level, inside functions and under ``TYPE_CHECKING`` alike, since each
is a dependency someone has to reason about. The checker is tested on a small synthetic package
first, so a broken checker cannot pass the real one silently.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from ctxhealth.layers import LAYERS

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ctxhealth"


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    """The dotted name of the module at ``path`` and whether it is a package ``__init__``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def facade_lines(tree: ast.Module) -> set[int]:
    """Lines of the package root's typed front door: the imports under its top-level
    ``if TYPE_CHECKING:``, which only a type checker runs. They re-export the public API with its
    types, so they name every layer; at run time the root still imports only the base modules."""
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom | ast.Import):
                    lines.add(inner.lineno)
    return lines


def imported_modules(path: Path, root: Path, modules: set[str]) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every import of ``root``'s package in ``path``; ``from pkg import mod``
    names the module ``pkg.mod`` when that module exists. The root ``__init__``'s typed front door
    (:func:`facade_lines`) is not counted."""
    name, is_package = module_name(path, root)
    top = root.name
    tree = ast.parse(path.read_text("utf-8"), str(path))
    skipped = facade_lines(tree) if name == top else set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == top:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != top:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield node.lineno, sub if sub in modules else target


def unit_of(module: str) -> str:
    """The unit a dotted module name belongs to: its top-level module or subpackage."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(root: Path, layers: Sequence[Sequence[str]]) -> list[str]:
    """Every import under ``root`` against ``layers``, and every unit missing from them."""
    level = {unit: i for i, layer in enumerate(layers) for unit in layer}
    files = sorted(root.rglob("*.py"))
    modules = {module_name(p, root)[0] for p in files}
    problems: list[str] = []
    for unit in sorted({unit_of(m) for m in modules} - set(level)):
        problems.append(
            f"{root.name}.{unit} is in no layer: add it to LAYERS in ctxhealth/layers.py where it belongs"
        )
    for path in files:
        source = unit_of(module_name(path, root)[0])
        if source not in level:
            continue
        for line, target in imported_modules(path, root, modules):
            dest = unit_of(target)
            if dest == source or dest not in level:
                continue
            where = f"{path.relative_to(root.parent)}:{line}: {source} imports {target}"
            if level[dest] > level[source]:
                problems.append(f"{where} from a higher layer")
            elif level[dest] == level[source]:
                problems.append(f"{where}, a peer in the same layer")
    return problems


def test_every_import_follows_the_layer_order() -> None:
    problems = layer_violations(PACKAGE, LAYERS)
    assert not problems, "\n".join(problems)


def test_every_unit_is_named_once() -> None:
    units = [unit for layer in LAYERS for unit in layer]
    assert len(units) == len(set(units))


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    root = tmp_path / "toy"
    _write(
        root,
        {
            "__init__.py": "",
            "base.py": "",
            "low/__init__.py": "from toy import base\n",
            "low/a.py": "from . import b\nfrom .b import thing\nimport toy.base\n",
            "low/b.py": "thing = 1\n",
            "high/__init__.py": "from toy.low.a import thing\nfrom toy.low import b\n",
            "peer/__init__.py": "",
        },
    )
    return root


LAYERS_OF_TOY = (("base",), ("__init__",), ("low",), ("high", "peer"))


def test_checker_accepts_downward_and_internal_imports(toy: Path) -> None:
    assert layer_violations(toy, LAYERS_OF_TOY) == []


def test_checker_finds_upward_imports_wherever_they_are(toy: Path) -> None:
    (toy / "low" / "b.py").write_text(
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from toy.high import x\n\n"
        "def f():\n    from ..high import y\n"
    )
    problems = layer_violations(toy, LAYERS_OF_TOY)
    assert problems == [
        "toy/low/b.py:3: low imports toy.high from a higher layer",
        "toy/low/b.py:6: low imports toy.high from a higher layer",
    ]


def test_checker_finds_peer_imports_and_unknown_units(toy: Path) -> None:
    (toy / "peer" / "__init__.py").write_text("import toy.high\n")
    (toy / "extra.py").write_text("")
    problems = layer_violations(toy, LAYERS_OF_TOY)
    assert problems == [
        "toy.extra is in no layer: add it to LAYERS in ctxhealth/layers.py where it belongs",
        "toy/peer/__init__.py:1: peer imports toy.high, a peer in the same layer",
    ]


def test_checker_resolves_relative_imports_in_packages_and_modules(toy: Path) -> None:
    (toy / "base.py").write_text("from .low import b\n")
    (toy / "low" / "__init__.py").write_text("from .. import high\n")
    problems = layer_violations(toy, LAYERS_OF_TOY)
    assert problems == [
        "toy/base.py:1: base imports toy.low.b from a higher layer",
        "toy/low/__init__.py:1: low imports toy.high from a higher layer",
    ]


def test_only_the_roots_typed_front_door_may_name_higher_layers(toy: Path) -> None:
    (toy / "__init__.py").write_text(
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from toy.high import thing as thing\n"
        "from toy.low import b\n"
    )
    (toy / "low" / "a.py").write_text(
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from toy.high import x\n"
    )
    problems = layer_violations(toy, LAYERS_OF_TOY)
    assert problems == [
        "toy/__init__.py:4: __init__ imports toy.low.b from a higher layer",
        "toy/low/a.py:3: low imports toy.high from a higher layer",
    ]
