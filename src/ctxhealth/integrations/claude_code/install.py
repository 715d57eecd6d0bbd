"""Installing ctxhealth into an agent's hook settings (Claude Code, Codex CLI, Gemini CLI), and out again.

The three agents keep hooks in the same JSON shape (``{"hooks": {EVENT: [{"matcher": ..., "hooks":
[{"type": "command", "command": ..., "timeout": ...}]}]}}``), in their own file: Claude Code's
``~/.claude/settings.json`` (plus its ``statusLine``), Codex CLI's ``~/.codex/hooks.json``
(``$CODEX_HOME``; timeouts in seconds), Gemini CLI's ``~/.gemini/settings.json`` (timeouts in
milliseconds, a ``name`` per hook). :data:`TARGETS` holds, per agent, the file, the events with their
matchers and timeouts; the plan, diff, backup and restore are one code path for all three. A
settings file that is a symbolic link is written through to its target (the link stays).

``plan_install`` / ``plan_uninstall`` compute the new file without touching disk, so the CLI can show a
unified diff (dry run) before ``apply`` writes it. Installing adds one hook group per event and a
status line, leaving every other key, hook and matcher as it was; a status line the user already has is
kept unless ``force`` (the plan says how to chain it instead). The first install keeps the original
bytes in ``settings.json.ctxhealth-backup`` and records in ``settings.json.ctxhealth-install.json``
the digest of what it wrote; uninstall restores the backup byte for byte when the file is still exactly
what install wrote, and otherwise removes only ctxhealth's own entries. Every write is atomic.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from ctxhealth.atomic import write_atomic
from ctxhealth.errors import ConfigError, EnvironmentProblem
from ctxhealth.integrations.claude_code.agents import Agent
from ctxhealth.integrations.claude_code.payloads import HookEvent

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
BACKUP_SUFFIX = ".ctxhealth-backup"
MANIFEST_SUFFIX = ".ctxhealth-install.json"
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


def hook_command(python: str, event: HookEvent | str, agent: Agent = Agent.CLAUDE_CODE) -> str:
    """The shell command an agent runs for ``event``: ``python -m`` skips the click CLI (faster)."""
    name = event.value if isinstance(event, HookEvent) else event
    flag = "" if agent is Agent.CLAUDE_CODE else f"--agent {agent.value} "
    return f"{shlex.quote(python)} -m ctxhealth.cli.hook {flag}{name}"


def statusline_command(python: str) -> str:
    return f"{shlex.quote(python)} -m ctxhealth.cli.statusline"


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
class InstallPlan:
    """A settings.json change, computed but not yet written.

    ``after`` None means the file is deleted (uninstalling from a file that install created).
    ``restore_backup`` means ``after`` is the backup's exact bytes.
    """

    settings_path: Path
    before: bytes | None
    after: bytes | None
    statusline: StatusLineChange
    notes: tuple[str, ...] = ()
    installing: bool = True
    restore_backup: bool = False
    previous_statusline: Any = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def backup_path(self) -> Path:
        return self.settings_path.with_name(self.settings_path.name + BACKUP_SUFFIX)

    @property
    def manifest_path(self) -> Path:
        return self.settings_path.with_name(self.settings_path.name + MANIFEST_SUFFIX)

    def diff(self) -> str:
        """A unified diff of the settings file, before -> after ("" when nothing changes)."""
        if not self.changed:
            return ""
        name = str(self.settings_path)
        old = (self.before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
        new = (self.after or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile=name if self.before is not None else "/dev/null",
            tofile=name if self.after is not None else "/dev/null",
        )
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
        )


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


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot read {path}: {exc.strerror}", hint="check its permissions"
        ) from None


def _parse(raw: bytes | None, path: Path) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(
            f"settings file is not valid JSON ({exc})",
            hint="fix it (Claude Code cannot read it either) or pass --claude-dir to another directory",
            path=str(path),
        ) from None
    if not isinstance(data, dict):
        raise ConfigError("settings file is not a JSON object", hint="fix it first", path=str(path))
    return data


def _dump(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _digest(raw: bytes | None) -> str | None:
    return None if raw is None else hashlib.sha256(raw).hexdigest()


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
    data = _parse(_read(path), path)
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
    before = _read(path)
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
        after = before if data == original and before is not None else _dump(data)
        trust = _TRUST_NOTES.get(agent, ())
        return InstallPlan(path, before, after, StatusLineChange.UNCHANGED, trust, installing=True)

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

    after = before if data == original and before is not None else _dump(data)
    return InstallPlan(
        path, before, after, change, tuple(notes), installing=True, previous_statusline=previous
    )


def _load_manifest(path: Path) -> dict[str, Any]:
    raw = _read(path)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def plan_uninstall(settings_dir: Path, agent: Agent = Agent.CLAUDE_CODE) -> InstallPlan:
    """The settings file without ctxhealth: the backup's exact bytes when nothing else changed since."""
    path = settings_dir / TARGETS[agent].file_name
    probe = InstallPlan(path, None, None, StatusLineChange.UNCHANGED)
    before = _read(path)
    manifest = _load_manifest(probe.manifest_path)
    backup = _read(probe.backup_path)
    original_existed = bool(manifest.get("original_existed", backup is not None))

    untouched = manifest and before is not None and _digest(before) == manifest.get("installed_sha256")
    if untouched and (backup is not None or not original_existed):
        after = backup if original_existed else None
        return InstallPlan(
            path,
            before,
            after,
            StatusLineChange.REMOVE,
            ("restored the backup taken at install",),
            installing=False,
            restore_backup=True,
        )

    data = _parse(before, path)
    stripped = _strip_ours(data)
    change = StatusLineChange.UNCHANGED
    if is_ours(_statusline_command(data.get("statusLine"))):
        previous = manifest.get("previous_statusline")
        if previous is not None:
            data["statusLine"] = previous
            change = StatusLineChange.RESTORE_THEIRS
        else:
            del data["statusLine"]
            change = StatusLineChange.REMOVE
    if not stripped and change is StatusLineChange.UNCHANGED:
        return InstallPlan(
            path, before, before, change, ("ctxhealth is not installed here",), installing=False
        )
    notes = ["settings changed since install: removed only ctxhealth's entries"] if manifest else []
    if backup is not None and data == _parse(backup, path):
        return InstallPlan(path, before, backup, change, tuple(notes), installing=False, restore_backup=True)
    return InstallPlan(path, before, _dump(data), change, tuple(notes), installing=False)


