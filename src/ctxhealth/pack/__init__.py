"""Context assembly: pack what a task needs from a repository under a hard token budget.

``pack(repo, task, budget=..., ...) -> Pack`` (``.text``, ``.manifest``) is the entry point
(:mod:`ctxhealth.pack.assemble`); ``TaskType`` and ``OutputFormat`` name its choices. Imports are
lazy: the heavy parts (numpy, tree-sitter) load only when packing, numpy only to build a BM25 index.
"""

from __future__ import annotations

from typing import Any

from ctxhealth.lazy import load_export

_EXPORTS = {
    "OutputFormat": "ctxhealth.pack.render",
    "Pack": "ctxhealth.pack.assemble",
    "TaskType": "ctxhealth.pack.budget",
    "pack": "ctxhealth.pack.assemble",
}

__all__ = sorted(_EXPORTS)


def missing_extra(exc: ImportError) -> Exception:
    """What to raise for an import that failed: the pack extra's numpy (imported only to build a
    BM25 index) is named with the install hint; anything else is raised as it is."""
    if exc.name != "numpy":
        return exc
    from ctxhealth.errors import EnvironmentProblem

    return EnvironmentProblem(
        f"packing needs {exc.name}, which is not installed",
        hint="install the pack extra: pip install 'ctxhealth[pack]'",
    )


def __getattr__(name: str) -> Any:
    try:
        return load_export(globals(), _EXPORTS, __name__, name)
    except ImportError as exc:
        problem = missing_extra(exc)
        if problem is exc:
            raise
        raise problem from exc
