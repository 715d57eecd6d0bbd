"""``ctxhealth doctor``: explain what ctxhealth can see of the Claude Code set-up (read-only)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ctxhealth.cli.common import echo_json, guarded
from ctxhealth.cli.hook import home_dir
from ctxhealth.integrations.claude_code.doctor import CheckStatus, diagnose

_MARKS = {
    CheckStatus.OK: "ok  ",
    CheckStatus.INFO: "info",
    CheckStatus.WARN: "warn",
    CheckStatus.FAIL: "FAIL",
}


@click.command("doctor", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--claude-dir", type=click.Path(path_type=Path), help="Claude Code's user directory (default ~/.claude)."
)
@click.option(
    "--project", type=click.Path(path_type=Path), default=Path("."), help="Project directory (default .)."
)
@click.option(
    "--codex-dir",
    type=click.Path(path_type=Path),
    help="Codex CLI's directory (default $CODEX_HOME or ~/.codex).",
)
@click.option(
    "--gemini-dir", type=click.Path(path_type=Path), help="Gemini CLI's user directory (default ~/.gemini)."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@guarded
def doctor(
    claude_dir: Path | None, project: Path, codex_dir: Path | None, gemini_dir: Path | None, as_json: bool
) -> None:
    """Explain what ctxhealth can see: hooks (Claude Code, Codex CLI, Gemini CLI), status line,
    interpreter, home, ledger, newest session.

    Exit 0 when nothing failed, 4 when a check failed (an environment problem).
    """
    from ctxhealth.integrations.claude_code.agents import Agent

    user = Path(os.path.expanduser("~"))
    claude = claude_dir or user / ".claude"
    codex = codex_dir or Path(os.environ.get("CODEX_HOME") or user / ".codex")
    checks = diagnose(
        user_settings=claude,
        project_settings=project / ".claude",
        home=Path(home_dir()),
        projects=claude / "projects",
        agents={Agent.CODEX: codex, Agent.GEMINI: gemini_dir or user / ".gemini"},
    )
    failed = any(c.status is CheckStatus.FAIL for c in checks)
    if as_json:
        echo_json(
            {
                "schema_version": 1,
                "ok": not failed,
                "checks": [
                    {"name": c.name, "status": c.status.value, "detail": c.detail, "fix": c.fix}
                    for c in checks
                ],
            }
        )
    else:
        for c in checks:
            click.echo(f"[{_MARKS[c.status]}] {c.name}: {c.detail}")
            if c.fix and c.status is not CheckStatus.OK:
                click.echo(f"       → {c.fix}")
    sys.exit(4 if failed else 0)
