"""Audit: prompt-cache health, cost, waste and the CI checks over real logs and pack manifests.

Public entry points (each module owns one thing):

* ``run_audit(paths, options, *, registry=None)`` and ``AuditOptions`` (``audit.run``) — one JSON
  document per session, then a totals document with every check's verdict;
* ``session_responses`` / ``Response`` (``audit.responses``) — the priced responses of a session;
* ``audit_cache`` / ``CacheBreak`` / ``BreakCause`` (``audit.cache``) — hit rates and cache breaks;
* ``CostLedger`` (``audit.cost``) — cost per model, project, day and ISO week, and the weekly trend;
* ``audit_waste`` (``audit.waste``) — tokens re-sent without need;
* ``parse_manifest`` / ``read_manifest`` (``audit.manifest``) and the checks on them
  (``audit.usage``, ``audit.scores``, ``audit.ground_rules``); ``audit.instructions``;
* ``Check`` / ``Severity`` / ``Finding`` / ``Verdict`` (``audit.findings``).
"""

from __future__ import annotations

from typing import Any

from ctxhealth.lazy import load_export

_EXPORTS = {
    "AuditOptions": "ctxhealth.audit.run",
    "BreakCause": "ctxhealth.audit.cache",
    "CacheBreak": "ctxhealth.audit.cache",
    "Check": "ctxhealth.audit.findings",
    "CostLedger": "ctxhealth.audit.cost",
    "Finding": "ctxhealth.audit.findings",
    "Response": "ctxhealth.audit.responses",
    "Severity": "ctxhealth.audit.findings",
    "Verdict": "ctxhealth.audit.findings",
    "audit_cache": "ctxhealth.audit.cache",
    "audit_waste": "ctxhealth.audit.waste",
    "parse_manifest": "ctxhealth.audit.manifest",
    "read_manifest": "ctxhealth.audit.manifest",
    "run_audit": "ctxhealth.audit.run",
    "session_responses": "ctxhealth.audit.responses",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return load_export(globals(), _EXPORTS, __name__, name)
