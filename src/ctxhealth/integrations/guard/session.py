"""One conversation as the guard knows it: its monitor, how far it was observed, its rewrite.

A :class:`GuardSession` holds the :class:`~ctxhealth.monitor.Monitor`, the number of items observed
and the chain value after them (:mod:`.prefix`), the usage of the latest response (attached to the
assistant message that shows up in the next request), the rewrite in force after an enforced
recovery (the recovered items that replace the first ``count`` items of every later request), and
counters for the status page. :meth:`GuardSession.dump` / :meth:`GuardSession.load` turn it into
JSON-safe data (the monitor as its snapshot) so it survives a restart of the host.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from ctxhealth.integrations.wire.usage import ResponseFacts
from ctxhealth.model import Usage
from ctxhealth.monitor import Monitor

STATE_KIND = "ctxhealth.guard-session"
STATE_VERSION = 1


@dataclass(slots=True)
class Rewrite:
    """After an enforced recovery: requests whose first ``count`` items chain to ``chain`` are sent
    with ``items`` in their place."""

    count: int
    chain: bytes
    items: list[Any]


@dataclass(slots=True)
class GuardSession:
    key: str
    style: str
    monitor: Monitor
    count: int = 0
    chain: bytes = b""
    rewrite: Rewrite | None = None
    pending: ResponseFacts | None = None
    noted: str | None = None  # the action of the current note episode
    halted: bool = False
    requests: int = 0
    resets: int = 0
    observed: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    last_action: str = "continue"
    last: dict[str, Any] = field(default_factory=dict)
    reported_fill: int | None = None
    agent: str | None = None  # the self-compacting agent its headers name (claude-code, codex ...)
    self_compacting: bool = False  # the agent compacts itself (its compaction request was seen)
    compactions: int = 0
    cleared_at: int = -1  # the request length at the latest clearing in place of a restart
    system: str = ""  # digest of the latest request's system prompt (see ``guard.system_digest``)
    dirty: bool = True
    touched: float = 0.0  # monotonic time of the latest request or response (not saved)
    saved: float = 0.0  # monotonic time of the latest hand-over to the store (not saved)

    def dump(self) -> dict[str, Any]:
        """JSON-safe state (the monitor as :meth:`Monitor.snapshot`)."""
        pending = self.pending
        return {
            "kind": STATE_KIND,
            "version": STATE_VERSION,
            "key": self.key,
            "style": self.style,
            "monitor": self.monitor.snapshot(),
            "count": self.count,
            "chain": base64.b64encode(self.chain).decode(),
            "rewrite": None
            if self.rewrite is None
            else {
                "count": self.rewrite.count,
                "chain": base64.b64encode(self.rewrite.chain).decode(),
                "items": self.rewrite.items,
            },
            "pending": None
            if pending is None
            else {
                "usage": None if pending.usage is None else _usage_dict(pending.usage),
                "model": pending.model,
                "response_id": pending.response_id,
            },
            "noted": self.noted,
            "halted": self.halted,
            "requests": self.requests,
            "resets": self.resets,
            "observed": self.observed,
            "actions": dict(self.actions),
            "last_action": self.last_action,
            "last": self.last,
            "reported_fill": self.reported_fill,
            "agent": self.agent,
            "self_compacting": self.self_compacting,
            "compactions": self.compactions,
            "cleared_at": self.cleared_at,
            "system": self.system,
        }

    @classmethod
    def load(cls, data: dict[str, Any], monitor: Monitor) -> GuardSession:
        """A session from :meth:`dump` data, with ``monitor`` restored by the caller."""
        rewrite = data.get("rewrite")
        pending = data.get("pending")
        usage = pending.get("usage") if isinstance(pending, dict) else None
        return cls(
            key=str(data["key"]),
            style=str(data["style"]),
            monitor=monitor,
            count=int(data["count"]),
            chain=base64.b64decode(data["chain"]),
            rewrite=None
            if not isinstance(rewrite, dict)
            else Rewrite(int(rewrite["count"]), base64.b64decode(rewrite["chain"]), list(rewrite["items"])),
            pending=None
            if not isinstance(pending, dict)
            else ResponseFacts(
                None if not isinstance(usage, dict) else Usage(**usage),
                pending.get("model"),
                pending.get("response_id"),
            ),
            noted=data.get("noted"),
            halted=bool(data.get("halted")),
            requests=int(data.get("requests", 0)),
            resets=int(data.get("resets", 0)),
            observed=int(data.get("observed", 0)),
            actions={str(k): int(v) for k, v in dict(data.get("actions") or {}).items()},
            last_action=str(data.get("last_action", "continue")),
            last=dict(data.get("last") or {}),
            reported_fill=data.get("reported_fill"),
            agent=data.get("agent"),
            self_compacting=bool(data.get("self_compacting")),
            compactions=int(data.get("compactions", 0)),
            cleared_at=int(data.get("cleared_at", -1)),
            system=str(data.get("system", "")),
            dirty=False,
        )


def _usage_dict(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_tokens": usage.cache_creation_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }
