"""Context assembly: pack what a task needs from a repository under a hard token budget.

``pack(repo, task, budget=..., ...) -> Pack`` (``.text``, ``.manifest``) is the entry point
(:mod:`ctxhealth.pack.assemble`); ``TaskType`` and ``OutputFormat`` name its choices. Imports are
lazy: the heavy parts (numpy, tree-sitter) load only when packing.
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


def __getattr__(name: str) -> Any:
    try:
        return load_export(globals(), _EXPORTS, __name__, name)
    except ImportError as exc:
        if exc.name != "numpy":
            raise
        from ctxhealth.errors import EnvironmentProblem

        raise EnvironmentProblem(
            f"packing needs {exc.name}, which is not installed",
            hint="install the pack extra: pip install 'ctxhealth[pack]'",
        ) from exc
