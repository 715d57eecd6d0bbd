"""The command group: exit codes of unexpected errors, suggestions for unknown commands."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import click
import pytest

from conftest import invoke
from ctxhealth.cli import main as cli_main
from ctxhealth.cli.common import guarded
from ctxhealth.errors import CtxHealthError, ExitCode

REPO = Path(__file__).resolve().parents[1]


def _install(monkeypatch: pytest.MonkeyPatch, name: str, command: click.Command) -> None:
    module = types.ModuleType("ctxhealth_test_commands")
    module.command = command  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli_main.COMMANDS, name, f"{module.__name__}:command")


def _run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["ctxhealth", *args])
    with pytest.raises(SystemExit) as exited:
        cli_main.main()
    return int(exited.value.code or 0)


def test_an_unexpected_exception_exits_5_not_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @click.command()
    def boom() -> None:
        raise KeyError("surprise")

    _install(monkeypatch, "boom", boom)
    assert _run_main(monkeypatch, "boom") == ExitCode.INTERNAL == 5
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "Traceback" in err


def test_a_base_error_exits_5_and_specific_ones_keep_their_codes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @click.command()
    @click.argument("kind")
    @guarded
    def fail(kind: str) -> None:
        from ctxhealth import errors

        raise getattr(errors, kind)("went wrong", hint="do this")

    _install(monkeypatch, "fail", fail)
    assert _run_main(monkeypatch, "fail", "CtxHealthError") == 5
    assert "ctxhealth: error: went wrong. do this" in capsys.readouterr().err
    assert _run_main(monkeypatch, "fail", "ConfigError") == ExitCode.BAD_INPUT
    assert _run_main(monkeypatch, "fail", "LedgerError") == ExitCode.ENVIRONMENT
    assert CtxHealthError("x").exit_code is not ExitCode.UNHEALTHY


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["chek"], "Did you mean 'check'?"),
        (["inst"], "Did you mean 'install' or 'insights' or 'uninstall'?"),
        (["state", "stat"], "Did you mean 'status'?"),
        (["config", "shwo"], "Did you mean 'show'?"),
    ],
)
def test_an_unknown_command_suggests_the_closest(args: list[str], expected: str) -> None:
    result = invoke(args)
    assert result.exit_code == ExitCode.USAGE
    assert f"No such command '{args[-1]}'. {expected}" in result.output


def test_an_unknown_command_with_nothing_close_lists_the_commands() -> None:
    result = invoke(["zzz"])
    assert result.exit_code == ExitCode.USAGE
    assert "Commands: " + ", ".join(sorted(cli_main.COMMANDS)) in result.output


def test_shell_completion_completes_commands_and_options() -> None:
    script = invoke([], prog_name="ctxhealth", env={"_CTXHEALTH_COMPLETE": "bash_source"})
    assert "_ctxhealth_completion()" in script.output
    env = {"_CTXHEALTH_COMPLETE": "bash_complete", "COMP_WORDS": "ctxhealth che", "COMP_CWORD": "1"}
    words = invoke([], prog_name="ctxhealth", env=env)
    assert words.output.split() == ["plain,check", "plain,checkpoint"]
    env |= {"COMP_WORDS": "ctxhealth install claude-code --cl", "COMP_CWORD": "3"}
    options = invoke([], prog_name="ctxhealth", env=env)
    assert options.output.split() == ["plain,--claude-dir"]  # the hidden, deprecated alias is not offered


@pytest.mark.parametrize("command", ["calibrate", "validate"])
def test_commands_needing_labels_say_where_to_get_them(command: str, tmp_path: Path) -> None:
    (tmp_path / "run.jsonl").write_bytes((REPO / "examples" / "claude-code-session.jsonl").read_bytes())
    result = invoke([command, str(tmp_path)])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "no --labels or --report was given" in result.output
    assert "do not ship with ctxhealth" in result.output and "file,resolved" in result.output
    assert "none ship with ctxhealth" in invoke([command, "--help"]).output


def test_every_command_naming_the_claude_code_directory_calls_it_claude_dir() -> None:
    def leaves(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            return [
                leaf
                for name in command.list_commands(ctx)
                for leaf in leaves(command.get_command(ctx, name), f"{path} {name}")  # type: ignore[arg-type]
            ]
        return [(path, command)]

    visible: dict[str, set[str]] = {}
    for path, command in leaves(cli_main.cli, "ctxhealth"):
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                for flag in param.opts:
                    visible.setdefault(flag, set()).add(path)
    assert "--settings" not in visible
    assert {"ctxhealth doctor", "ctxhealth watch", "ctxhealth install claude-code"} <= visible["--claude-dir"]


@pytest.mark.parametrize(
    "args",
    [
        ["check"],
        ["recover"],
        ["retention"],
        ["checkpoint"],
        ["state", "snapshot"],
        ["validate", "--labels", "x"],
    ],
)
def test_a_missing_transcript_argument_says_where_transcripts_live(args: list[str]) -> None:
    result = invoke(args)
    assert result.exit_code == ExitCode.USAGE
    assert "Missing argument" in result.output and "~/.claude/projects/" in result.output


def test_start_up_imports_the_command_then_freezes_what_it_imported() -> None:
    # run in a fresh process: freezing the test process's objects would keep them for good
    import subprocess

    probe = (
        "import gc, sys; from ctxhealth.cli import main as m; "
        "m.load_command('nope'); print(gc.get_freeze_count(), 'ctxhealth.cli.check' in sys.modules); "
        "gc.disable(); m.load_command('check'); print(gc.isenabled()); gc.enable(); gc.unfreeze(); "
        "m.load_command('check'); "
        "print(gc.get_freeze_count() > 1000, 'ctxhealth.cli.check' in sys.modules, gc.isenabled())"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:3] == ["0 False", "False", "True True True"]