def _through(path: Path) -> Path:
    """Where to write ``path``: a symbolic link's target (the link, maybe into a dotfiles repository,
    stays a link), else the path itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def apply_plan(plan: InstallPlan) -> Path | None:
    """Write the plan atomically (backup + manifest on install); return the backup path if one was kept.
    A settings file that is a symbolic link is written through to its target."""
    if not plan.changed:
        return plan.backup_path if plan.backup_path.exists() else None
    if plan.installing:
        manifest = _load_manifest(plan.manifest_path)
        if not manifest:
            # The first install keeps the user's own file; later installs must not overwrite it with ours.
            if plan.before is not None:
                write_atomic(plan.backup_path, plan.before, mode=_mode(plan.settings_path))
            manifest = {"schema_version": 1, "original_existed": plan.before is not None}
        if plan.previous_statusline is not None:
            manifest["previous_statusline"] = plan.previous_statusline
        after = plan.after or b"{}\n"  # installing always produces a file
        manifest["installed_sha256"] = _digest(after)
        write_atomic(_through(plan.settings_path), after, mode=_mode(plan.settings_path))
        write_atomic(plan.manifest_path, _dump(manifest))
        return plan.backup_path if plan.backup_path.exists() else None
    if plan.after is None:
        plan.settings_path.unlink(missing_ok=True)
    else:
        write_atomic(_through(plan.settings_path), plan.after, mode=_mode(plan.settings_path))
    for leftover in (plan.manifest_path, plan.backup_path):
        leftover.unlink(missing_ok=True)
    return None


def _mode(path: Path) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        return 0o644
