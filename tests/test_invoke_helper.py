"""The tests' ``invoke`` lets an unexpected exception out, so an exit-code assertion cannot pass on a
crash (``CliRunner().invoke`` would turn it into exit code 1, which ``check`` uses for "unhealthy")."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, invoke


def test_a_crash_inside_a_command_is_raised_not_exit_code_1(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctxhealth.report.assessed as assessed

    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(assessed, "check_session", boom)
    monkeypatch.setattr("ctxhealth.cli.check.check_session", boom, raising=False)
    with pytest.raises(RuntimeError, match="a bug"):
        invoke("check", Path(FIXTURES) / "codex-rollout-0.60.jsonl")


def test_usage_errors_still_give_their_exit_code() -> None:
    assert invoke("check", "--no-such-option").exit_code == 2
