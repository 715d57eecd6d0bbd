"""Properties of ``pack`` (hypothesis): the payload never exceeds the budget, L4 is never dropped,
the rules and specs levels do not change when the source files do, and equal input gives equal
bytes in separate processes (with different hash seeds)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxhealth.accounting.tokens import count_batch
from ctxhealth.pack import pack

REPO_ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "invoice",
    "total",
    "tax",
    "route",
    "parser",
    "render",
    "cache",
    "user",
    "order",
    "refund",
    "Shop",
    "_id",
]
NAMES = ["a.py", "pkg/b.py", "pkg/c.py", "web/d.ts", "lib/e.go", "notes.md", "pkg/__init__.py", "f.rs"]

identifier = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map("_".join)
line = st.one_of(
    identifier.map(lambda n: f"def {n}(x):"),
    identifier.map(lambda n: f"    return {n} + 1  # note"),
    identifier.map(lambda n: f"class {n.title()}:"),
    st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join),
    st.just(""),
    st.just("from pkg import b"),
)
content = st.lists(line, max_size=60).map("\n".join)
files = st.dictionaries(st.sampled_from(NAMES), content, min_size=1, max_size=6)
task = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
errors = st.one_of(
    st.none(),
    st.lists(
        st.sampled_from(
            ["Traceback (most recent call last):", '  File "a.py", line 3', "KeyError: x", "log"]
        ),
        min_size=1,
        max_size=120,
    ).map("\n".join),
)
rules = st.lists(st.sampled_from(WORDS), min_size=1, max_size=400).map(" ".join)
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tokens(text: str) -> int:
    return int(count_batch([text], "o200k_base")[0][0])


def write(root: Path, tree: dict[str, str]) -> None:
    for rel, text in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@FAST
@given(tree=files, task=task, budget=st.integers(min_value=200, max_value=4_000), errors=errors, rules=rules)
def test_never_over_budget_and_error_output_never_dropped(
    tree: dict[str, str], task: str, budget: int, errors: str | None, rules: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write(root, tree)
        (root / "AGENTS.md").write_text(rules)
        for kind in ("code", "debug"):
            result = pack(root, task, budget=budget, errors=errors, task_type=kind)
            assert tokens(result.text) <= budget
            assert result.manifest["tokens"] <= budget
            if errors is not None:
                assert "L4" in result.manifest["levels"]
                assert errors.splitlines()[-1][-8:] in result.text


@FAST
@given(tree=files, extra=files, task=task, budget=st.integers(min_value=300, max_value=4_000), rules=rules)
def test_rules_and_specs_bytes_do_not_depend_on_the_source_files(
    tree: dict[str, str], extra: dict[str, str], task: str, budget: int, rules: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        write(root, tree)
        spec = Path(tmp) / "spec.md"
        spec.write_text(rules[::-1])
        (root / "AGENTS.md").write_text(rules)
        before = pack(root, task, budget=budget, specs=[spec])
        write(root, {f"more/{k}": v + "\nchanged" for k, v in extra.items()})
        for rel in tree:
            (root / rel).write_text(tree[rel] + "\ninvoice total tax")
        after = pack(root, task, budget=budget, specs=[spec])
        for level in ("L1", "L2"):
            assert before.manifest["level_digests"].get(level) == after.manifest["level_digests"].get(level)
        prefix = before.text.split("## L3", 1)[0].split("## L4", 1)[0]
        # the same L1/L2 bytes; only the blank line before a following level is absent when no level follows
        assert after.text.startswith(prefix.rstrip("\n") + "\n")


_CHILD = """
import hashlib, json, sys
from pathlib import Path
from ctxhealth.pack import pack
for spec in json.loads(sys.argv[1]):
    result = pack(Path(spec["root"]), spec["task"], budget=spec["budget"], errors="ValueError: x")
    print(hashlib.sha256(result.text.encode()).hexdigest())
    print(hashlib.sha256(json.dumps(result.manifest, sort_keys=True).encode()).hexdigest())
"""


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(files, task, st.integers(min_value=300, max_value=3_000)), min_size=4, max_size=4
    )
)
def test_same_input_same_bytes_across_processes(cases: list[tuple[dict[str, str], str, int]]) -> None:
    # One drawn example holds four inputs, so that two child processes (not eight) check them all.
    with tempfile.TemporaryDirectory() as tmp:
        specs: list[dict[str, object]] = []
        expected: list[str] = []
        for n, (tree, task, budget) in enumerate(cases):
            root = Path(tmp) / str(n)
            write(root, tree)
            specs.append({"root": str(root), "task": task, "budget": budget})
            local = pack(root, task, budget=budget, errors="ValueError: x")
            expected.append(hashlib.sha256(local.text.encode()).hexdigest())
            expected.append(hashlib.sha256(json.dumps(local.manifest, sort_keys=True).encode()).hexdigest())
        children = [  # two processes with different hash seeds, run side by side
            subprocess.Popen(
                [sys.executable, "-c", _CHILD, json.dumps(specs)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONHASHSEED": seed},
                cwd=REPO_ROOT,
            )
            for seed in ("1", "2")
        ]
        for child in children:
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, err
            assert out.split() == expected
