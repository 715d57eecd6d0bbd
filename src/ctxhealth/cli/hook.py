"""``ctxhealth hook [--agent A] EVENT``: run one agent hook on the JSON payload from stdin. Always exits 0.

Settings run :func:`main` through ``python -c`` (no click import, and none of the modules ``python -m``
loads: :func:`~ctxhealth.integrations.claude_code.install.hook_command`); the
click command ``hook`` (for ``ctxhealth hook``) is built only when the group asks for it. The
helpers here (home, bounded stdin, output) are shared with ``ctxhealth.cli.statusline``. The
per-turn hooks are answered by the per-turn helper when one runs, else done here and a helper is
started for the next turn (:mod:`ctxhealth.integrations.claude_code.helper`).
"""

from __future__ import annotations

import os
import sys

from ctxhealth.cli.helper import ask_helper, start_helper
from ctxhealth.integrations.claude_code.helper import HOOK_EVENTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_STDIN_BYTES = 8 * 1024 * 1024


def home_dir() -> str:
    """The ctxhealth home of a hook or the status line (:func:`ctxhealth.home.default_home`)."""
    from ctxhealth.home import default_home

    return default_home()


def read_stdin() -> bytes:
    """At most 8 MB of stdin; nothing when stdin is a terminal (run by hand without a pipe)."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        return b""
    return stream.buffer.read(MAX_STDIN_BYTES)


def write(stdout: str, stderr: str) -> None:
    if stdout:
        sys.stdout.write(stdout if stdout.endswith("\n") else stdout + "\n")
        sys.stdout.flush()
    if stderr:
        sys.stderr.write(stderr.rstrip("\n") + "\n")
        sys.stderr.flush()


# The hooks that build checkpoints read the ``[hooks]`` limits from the configuration; the per-turn
# hooks do not load it (it costs more than their whole work).
_CONFIGURED_EVENTS = frozenset({"precompact", "sessionstart"})


def hook_limits(event: str | None) -> tuple[Any, str]:
    """The configured :class:`HookLimits` for ``event`` (None: the defaults) and a warning line
    ("" when none): a broken configuration never stops a hook, it runs with the defaults."""
    if event is None or event.replace("-", "").replace("_", "").lower() not in _CONFIGURED_EVENTS:
        return None, ""
    try:
        from pathlib import Path

        from ctxhealth.config import load_settings
        from ctxhealth.integrations.claude_code.transcript import HookLimits

        table = load_settings({}, os.environ, Path.cwd()).section("hooks")
        return (HookLimits.from_config(table) if table else None), ""
    except Exception as exc:  # fail open: defaults, and say why
        return None, f"ctxhealth: hook {event}: configuration ignored ({type(exc).__name__}: {exc})"


def _split_agent(args: list[str]) -> tuple[str | None, list[str]]:
    """(``--agent NAME`` or ``--agent=NAME``, the other arguments)."""
    rest, agent, i = [], None, 0
    while i < len(args):
        arg = args[i]
        if arg == "--agent" and i + 1 < len(args):
            agent, i = args[i + 1], i + 2
            continue
        if arg.startswith("--agent="):
            agent = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return agent, rest


def main(argv: list[str] | None = None) -> int:
    """Run the hook named in ``argv[0]`` (or in the payload); print its output; return 0 (fail open).

    ``--agent codex|gemini`` names the agent whose hook this is (default: Claude Code); those are
    run here, not by the per-turn helper (which answers Claude Code's hooks)."""
    agent_name, args = _split_agent(sys.argv[1:] if argv is None else argv)
    event = args[0] if args else None
    try:
        raw, home = read_stdin(), home_dir()
        if agent_name is not None and agent_name not in ("claude", "claude-code"):
            return _other_agent(agent_name, event, raw, home)
        helped = event in HOOK_EVENTS  # the per-turn hooks
        if helped:
            answer = ask_helper(home, "hook", str(event), raw)
            if answer is not None:
                write(*answer)
                return 0
        from ctxhealth.accounting.catalog import configure_cache_dir
        from ctxhealth.integrations.claude_code.hooks import run_hook

        configure_cache_dir(home)  # the model catalog's cached table lives in the home
        limits, warning = hook_limits(event)
        result = run_hook(event, raw, home=home, limits=limits)
        write(result.stdout, "\n".join(line for line in (warning, result.stderr) if line))
        if helped:
            start_helper(home)  # for the next turn
    except Exception as exc:  # fail open even if ctxhealth itself cannot be imported
        write("", f"ctxhealth: hook {event or '?'} skipped: {type(exc).__name__}: {exc}")
    return 0


def _other_agent(name: str, event: str | None, raw: bytes, home: str) -> int:
    from ctxhealth.integrations.claude_code.agents import find_agent
    from ctxhealth.integrations.claude_code.hooks import run_hook

    agent = find_agent(name)
    if agent is None:
        write(
            "", f"ctxhealth: hook {event or '?'} skipped: unknown agent {name!r} (claude-code, codex, gemini)"
        )
        return 0
    limits, warning = hook_limits(event if event not in ("PreCompress",) else "PreCompact")
    result = run_hook(event, raw, home=home, limits=limits, agent=agent)
    write(result.stdout, "\n".join(line for line in (warning, result.stderr) if line))
    return 0


def _command() -> Any:
    import click

    @click.command("hook", context_settings={"help_option_names": ["-h", "--help"]})
    @click.option(
        "--agent",
        type=click.Choice(["claude-code", "codex", "gemini"]),
        default="claude-code",
        show_default=True,
        help="Whose hook this is (event names and output as that agent has them).",
    )
    @click.argument("event", required=False)
    def hook(agent: str, event: str | None) -> None:
        """Run the hook EVENT of an agent on the JSON payload from stdin (fails open: always exit 0).

        Claude Code: PreCompact, SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure,
        Stop, SessionEnd, PostCompact, SubagentStop. Codex CLI (--agent codex): SessionStart,
        UserPromptSubmit, PostToolUse, PreCompact, PostCompact, SubagentStop, Stop. Gemini CLI
        (--agent gemini): SessionStart, BeforeAgent, AfterTool, PreCompress, AfterAgent, SessionEnd.
        EVENT is taken from the payload's hook_event_name when omitted.
        """
        sys.exit(main(["--agent", agent, *([event] if event else [])]))

    return hook


def __getattr__(name: str) -> Any:
    if name == "hook":
        command = _command()
        globals()["hook"] = command
        return command
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
