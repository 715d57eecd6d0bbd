"""The running hash over a conversation's items, so a request is matched against what was seen.

The chain at ``n`` hashes the API style, the head (system prompt / instructions) and the compact JSON
of the first ``n`` items. A session keeps the chain
at the number of items it has observed: the next request continues it when its own chain at that
length is the same value (the conversation only grew), and is re-observed from the start (a reset)
when it is not (the agent compacted or edited its history, or changed its system prompt). Item bytes
leave ``cache_control`` markers out (see :func:`~ctxhealth.integrations.wire.base.canonical`).

Only the lengths asked for are computed (the known prefix, the whole request, the rewritten prefix):
each is one JSON encoding and one hash in C over bytes the request already holds, with no Python
work per item (a JSON array's encoding is its items' encodings in order, so the chain at ``n`` is
the same value whichever request it is computed from).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from ctxhealth.integrations.wire.base import canonical

DIGEST_SIZE = 16


def chain_values(style: str, head: Any, items: list[Any], lengths: Iterable[int]) -> dict[int, bytes]:
    """The chain at each of ``lengths`` (those from 0 to ``len(items)``).

    One pass: the items between two wanted lengths are encoded once, and the hash of the array so far
    is read at each wanted length by closing a copy of it (``[a,b`` + ``]``), which equals hashing
    ``canonical(items[:n])`` whole.
    """
    running = hashlib.blake2b(digest_size=DIGEST_SIZE)
    running.update(style.encode() + b"\x00" + canonical(head) + b"\x00[")
    out: dict[int, bytes] = {}
    done = 0
    for n in sorted({n for n in lengths if 0 <= n <= len(items)}):
        if n > done:
            inner = canonical(items[done:n])[1:-1]
            running.update(b"," + inner if done else inner)
            done = n
        closed = running.copy()
        closed.update(b"]")
        out[n] = closed.digest()
    return out


def session_digest(style: str, seed: str) -> str:
    """A stable session key from the system prompt + first user message (see the adapters)."""
    return hashlib.blake2b(f"{style}\x00{seed}".encode(), digest_size=12).hexdigest()
