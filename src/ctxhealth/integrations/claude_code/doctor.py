"""``ctxhealth doctor``: what ctxhealth can see of a Claude Code set-up, as a list of checks.

Each :class:`Check` has a status (ok / info / warn / fail), a one-line finding and, when something is
wrong, what to do. Everything is read-only: settings files (are the hooks and the status line there,
does the interpreter they run exist), the ctxhealth home and ledger (writable, schema, recent errors),
and the newest Claude Code transcript (how far ctxhealth has read it). Paths come from the caller.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ctxhealth.errors import CtxHealthError
from ctxhealth.integrations.claude_code.agents import Agent
from ctxhealth.integrations.claude_code.install import (
    HOOK_EVENTS,
    SETTINGS_NAME,
    TARGETS,
    find_installation,
    is_ours,
    statusline_command,
)
from ctxhealth.integrations.claude_code.tailstate import load_counters
from ctxhealth.integrations.claude_code.watch import find_newest_session

__all__ = ["Check", "CheckStatus", "agent_checks", "diagnose"]


class CheckStatus(StrEnum):
    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: CheckStatus
    detail: str
    fix: str = ""


def _interpreter(command: str) -> str | None:
    try:
        parts = shlex.split(command)
    except ValueError:
        return None
    return parts[0] if parts else None


def _settings_checks(label: str, settings_dir: Path) -> list[Check]:
    path = settings_dir / SETTINGS_NAME
    if not path.exists():
        return [Check(f"{label} settings", CheckStatus.INFO, f"{path} does not exist")]
    try:
        events, statusline = find_installation(settings_dir)
    except CtxHealthError as exc:
        return [Check(f"{label} settings", CheckStatus.FAIL, exc.message, exc.hint)]
    checks: list[Check] = []
    wanted = {e.value for e in HOOK_EVENTS}
    have = set(events) & wanted
    if not have:
        checks.append(
            Check(
                f"{label} hooks",
                CheckStatus.INFO,
                f"no ctxhealth hooks in {path}",
                f"ctxhealth install claude-code --scope {label} --apply",
            )
        )
    elif have != wanted:
        missing = ", ".join(sorted(wanted - have))
        checks.append(
            Check(
                f"{label} hooks",
                CheckStatus.WARN,
                f"missing hooks: {missing}",
                "re-run ctxhealth install claude-code --apply",
            )
        )
    else:
        checks.append(Check(f"{label} hooks", CheckStatus.OK, f"all {len(wanted)} hooks installed in {path}"))
    if statusline is None:
        checks.append(Check(f"{label} status line", CheckStatus.INFO, "no status line configured"))
    elif is_ours(statusline):
        checks.append(Check(f"{label} status line", CheckStatus.OK, statusline))
    else:
        checks.append(
            Check(
                f"{label} status line",
                CheckStatus.INFO,
                f"your own status line: {statusline}",
                f"chain ours with `{statusline_command(sys.executable)} --then '<yours>'`",
            )
        )
    commands = [statusline] if statusline is not None and is_ours(statusline) else []
    commands += _installed_commands(settings_dir)
    for interpreter in sorted({i for c in commands if (i := _interpreter(c))}):
        if os.path.isabs(interpreter) and not os.access(interpreter, os.X_OK):
            checks.append(
                Check(
                    f"{label} interpreter",
                    CheckStatus.FAIL,
                    f"hooks run {interpreter}, which is not an executable file",
                    "re-run ctxhealth install claude-code --apply from the environment ctxhealth lives in",
                )
            )
    return checks


def _installed_commands(settings_dir: Path, file_name: str = SETTINGS_NAME) -> list[str]:
    import json

    try:
        data = json.loads((settings_dir / file_name).read_bytes())
    except (OSError, ValueError):
        return []
    out: list[str] = []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for hook in group.get("hooks", []) if isinstance(group, dict) else ():
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str) and is_ours(command):
                    out.append(command)
    return out


def _disabled(agent: Agent, settings_dir: Path) -> str | None:
    """Why the agent would not run any hook although they are installed (None: nothing says so)."""
    import json

    if agent is Agent.CODEX:
        try:
            text = (settings_dir / "config.toml").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        import tomllib

        try:
            features = tomllib.loads(text).get("features", {})
        except tomllib.TOMLDecodeError:
            return None
        if isinstance(features, dict) and features.get("codex_hooks") is False:
            return "config.toml sets [features] codex_hooks = false"
        return None
    if agent is Agent.GEMINI:
        try:
            data = json.loads((settings_dir / SETTINGS_NAME).read_bytes())
        except (OSError, ValueError):
            return None
        config = data.get("hooksConfig") if isinstance(data, dict) else None
        if isinstance(config, dict) and config.get("enabled") is False:
            return "settings.json sets hooksConfig.enabled = false"
    return None


def agent_checks(agent: Agent, settings_dir: Path) -> list[Check]:
    """Codex CLI's or Gemini CLI's hooks: installed (all events), run by an interpreter that exists,
    and not switched off in the agent's own settings."""
    target = TARGETS[agent]
    label = agent.value
    path = settings_dir / target.file_name
    install = f"ctxhealth install {agent.value} --apply"
    if not settings_dir.exists():
        return [
            Check(f"{label} hooks", CheckStatus.INFO, f"{settings_dir} does not exist ({label} not set up)")
        ]
    try:
        events, _ = find_installation(settings_dir, agent)
    except CtxHealthError as exc:
        return [Check(f"{label} hooks", CheckStatus.FAIL, exc.message, exc.hint)]
    wanted = {event for event, _, _ in target.events}
    have = set(events) & wanted
    checks: list[Check] = []
    if not have:
        checks.append(Check(f"{label} hooks", CheckStatus.INFO, f"no ctxhealth hooks in {path}", install))
        return checks
    if have != wanted:
        missing = ", ".join(sorted(wanted - have))
        checks.append(
            Check(f"{label} hooks", CheckStatus.WARN, f"missing hooks: {missing}", "re-run " + install)
        )
    else:
        checks.append(Check(f"{label} hooks", CheckStatus.OK, f"all {len(wanted)} hooks installed in {path}"))
    off = _disabled(agent, settings_dir)
    if off is not None:
        checks.append(Check(f"{label} hooks enabled", CheckStatus.WARN, off, "remove that setting"))
    for interpreter in sorted(
        {i for c in _installed_commands(settings_dir, target.file_name) if (i := _interpreter(c))}
    ):
        if os.path.isabs(interpreter) and not os.access(interpreter, os.X_OK):
            checks.append(
                Check(
                    f"{label} interpreter",
                    CheckStatus.FAIL,
                    f"hooks run {interpreter}, which is not an executable file",
                    f"re-run {install} from the environment ctxhealth lives in",
                )
            )
    return checks


