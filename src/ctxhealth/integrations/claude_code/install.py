"""Installing ctxhealth into an agent's hook settings (Claude Code, Codex CLI, Gemini CLI), and out again.

The three agents keep hooks in the same JSON shape (``{"hooks": {EVENT: [{"matcher": ..., "hooks":
[{"type": "command", "command": ..., "timeout": ...}]}]}}``), in their own file: Claude Code's
``~/.claude/settings.json`` (plus its ``statusLine``), Codex CLI's ``~/.codex/hooks.json``
(``$CODEX_HOME``; timeouts in seconds), Gemini CLI's ``~/.gemini/settings.json`` (timeouts in
milliseconds, a ``name`` per hook). :data:`TARGETS` holds, per agent, the file, the events with their
matchers and timeouts. The plan, diff, backup, manifest and restore are those of every
``ctxhealth install`` (:mod:`ctxhealth.integrations.hostconfig`; an :class:`InstallPlan` is its
:class:`~ctxhealth.integrations.hostconfig.FilePlan` plus what happens to the status line); this module
only knows the hook table's shape. A settings file that is a symbolic link is written through to its
target (the link stays: :func:`ctxhealth.atomic.write_atomic`).

``plan_install`` / ``plan_uninstall`` compute the new file without touching disk, so the CLI can show a
unified diff (dry run) before ``apply`` writes it. Installing adds one hook group per event and a
status line, leaving every other key, hook and matcher as it was; a status line the user already has is
kept unless ``force`` (the plan says how to chain it instead; a replaced one is kept in the install
manifest, and uninstall puts it back). Uninstall restores the backup byte for byte when the file is
still exactly what install wrote, and otherwise removes only ctxhealth's own entries (also while the MCP
server ``ctxhealth install mcp`` put in the same Gemini settings.json is still there: it stays).
"""

from __future__ import annotations

import copy
import re
import shlex
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from ctxhealth.errors import ConfigError
from ctxhealth.integrations.claude_code.agents import Agent
from ctxhealth.integrations.claude_code.payloads import HookEvent
from ctxhealth.integrations.hostconfig import (
    RESTORED_NOTE,
    FilePlan,
    apply_file_plan,
    dump_json_object,
    load_manifest,
    parse_json_object,
    plan_uninstall_file,
    read_config,
    same_json,
)

__all__ = [
    "HOOK_EVENTS",
    "TARGETS",
    "HookTarget",
    "InstallPlan",
    "Scope",
    "StatusLineChange",
    "apply_plan",
    "default_settings_dir",
    "find_installation",
    "hook_command",
    "is_ours",
    "plan_install",
    "plan_uninstall",
    "statusline_command",
]

SETTINGS_NAME = "settings.json"
HOOK_TIMEOUT_SECONDS = 10
# PreCompact checkpoints the whole transcript and SessionStart may have to: give them more room on
# very long sessions (a hook past its timeout is killed, and the agent carries on without it).
HOOK_TIMEOUTS = {HookEvent.PRE_COMPACT: 30, HookEvent.SESSION_START: 30}

# Event -> matcher ("" = no matcher key: the event has none, or every tool should match).
HOOK_EVENTS: dict[HookEvent, str] = {
    HookEvent.PRE_COMPACT: "",
    HookEvent.SESSION_START: "compact|resume",
    HookEvent.USER_PROMPT_SUBMIT: "",
    HookEvent.POST_TOOL_USE: "",
    HookEvent.POST_TOOL_USE_FAILURE: "",
    HookEvent.STOP: "",
    HookEvent.POST_COMPACT: "",  # the transcript then holds the compaction: the fill it left
}

# Ours: the ``python -c "from ctxhealth.cli.hook import main; ..."`` form written now, the
# ``python -m ctxhealth.cli.hook EVENT`` form earlier versions wrote (both are ``ctxhealth.cli.hook``
# and a word), and the CLI's own ``ctxhealth hook EVENT`` / ``ctxhealth statusline``.
_OURS = re.compile(r"ctxhealth(\.cli\.hook\s+[-\w]+|\.cli\.statusline\b|\s+hook\s+[-\w]+|\s+statusline\b)")


