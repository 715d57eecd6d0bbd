"""The running hash over a conversation's items, so a request is matched against what was seen.

``chain[0]`` hashes the API style and the head (system prompt / instructions); ``chain[i + 1]``
hashes ``chain[i]`` with the digest of item ``i``. A session keeps the chain value after the items it
has observed: the next request continues it when its chain at that length is the same value (the
conversation only grew), and is re-observed from the start (a reset) when it is not (the agent
compacted or edited its history, or changed its system prompt). Digests leave ``cache_control``
markers out (see :func:`~ctxhealth.integrations.wire.base.item_digest`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ctxhealth.integrations.wire.base import canonical, item_digest

DIGEST_SIZE = 16


def chain_start(style: str, head: Any) -> bytes:
    return hashlib.blake2b(style.encode() + b"\x00" + canonical(head), digest_size=DIGEST_SIZE).digest()


def chain_of(style: str, head: Any, items: list[Any]) -> list[bytes]:
    """The chain values after 0, 1, ... ``len(items)`` items."""
    value = chain_start(style, head)
    out = [value]
    for item in items:
        value = hashlib.blake2b(value + item_digest(item), digest_size=DIGEST_SIZE).digest()
        out.append(value)
    return out


def session_digest(style: str, seed: str) -> str:
    """A stable session key from the system prompt + first user message (see the adapters)."""
    return hashlib.blake2b(f"{style}\x00{seed}".encode(), digest_size=12).hexdigest()