def _home_checks(home: Path) -> list[Check]:
    checks: list[Check] = []
    if not home.exists():
        return [Check("home", CheckStatus.INFO, f"{home} does not exist yet (created on first use)")]
    if not home.is_dir():
        return [
            Check(
                "home",
                CheckStatus.FAIL,
                f"{home} is not a folder",
                "move the file away or set CTXHEALTH_HOME to a folder",
            )
        ]
    if not os.access(home, os.W_OK):
        return [
            Check(
                "home",
                CheckStatus.FAIL,
                f"{home} is not writable",
                "fix its permissions or set CTXHEALTH_HOME",
            )
        ]
    checks.append(Check("home", CheckStatus.OK, str(home)))
    if not (home / "ledger.db").exists():
        checks.append(Check("ledger", CheckStatus.INFO, "no ledger yet (created by the first hook)"))
        return checks
    from ctxhealth.state.ledger import Ledger

    try:
        with Ledger.open(home) as ledger:
            counts = ledger.counts()
            ok = ledger.integrity_ok()
            errors = ledger.errors(limit=3)
    except CtxHealthError as exc:
        return [*checks, Check("ledger", CheckStatus.FAIL, exc.message, exc.hint)]
    summary = ", ".join(f"{k} {v}" for k, v in counts.items())
    checks.append(Check("ledger", CheckStatus.OK if ok else CheckStatus.FAIL, summary))
    for err in errors:
        checks.append(
            Check("recent error", CheckStatus.WARN, f"{err.recorded_at} {err.where}: {err.message}")
        )
    return checks


def _session_checks(projects: Path, home: Path) -> list[Check]:
    newest = find_newest_session(projects)
    if newest is None:
        return [Check("sessions", CheckStatus.INFO, f"no Claude Code transcripts under {projects}")]
    size = newest.stat().st_size
    counters = load_counters(str(home), str(newest))
    if counters is None:
        return [
            Check("newest session", CheckStatus.INFO, f"{newest} ({size:,} bytes), not read by ctxhealth yet")
        ]
    caught_up = ""
    if size > counters.offset:
        # what the hooks will read next (a compaction written after the last hook, say): read it
        # into this copy of the counters, never saved (doctor changes nothing)
        from ctxhealth.integrations.claude_code.tail import read_tail

        unread = size - counters.offset
        try:
            read_tail(counters, str(newest))
            caught_up = f" (the {unread:,} bytes written since the last hook read now, not saved)"
        except CtxHealthError:
            caught_up = f" ({unread:,} bytes not read yet)"
    from ctxhealth.integrations.claude_code.assess import tool_counts

    tools = tool_counts(counters)
    detail = (
        f"{newest}: read {counters.offset:,} of {size:,} bytes{caught_up}; fill {counters.fill:,} tokens, "
        f"{tools.calls} tool calls ({tools.failed} failed), "
        f"{counters.compactions} compactions"
    )
    return [Check("newest session", CheckStatus.OK, detail), *_model_checks(counters.model)]


def _model_checks(model: str | None) -> list[Check]:
    """The newest session's model as the registry knows it; what is unknown is named with its fix."""
    if not model:
        return []
    from ctxhealth.accounting.registry import ModelRegistry, unknown_facts

    info = ModelRegistry.default().lookup(model)
    notes = unknown_facts(info)
    detail = (
        f"{model}: {info.tier.value} tier, window {info.window:,} ({info.window_from}), "
        f"{info.usable_window:,} usable"
    )
    if notes:
        detail += "; " + "; ".join(notes)
        return [Check("model", CheckStatus.WARN, detail, fix="`ctxhealth models ID`")]
    return [Check("model", CheckStatus.OK, detail)]


def diagnose(
    *,
    user_settings: Path,
    project_settings: Path,
    home: Path,
    projects: Path,
    agents: dict[Agent, Path] | None = None,
) -> list[Check]:
    """Every check, in a stable order; ``agents``: other agents' settings directories to check."""
    checks = [Check("python", CheckStatus.OK, f"{sys.executable} ({sys.version.split()[0]})")]
    checks += _settings_checks("user", user_settings)
    if project_settings.resolve() != user_settings.resolve():
        checks += _settings_checks("project", project_settings)
    for agent, settings_dir in (agents or {}).items():
        checks += agent_checks(agent, settings_dir)
    checks += _home_checks(home)
    checks += _session_checks(projects, home)
    return checks
