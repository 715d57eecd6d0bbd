"""The guard: sessions, prefix matching, modes and recovery applied to model API requests.

Shared by the local proxy (:mod:`ctxhealth.integrations.proxy`) and the in-process SDK wrappers
(:mod:`ctxhealth.integrations.anthropic`, :mod:`ctxhealth.integrations.openai`).
"""

from __future__ import annotations

from ctxhealth.integrations.guard.apply import Applied, Mode
from ctxhealth.integrations.guard.guard import SESSION_HEADER, Guard, Plan
from ctxhealth.integrations.guard.store import LedgerStore, MemoryStore, SessionStore

__all__ = ["SESSION_HEADER", "Applied", "Guard", "LedgerStore", "MemoryStore", "Mode", "Plan", "SessionStore"]
