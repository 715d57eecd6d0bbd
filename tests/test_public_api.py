"""The public namespace: exactly the names an agent builder is promised, sorted, each resolving."""

from __future__ import annotations

from pathlib import Path

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


def _front_door() -> dict[str, str]:
    """Public name -> ``module`` or ``module:attribute``, as the root's ``if TYPE_CHECKING:`` block
    imports it for type checkers (aliases assigned there resolved to what they were imported as)."""
    import ast

    tree = ast.parse(Path(ctxhealth.__file__).read_text("utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    )
    imported: dict[str, str] = {}
    names: dict[str, str] = {}
    for node in block.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ctxhealth"):
            for alias in node.names:
                bound = alias.asname or alias.name
                target = node.module if bound == alias.name else f"{node.module}:{alias.name}"
                imported[bound] = target
                if not bound.startswith("_"):
                    names[bound] = target
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            for target_node in node.targets:
                assert isinstance(target_node, ast.Name)
                names[target_node.id] = imported[node.value.id]
    return names


def test_the_typed_front_door_names_exactly_the_exports() -> None:
    assert _front_door() == ctxhealth._EXPORTS


def test_type_checkers_see_the_real_types(tmp_path: Path) -> None:
    """Under mypy the public names have their types, not ``Any`` (the lazy ``__getattr__`` alone would
    make every one ``Any``, so a wrong argument would pass ``--strict``)."""
    mypy_api = pytest.importorskip("mypy.api")
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import ctxhealth\n"
        "reveal_type(ctxhealth.Monitor)\n"
        "monitor = ctxhealth.Monitor(profile=3)\n"
        "reveal_type(ctxhealth.render_checkpoint_block)\n"
    )
    out, _err, _status = mypy_api.run(
        [str(probe), "--strict", "--no-incremental", "--follow-imports=silent", "--cache-dir=/dev/null"]
    )
    assert 'Revealed type is "def' in out and "ctxhealth.monitor.Monitor" in out, out
    assert 'Argument "profile" to "Monitor" has incompatible type "int"' in out, out
    assert "render_block" in out or "Checkpoint" in out, out