@dataclass(frozen=True, slots=True)
class HookTarget:
    """Where and how one agent keeps its hooks: the file, each event (the agent's own name) with its
    matcher ("" = none) and timeout, the timeout's unit, and whether a status line is installed."""

    agent: Agent
    file_name: str
    events: tuple[tuple[str, str, int], ...]
    timeout_scale: int = 1
    statusline: bool = False
    named: bool = False


TARGETS: dict[Agent, HookTarget] = {
    Agent.CLAUDE_CODE: HookTarget(
        Agent.CLAUDE_CODE,
        SETTINGS_NAME,
        tuple((e.value, m, HOOK_TIMEOUTS.get(e, HOOK_TIMEOUT_SECONDS)) for e, m in HOOK_EVENTS.items()),
        statusline=True,
    ),
    Agent.CODEX: HookTarget(
        Agent.CODEX,
        "hooks.json",
        (
            ("SessionStart", "compact|resume", 30),
            ("UserPromptSubmit", "", HOOK_TIMEOUT_SECONDS),
            ("PostToolUse", "", HOOK_TIMEOUT_SECONDS),
            ("PreCompact", "", 30),
            ("PostCompact", "", HOOK_TIMEOUT_SECONDS),
            ("Stop", "", HOOK_TIMEOUT_SECONDS),
        ),
    ),
    Agent.GEMINI: HookTarget(
        Agent.GEMINI,
        SETTINGS_NAME,
        (
            ("BeforeAgent", "", 30),  # may give a checkpoint back after a compression
            ("AfterTool", "", HOOK_TIMEOUT_SECONDS),
            ("PreCompress", "", 30),
            ("AfterAgent", "", HOOK_TIMEOUT_SECONDS),
            ("SessionEnd", "", HOOK_TIMEOUT_SECONDS),
        ),
        timeout_scale=1000,
        named=True,
    ),
}
"""Per agent: its hook file and the events ctxhealth answers (see :mod:`.agents` for what each does)."""


_TRUST_NOTES: dict[Agent, tuple[str, ...]] = {
    Agent.CODEX: (
        "Codex runs hooks from hooks.json only once you trust them: review them with /hooks in Codex "
        "(until then they are listed as untrusted and do not run)",
    ),
}


def _client_command(python: str, module: str, args: str = "") -> str:
    """``python -c "from MODULE import main; raise SystemExit(main())" ARGS``: how an agent starts a
    hook or the status line on every turn. It skips the click CLI, and ``-c`` skips what ``python -m``
    costs: ``runpy`` imports ``importlib.util``, ``contextlib``, ``collections`` and ``functools``
    (with them, half the CPU a call answered by the per-turn helper added to bare Python start-up:
    see the benchmarks' docs). The code holds nothing a POSIX shell or ``cmd.exe`` expands inside
    double quotes."""
    code = f'"from {module} import main; raise SystemExit(main())"'
    return f"{shlex.quote(python)} -c {code}" + (f" {args}" if args else "")


def hook_command(python: str, event: HookEvent | str, agent: Agent = Agent.CLAUDE_CODE) -> str:
    """The shell command an agent runs for ``event`` (:func:`_client_command`)."""
    name = event.value if isinstance(event, HookEvent) else event
    flag = "" if agent is Agent.CLAUDE_CODE else f"--agent {agent.value} "
    return _client_command(python, "ctxhealth.cli.hook", f"{flag}{name}")


def statusline_command(python: str) -> str:
    """The status-line command Claude Code runs (:func:`_client_command`)."""
    return _client_command(python, "ctxhealth.cli.statusline")


class Scope(StrEnum):
    """Which settings file: the user's (``~/.claude``) or the project's (``./.claude``)."""

    USER = "user"
    PROJECT = "project"


