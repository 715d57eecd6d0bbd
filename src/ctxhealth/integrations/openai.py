"""``ctxhealth.integrations.openai.wrap(client, mode=...)``: the health policy inside an
``openai.OpenAI`` / ``AsyncOpenAI`` client (needs ``pip install 'ctxhealth[openai]'``).

The same behaviour as the proxy (observe / advise / enforce; see :mod:`ctxhealth.integrations.guard`)
for every Chat Completions and Responses call of the returned client, sync or async, streamed or not::

    client = wrap(openai.OpenAI(), mode="enforce")
    client.chat.completions.create(model=..., messages=...)   # a halt raises BadRequestError

Pass ``guard=`` to share one guard (and read ``guard.status()``), ``home=`` to keep sessions and
records in the ledger there; ``x-ctxhealth-session`` in ``extra_headers`` names a session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from ctxhealth.integrations.guard import Guard, Mode
from ctxhealth.integrations.sdk import make_guard, wrap_client

__all__ = ["wrap"]

ClientT = TypeVar("ClientT")


def wrap(
    client: ClientT,
    mode: Mode | str = Mode.OBSERVE,
    *,
    guard: Guard | None = None,
    home: Path | None = None,
    model: str | None = None,
) -> ClientT:
    """A copy of ``client`` whose model requests go through the guard (see the module docstring)."""
    return wrap_client(client, guard if guard is not None else make_guard(mode, home, model))
