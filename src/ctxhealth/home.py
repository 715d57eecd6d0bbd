"""Where ctxhealth keeps its files when no ``--home`` says otherwise: ``$CTXHEALTH_HOME``, else
``~/.ctxhealth`` (the ledger, the hooks' tail state and checkpoints, the model catalog's cached table).

The one reading of that default: the configuration (:func:`ctxhealth.config.resolve_home`, where a
``--home`` flag comes first), the hooks and status line, and the model catalog of a process that never
named a home (a library user's) all take it. A base module: it imports nothing of ctxhealth.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

HOME_ENV = "CTXHEALTH_HOME"
DEFAULT_HOME = "~/.ctxhealth"


def default_home(env: Mapping[str, str] | None = None) -> str:
    """``$CTXHEALTH_HOME`` (from ``env``, the process's environment by default), else ``~/.ctxhealth``,
    with ``~`` expanded."""
    value = (os.environ if env is None else env).get(HOME_ENV)
    return os.path.expanduser(value or DEFAULT_HOME)