class StatusLineChange(StrEnum):
    """What the plan does with ``statusLine``."""

    ADD = "add"
    KEEP_THEIRS = "keep-theirs"
    REPLACE = "replace"
    UNCHANGED = "unchanged"
    REMOVE = "remove"
    RESTORE_THEIRS = "restore-theirs"


@dataclass(frozen=True, slots=True)
class InstallPlan(FilePlan):
    """A hook settings file's change, computed but not yet written: a
    :class:`~ctxhealth.integrations.hostconfig.FilePlan` (``after`` None deletes the file,
    ``restore_backup`` means ``after`` is the backup's exact bytes) and what it does with the status
    line (``previous_statusline``: the user's, replaced with ``--force``, kept in the manifest)."""

    statusline: StatusLineChange = StatusLineChange.UNCHANGED
    previous_statusline: Any = None

    @property
    def settings_path(self) -> Path:
        return self.path

    def manifest_fields(self) -> dict[str, Any]:
        return {} if self.previous_statusline is None else {"previous_statusline": self.previous_statusline}


_DIRS = {Agent.CLAUDE_CODE: ".claude", Agent.CODEX: ".codex", Agent.GEMINI: ".gemini"}


def default_settings_dir(
    scope: Scope, *, home: Path, cwd: Path, agent: Agent = Agent.CLAUDE_CODE, codex_home: str | None = None
) -> Path:
    """``~/.claude`` (``~/.codex``: ``$CODEX_HOME`` when set; ``~/.gemini``) for the user scope,
    ``./.claude`` (``./.codex``, ``./.gemini``) for the project scope."""
    if scope is Scope.USER and agent is Agent.CODEX and codex_home:
        return Path(codex_home)
    return (home if scope is Scope.USER else cwd) / _DIRS[agent]


def is_ours(command: object) -> bool:
    """Whether a settings command string runs a ctxhealth hook or status line."""
    return isinstance(command, str) and _OURS.search(command) is not None


def _parse(raw: bytes | None, path: Path) -> dict[str, Any]:
    return parse_json_object(
        raw,
        path,
        fix="fix it (Claude Code cannot read it either) or pass --claude-dir to another directory",
        what="settings file",
    )


def _hook_entry(python: str, target: HookTarget, event: str, matcher: str, timeout: int) -> dict[str, Any]:
    group: dict[str, Any] = {}
    if matcher:
        group["matcher"] = matcher
    hook: dict[str, Any] = {"type": "command", "command": hook_command(python, event, target.agent)}
    if target.named:
        hook["name"] = f"ctxhealth-{event}"
    hook["timeout"] = timeout * target.timeout_scale
    group["hooks"] = [hook]
    return group


