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
    # The typed front door: type checkers see every public name with its real type (at run time the
    # names still come lazily through ``__getattr__``). ``tests/test_public_api.py`` keeps this list equal
    # to ``_EXPORTS``.
    from typing import Any

    from ctxhealth.accounting.fill import SessionAccount as SessionAccount
    from ctxhealth.accounting.fill import account_session as account_session
    from ctxhealth.accounting.registry import ModelRegistry as ModelRegistry
    from ctxhealth.accounting.tokens import count_tokens as count_tokens
    from ctxhealth.accounting.types import FillSource as FillSource
    from ctxhealth.accounting.types import ModelInfo as ModelInfo
    from ctxhealth.accounting.types import Tier as Tier
    from ctxhealth.config import Settings as Settings
    from ctxhealth.config import load_settings as load_settings
    from ctxhealth.errors import ConfigError as ConfigError
    from ctxhealth.errors import CtxHealthError as CtxHealthError
    from ctxhealth.errors import EnvironmentProblem as EnvironmentProblem
    from ctxhealth.errors import ExitCode as ExitCode
    from ctxhealth.errors import InputError as InputError
    from ctxhealth.errors import LedgerError as LedgerError
    from ctxhealth.errors import StateError as StateError
    from ctxhealth.errors import StrictModeError as StrictModeError
    from ctxhealth.errors import TokenizerUnavailable as TokenizerUnavailable
    from ctxhealth.errors import TranscriptError as TranscriptError
    from ctxhealth.errors import UnknownFormatError as UnknownFormatError
    from ctxhealth.errors import UsageError as UsageError
    from ctxhealth.model import Block as Block
    from ctxhealth.model import CompactionSummary as CompactionSummary
    from ctxhealth.model import Format as Format
    from ctxhealth.model import ImageBlock as ImageBlock
    from ctxhealth.model import Message as Message
    from ctxhealth.model import ReadWarning as ReadWarning
    from ctxhealth.model import Role as Role
    from ctxhealth.model import Session as Session
    from ctxhealth.model import TextBlock as TextBlock
    from ctxhealth.model import ThinkingBlock as ThinkingBlock
    from ctxhealth.model import ToolCall as ToolCall
    from ctxhealth.model import ToolResult as ToolResult
    from ctxhealth.model import Usage as Usage
    from ctxhealth.monitor import Assessment as Assessment
    from ctxhealth.monitor import Monitor as Monitor
    from ctxhealth.policy.decision import Action as Action
    from ctxhealth.policy.profile import Profile as Profile
    from ctxhealth.recovery.checkpoint import Checkpoint as Checkpoint
    from ctxhealth.recovery.checkpoint import build_checkpoint as build_checkpoint
    from ctxhealth.recovery.checkpoint import render_block as _render_block
    from ctxhealth.recovery.checkpoint import render_markdown as _render_markdown
    from ctxhealth.recovery.checkpoint import render_text as _render_text
    from ctxhealth.recovery.clear import ClearConfig as ClearConfig
    from ctxhealth.recovery.clear import ClearTrigger as ClearTrigger
    from ctxhealth.recovery.clear import clear_tool_results as clear_tool_results
    from ctxhealth.recovery.compress import compress_history as compress_history
    from ctxhealth.recovery.reanchor import reanchor as reanchor
    from ctxhealth.recovery.report import RecoveryReport as RecoveryReport
    from ctxhealth.recovery.restart import restart as restart
    from ctxhealth.recovery.truncate import truncate as truncate
    from ctxhealth.report.check_report import build_check_report as build_check_report
    from ctxhealth.signals.pressure import Zone as Zone
    from ctxhealth.sources.messages import read_messages as read_messages
    from ctxhealth.sources.reader import detect_format as detect_format
    from ctxhealth.sources.reader import read_session as read_session
    from ctxhealth.sources.reader import read_sessions as read_sessions
    from ctxhealth.sources.writers import to_anthropic_request as to_anthropic_request
    from ctxhealth.sources.writers import to_openai_messages as to_openai_messages
    from ctxhealth.state.gate import run_gate as run_gate
    from ctxhealth.state.ledger import Ledger as Ledger
    from ctxhealth.state.schema import TaskState as TaskState
    from ctxhealth.state.store import StateStore as StateStore

    # exported under other names than the library's own
    render_checkpoint_block = _render_block
    render_checkpoint_markdown = _render_markdown
    render_checkpoint_text = _render_text

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
