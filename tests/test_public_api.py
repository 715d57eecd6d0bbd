"""The public namespace: exactly the names an agent builder is promised, sorted, each resolving."""

from __future__ import annotations

import pytest

import ctxhealth
from ctxhealth.errors import CtxHealthError

# The promised names, written out: adding or removing a public name is a decision this test records.
EXPORTED = [
    "Action",
    "Assessment",
    "Block",
    "Checkpoint",
    "ClearConfig",
    "ClearTrigger",
    "CompactionSummary",
    "ConfigError",
    "CtxHealthError",
    "EnvironmentProblem",
    "ExitCode",
    "FillSource",
    "Format",
    "ImageBlock",
    "InputError",
    "Ledger",
    "LedgerError",
    "Message",
    "ModelInfo",
    "ModelRegistry",
    "Monitor",
    "Profile",
    "ReadWarning",
    "RecoveryReport",
    "Role",
    "Session",
    "SessionAccount",
    "Settings",
    "StateError",
    "StateStore",
    "StrictModeError",
    "TaskState",
    "TextBlock",
    "ThinkingBlock",
    "Tier",
    "TokenizerUnavailable",
    "ToolCall",
    "ToolResult",
    "TranscriptError",
    "UnknownFormatError",
    "Usage",
    "UsageError",
    "Zone",
    "account_session",
    "build_check_report",
    "build_checkpoint",
    "clear_tool_results",
    "compress_history",
    "count_tokens",
    "detect_format",
    "load_settings",
    "read_messages",
    "read_session",
    "read_sessions",
    "reanchor",
    "render_checkpoint_block",
    "render_checkpoint_markdown",
    "render_checkpoint_text",
    "restart",
    "run_gate",
    "to_anthropic_request",
    "to_openai_messages",
    "truncate",
]


def test_all_is_exactly_the_promised_names_sorted() -> None:
    assert ctxhealth.__all__ == EXPORTED


def test_every_public_name_resolves() -> None:
    for name in ctxhealth.__all__:
        assert getattr(ctxhealth, name) is not None, name


def test_every_error_subclass_is_public() -> None:
    def subclasses(cls: type) -> set[type]:
        return {c for s in cls.__subclasses__() for c in (s, *subclasses(s))}

    public = {getattr(ctxhealth, n) for n in ctxhealth.__all__}
    assert subclasses(CtxHealthError) <= public


def test_checkpoint_renderers_are_the_recovery_ones() -> None:
    from ctxhealth.recovery import checkpoint

    assert ctxhealth.render_checkpoint_text is checkpoint.render_text
    assert ctxhealth.render_checkpoint_markdown is checkpoint.render_markdown
    assert ctxhealth.render_checkpoint_block is checkpoint.render_block


def test_a_message_built_from_public_names_is_observed() -> None:
    monitor = ctxhealth.Monitor("claude-sonnet-4-5")
    monitor.observe(ctxhealth.Message(ctxhealth.Role.USER, (ctxhealth.TextBlock("fix the failing test"),)))
    reply = ctxhealth.Message(
        ctxhealth.Role.ASSISTANT,
        (ctxhealth.ToolCall("c1", "Bash", {"command": "pytest"}),),
        usage=ctxhealth.Usage(input_tokens=1_200, cache_read_tokens=98_000, output_tokens=40),
    )
    assert monitor.observe(reply).fill == 99_200  # the usage the provider reported
    result = ctxhealth.Message(ctxhealth.Role.TOOL, (ctxhealth.ToolResult("c1", "1 failed", is_error=True),))
    assessment = monitor.observe(result)
    assert assessment.fill == 99_200  # between responses: the latest response's prompt (one account)
    assert isinstance(assessment.action, ctxhealth.Action)
    unreported = ctxhealth.Message(ctxhealth.Role.ASSISTANT, (ctxhealth.TextBlock("fixed"),))
    assert monitor.observe(unreported).fill > 99_200  # plus the call and the result, estimated


def test_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="does_not_exist"):
        ctxhealth.does_not_exist  # noqa: B018
