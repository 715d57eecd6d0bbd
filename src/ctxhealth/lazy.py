"""Lazy re-exports: a package names what it offers, and each name is imported on first use. And
:func:`pattern`, the one way to compile a regular expression on first use.

Hooks and the status line import ``ctxhealth`` on every agent turn; a package ``__init__`` that
imported all it re-exports would make each of them pay for everything. A package keeps a map
``name -> module`` and forwards its module-level ``__getattr__`` to :func:`load_export`.
"""

from __future__ import annotations

import importlib

# Only the type checker needs these; hooks import this module on every turn.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Mapping, MutableMapping
    from typing import Any

_patterns: dict[tuple[str | bytes, int], Any] = {}


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


def pattern(source: str | bytes, flags: int = 0) -> re.Pattern[Any]:
    """``re.compile(source, flags)``, compiled on the first call and kept: for a pattern a typical
    run never needs (a fresh ``check`` or hook process would otherwise compile it at import)."""
    found = _patterns.get((source, flags))
    if found is None:
        import re

        found = _patterns[(source, flags)] = re.compile(source, flags)
    return found