def _strip_ours(data: dict[str, Any]) -> bool:
    """Remove ctxhealth hook commands (and groups/events/keys only we emptied). True if any removed."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    removed = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not (isinstance(h, dict) and is_ours(h.get("command")))]
            if len(kept) == len(inner):
                kept_groups.append(group)
                continue
            removed = True
            if kept:
                kept_groups.append({**group, "hooks": kept})
        if len(kept_groups) != len(groups):
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if removed and not hooks:
        del data["hooks"]
    return removed


def _statusline_command(value: object) -> str | None:
    if isinstance(value, dict):
        command = value.get("command")
        return command if isinstance(command, str) else None
    return None


def find_installation(settings_dir: Path, agent: Agent = Agent.CLAUDE_CODE) -> tuple[list[str], str | None]:
    """(events that have a ctxhealth hook, the status-line command) as the settings file stands."""
    path = settings_dir / TARGETS[agent].file_name
    data = _parse(read_config(path), path)
    events: list[str] = []
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else ():
                inner = group.get("hooks") if isinstance(group, dict) else None
                if isinstance(inner, list) and any(
                    isinstance(h, dict) and is_ours(h.get("command")) for h in inner
                ):
                    events.append(event)
                    break
    return events, _statusline_command(data.get("statusLine"))


def plan_install(
    settings_dir: Path, *, python: str, force: bool = False, agent: Agent = Agent.CLAUDE_CODE
) -> InstallPlan:
    """The settings file that runs ctxhealth's hooks (and, for Claude Code, its status line) with the
    interpreter ``python``."""
    target = TARGETS[agent]
    path = settings_dir / target.file_name
    before = read_config(path)
    data = _parse(before, path)
    original = copy.deepcopy(data)
    _strip_ours(data)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError('"hooks" in settings is not an object', hint="fix it first", path=str(path))
    for event, matcher, timeout in target.events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f'"hooks.{event}" is not a list', hint="fix it first", path=str(path))
        groups.append(_hook_entry(python, target, event, matcher, timeout))
    if not target.statusline:
        after = before if data == original and before is not None else dump_json_object(data)
        return InstallPlan(path, before, after, _TRUST_NOTES.get(agent, ()))

    notes: list[str] = []
    ours = {"type": "command", "command": statusline_command(python), "padding": 0}
    current = data.get("statusLine")
    current_cmd = _statusline_command(current)
    previous: Any = None
    if current is None:
        change = StatusLineChange.ADD
        data["statusLine"] = ours
    elif is_ours(current_cmd):
        change = StatusLineChange.UNCHANGED if current == ours else StatusLineChange.REPLACE
        data["statusLine"] = ours
    elif force:
        change = StatusLineChange.REPLACE
        previous = current
        data["statusLine"] = ours
        notes.append(f"replacing your status line ({current_cmd!r}); uninstall puts it back")
    else:
        change = StatusLineChange.KEEP_THEIRS
        notes.append(
            f"kept your status line ({current_cmd!r}). To show both, set its command to "
            f"`{statusline_command(python)} --then '<your command>'`, or re-run with --force to replace it"
        )

    after = before if data == original and before is not None else dump_json_object(data)
    return InstallPlan(path, before, after, tuple(notes), statusline=change, previous_statusline=previous)


def plan_uninstall(settings_dir: Path, agent: Agent = Agent.CLAUDE_CODE) -> InstallPlan:
    """The settings file without ctxhealth: the backup's exact bytes when nothing else changed since,
    else the file without ctxhealth's hooks, with the user's own status line put back."""
    path = settings_dir / TARGETS[agent].file_name
    stripped_statusline: list[StatusLineChange] = []

    def strip(raw: bytes) -> bytes | None:
        data = _parse(raw, path)
        stripped = _strip_ours(data)
        change = StatusLineChange.UNCHANGED
        if is_ours(_statusline_command(data.get("statusLine"))):
            previous = load_manifest(FilePlan(path, None, None).manifest_path).get("previous_statusline")
            if previous is not None:
                data["statusLine"] = previous
                change = StatusLineChange.RESTORE_THEIRS
            else:
                del data["statusLine"]
                change = StatusLineChange.REMOVE
        stripped_statusline.append(change)
        if not stripped and change is StatusLineChange.UNCHANGED:
            return raw
        backup = read_config(FilePlan(path, None, None).backup_path)
        if backup is not None and data == _parse(backup, path):
            return backup
        return dump_json_object(data)

    plan = plan_uninstall_file(path, strip, same=same_json)
    if plan.notes == (RESTORED_NOTE,):  # the backup restored as it was
        change = StatusLineChange.REMOVE
    elif stripped_statusline:
        change = stripped_statusline[0]
    else:  # nothing there
        change = StatusLineChange.UNCHANGED
    return InstallPlan(
        plan.path,
        plan.before,
        plan.after,
        plan.notes,
        installing=False,
        restore_backup=plan.restore_backup,
        shared=plan.shared,
        statusline=change,
    )


def apply_plan(plan: InstallPlan) -> Path | None:
    """Write the plan atomically (backup + manifest on install); return the backup path if one was kept.
    A settings file that is a symbolic link is written through to its target."""
    return apply_file_plan(plan)
