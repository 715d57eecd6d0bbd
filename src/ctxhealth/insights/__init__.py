"""Insights on a user's own sessions: does the agent slip more as its context fills (the curve, by
fill band, with Wilson intervals), do slips snowball, where the context goes, and what to change.

* ``measure_session`` / ``SessionSteps`` / ``Step`` (``insights.steps``) — one session's steps (one
  per model response) and slips, and its composition;
* ``wilson`` / ``bands`` / ``change_point`` / ``snowball`` (``insights.stats``) — the statistics;
* ``InsightsBuilder`` / ``InsightsFilter`` / ``build_document`` (``insights.build``) — the document
  ``ctxhealth insights --json`` prints.
"""

from __future__ import annotations

from typing import Any

from ctxhealth.lazy import load_export

_EXPORTS = {
    "InsightsBuilder": "ctxhealth.insights.build",
    "InsightsFilter": "ctxhealth.insights.build",
    "SessionSteps": "ctxhealth.insights.steps",
    "Step": "ctxhealth.insights.steps",
    "band_index": "ctxhealth.insights.stats",
    "bands": "ctxhealth.insights.stats",
    "build_document": "ctxhealth.insights.build",
    "change_point": "ctxhealth.insights.stats",
    "measure_session": "ctxhealth.insights.steps",
    "snowball": "ctxhealth.insights.stats",
    "wilson": "ctxhealth.insights.stats",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return load_export(globals(), _EXPORTS, __name__, name)
