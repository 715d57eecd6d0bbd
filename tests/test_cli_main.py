"""The command group: exit codes of unexpected errors, suggestions for unknown commands."""

from __future__ import annotations

import sys
import types

import click
import pytest

from ctxhealth.cli import main as cli_main
from ctxhealth.cli.common import guarded
from ctxhealth.errors import CtxHealthError, ExitCode


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
