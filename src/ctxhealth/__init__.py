"""ctxhealth: keep long-running LLM agents healthy. The public API lives here.

Names are imported lazily (on first attribute access) so that hooks and the status line,
which import ``ctxhealth`` on every agent turn, pay only for what they use.
Add a public name by adding it to ``_EXPORTS`` (name -> module); ``__all__`` follows.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "CtxHealthError": "ctxhealth.errors",
    "Message": "ctxhealth.model",
    "Role": "ctxhealth.model",
    "Session": "ctxhealth.model",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxhealth' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
