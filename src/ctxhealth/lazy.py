"""Lazy re-exports: a package names what it offers, and each name is imported on first use.

Hooks and the status line import ``ctxhealth`` on every agent turn; a package ``__init__`` that
imported all it re-exports would make each of them pay for everything. A package keeps a map
``name -> module`` and forwards its module-level ``__getattr__`` to :func:`load_export`.
"""

from __future__ import annotations

import importlib

# Only the type checker needs these; hooks import this module on every turn.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping
    from typing import Any


def load_export(
    namespace: MutableMapping[str, Any], exports: Mapping[str, str], package: str, name: str
) -> Any:
    """Import ``name`` from the module ``exports`` maps it to, cache it in ``namespace``, return it.

    A module path starting with ``.`` is relative to ``package``; ``module:attribute`` exports the
    module's ``attribute`` under ``name``. Unknown names raise ``AttributeError`` as Python expects
    from a module ``__getattr__``.
    """
    target = exports.get(name)
    if target is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module, package), attribute or name)
    namespace[name] = value
    return value
