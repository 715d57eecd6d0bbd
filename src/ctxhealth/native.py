"""Which text kernels run: the C extension ``ctxhealth._native`` or the Python definitions.

The Monitor's per-reply text work (folding a reply into word runs, their content words, the hedge
count, sentence hashes, the indicators' hint search) and the failure verdict's text gate have one
Python definition of each function, next to its caller (:mod:`~ctxhealth.signals.text`,
:mod:`~ctxhealth.signals.hedging`, :mod:`~ctxhealth.signals.indicators`,
:mod:`~ctxhealth.failures`); the extension computes the same results in C and is used
when it was built at install (it is optional: without a compiler the package installs and runs the
Python definitions). :data:`KERNELS` is the loaded extension, or None. This is a base module: the
one picker, below :mod:`~ctxhealth.failures` and the signals, which all read it.

``CTXHEALTH_NATIVE=0`` forces the Python definitions; ``CTXHEALTH_NATIVE=require`` makes a missing
or broken extension an error at import (CI sets it, so the native path is the one tested).
"""

from __future__ import annotations

import os
from types import ModuleType

SWITCH = "CTXHEALTH_NATIVE"
"""The environment variable: ``0`` for the Python definitions, ``require`` to insist on C."""


def _load() -> ModuleType | None:
    wanted = os.environ.get(SWITCH, "").strip().lower()
    if wanted in ("0", "off", "false", "no"):
        return None
    try:
        import ctxhealth._native as _native
    except ImportError as exc:
        if wanted == "require":
            raise ImportError(
                f"{SWITCH}=require but the C extension ctxhealth._native is not built ({exc}); "
                "reinstall with a C compiler and the Python headers, or unset the variable"
            ) from exc
        return None
    return _native


KERNELS = _load()
"""The C kernels (``ctxhealth._native``) when built and not switched off, else None."""
