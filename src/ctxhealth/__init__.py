"""ctxhealth: keep long-running LLM agents healthy. The public API lives here.

Names are imported lazily (on first attribute access) so that hooks and the status line,
which import ``ctxhealth`` on every agent turn, pay only for what they use.
Add a public name by adding it to ``_EXPORTS`` (name -> module); ``__all__`` follows.
"""

from __future__ import annotations

from ctxhealth.lazy import load_export

# typing costs a noticeable share of a hook's start-up; it is needed only by the type checker here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "CtxHealthError": "ctxhealth.errors",
    "FillSource": "ctxhealth.accounting.types",
    "ModelInfo": "ctxhealth.accounting.types",
    "ModelRegistry": "ctxhealth.accounting.registry",
    "SessionAccount": "ctxhealth.accounting.fill",
    "Settings": "ctxhealth.config",
    "Tier": "ctxhealth.accounting.types",
    "account_session": "ctxhealth.accounting.fill",
    "build_check_report": "ctxhealth.report.check_report",
    "count_tokens": "ctxhealth.accounting.tokens",
    "load_settings": "ctxhealth.config",
    "Message": "ctxhealth.model",
    "Role": "ctxhealth.model",
    "Session": "ctxhealth.model",
    "Format": "ctxhealth.model",
    "detect_format": "ctxhealth.sources.reader",
    "read_session": "ctxhealth.sources.reader",
    "read_sessions": "ctxhealth.sources.reader",
    "Action": "ctxhealth.policy.decision",
    "Assessment": "ctxhealth.monitor",
    "Monitor": "ctxhealth.monitor",
    "Profile": "ctxhealth.policy.profile",
    "Zone": "ctxhealth.signals.pressure",
    "Checkpoint": "ctxhealth.recovery.checkpoint",
    "RecoveryReport": "ctxhealth.recovery.report",
    "build_checkpoint": "ctxhealth.recovery.checkpoint",
    "clear_tool_results": "ctxhealth.recovery.clear",
    "compress_history": "ctxhealth.recovery.compress",
    "reanchor": "ctxhealth.recovery.reanchor",
    "restart": "ctxhealth.recovery.restart",
    "to_anthropic_request": "ctxhealth.sources.writers",
    "to_openai_messages": "ctxhealth.sources.writers",
    "truncate": "ctxhealth.recovery.truncate",
    "Ledger": "ctxhealth.state.ledger",
    "StateStore": "ctxhealth.state.store",
    "TaskState": "ctxhealth.state.schema",
    "run_gate": "ctxhealth.state.gate",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return load_export(globals(), _EXPORTS, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
