"""ctxhealth: keep long-running LLM agents healthy. The public API lives here.

Names are imported lazily (on first attribute access) so that hooks and the status line,
which import ``ctxhealth`` on every agent turn, pay only for what they use.
Add a public name by adding it to ``_EXPORTS`` (name -> module, or ``module:attribute`` to export
an attribute under another name); ``__all__`` follows, and ``tests/test_public_api.py`` pins the set.
"""

from __future__ import annotations

from ctxhealth.lazy import load_export

# typing costs a noticeable share of a hook's start-up; it is needed only by the type checker here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # errors (one tree; each has a stable ``code`` and an ``ExitCode``)
    "CtxHealthError": "ctxhealth.errors",
    "ConfigError": "ctxhealth.errors",
    "EnvironmentProblem": "ctxhealth.errors",
    "ExitCode": "ctxhealth.errors",
    "InputError": "ctxhealth.errors",
    "LedgerError": "ctxhealth.errors",
    "StateError": "ctxhealth.errors",
    "StrictModeError": "ctxhealth.errors",
    "TokenizerUnavailable": "ctxhealth.errors",
    "TranscriptError": "ctxhealth.errors",
    "UnknownFormatError": "ctxhealth.errors",
    "UsageError": "ctxhealth.errors",
    # settings
    "Settings": "ctxhealth.config",
    "load_settings": "ctxhealth.config",
    # the transcript model: what a message for ``Monitor.observe`` is built from
    "Block": "ctxhealth.model",
    "CompactionSummary": "ctxhealth.model",
    "Format": "ctxhealth.model",
    "ImageBlock": "ctxhealth.model",
    "Message": "ctxhealth.model",
    "ReadWarning": "ctxhealth.model",
    "Role": "ctxhealth.model",
    "Session": "ctxhealth.model",
    "TextBlock": "ctxhealth.model",
    "ThinkingBlock": "ctxhealth.model",
    "ToolCall": "ctxhealth.model",
    "ToolResult": "ctxhealth.model",
    "Usage": "ctxhealth.model",
    # reading and writing transcripts; ``read_messages`` reads an in-memory OpenAI / Anthropic list
    "detect_format": "ctxhealth.sources.reader",
    "read_messages": "ctxhealth.sources.messages",
    "read_session": "ctxhealth.sources.reader",
    "read_sessions": "ctxhealth.sources.reader",
    "to_anthropic_request": "ctxhealth.sources.writers",
    "to_openai_messages": "ctxhealth.sources.writers",
    # accounting
    "FillSource": "ctxhealth.accounting.types",
    "ModelInfo": "ctxhealth.accounting.types",
    "ModelRegistry": "ctxhealth.accounting.registry",
    "SessionAccount": "ctxhealth.accounting.fill",
    "Tier": "ctxhealth.accounting.types",
    "account_session": "ctxhealth.accounting.fill",
    "count_tokens": "ctxhealth.accounting.tokens",
    # signals, policy and the per-turn monitor
    "Action": "ctxhealth.policy.decision",
    "Assessment": "ctxhealth.monitor",
    "Monitor": "ctxhealth.monitor",
    "Profile": "ctxhealth.policy.profile",
    "Zone": "ctxhealth.signals.pressure",
    # recovery, and the checkpoint renderers
    "Checkpoint": "ctxhealth.recovery.checkpoint",
    "ClearConfig": "ctxhealth.recovery.clear",
    "ClearTrigger": "ctxhealth.recovery.clear",
    "RecoveryReport": "ctxhealth.recovery.report",
    "build_checkpoint": "ctxhealth.recovery.checkpoint",
    "clear_tool_results": "ctxhealth.recovery.clear",
    "compress_history": "ctxhealth.recovery.compress",
    "reanchor": "ctxhealth.recovery.reanchor",
    "render_checkpoint_block": "ctxhealth.recovery.checkpoint:render_block",
    "render_checkpoint_markdown": "ctxhealth.recovery.checkpoint:render_markdown",
    "render_checkpoint_text": "ctxhealth.recovery.checkpoint:render_text",
    "restart": "ctxhealth.recovery.restart",
    "truncate": "ctxhealth.recovery.truncate",
    # durable task state
    "Ledger": "ctxhealth.state.ledger",
    "StateStore": "ctxhealth.state.store",
    "TaskState": "ctxhealth.state.schema",
    "run_gate": "ctxhealth.state.gate",
    # reports
    "build_check_report": "ctxhealth.report.check_report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return load_export(globals(), _EXPORTS, __name__, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
