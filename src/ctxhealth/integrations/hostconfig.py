"""Editing an agent host's own files, the way every ``ctxhealth install`` does it: compute the new
bytes without touching disk (a :class:`FilePlan`, shown as a unified diff in a dry run), then
``apply_file_plan`` writes them atomically, keeping the user's original the first time.

Every installer writes through here: the hook installers (``integrations.claude_code.install``), the
MCP server entries (``integrations.mcp_install``) and the skill (``integrations.skill``). The first
install keeps the original bytes in ``<file>.ctxhealth-backup`` and records in
``<file>.ctxhealth-install.json`` the digest of what it wrote; :func:`plan_uninstall_file` restores the
backup byte for byte when the file is still exactly what install wrote, and otherwise removes only
ctxhealth's own entries (the caller's ``strip``). Two installers may write one file (Gemini CLI's
settings.json: hooks and MCP server); they share the pair, and each uninstall takes out only its own
entries until the last one restores the original (when nothing else changed the file). Installing
again is a no-op when nothing changed. Host-specific shapes (JSON settings with an ``mcpServers`` table,
a TOML ``[mcp_servers]`` table, a skill folder) live with their installers; this module only knows
bytes, JSON objects and the backup/manifest pair (a plan may add its own fields to the manifest:
:meth:`FilePlan.manifest_fields`). A file that is a symbolic link is written through to its target
(:func:`ctxhealth.atomic.write_atomic`), so a link into a dotfiles repository stays a link.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxhealth.atomic import write_atomic
from ctxhealth.errors import ConfigError, EnvironmentProblem

__all__ = [
    "BACKUP_SUFFIX",
    "MANIFEST_SUFFIX",
    "RESTORED_NOTE",
    "SHARED_NOTE",
    "FilePlan",
    "apply_file_plan",
    "digest",
    "dump_json_object",
    "file_mode",
    "load_manifest",
    "parse_json_object",
    "plan_install_file",
    "plan_uninstall_file",
    "read_config",
    "same_json",
    "same_text",
    "unified_diff",
]

BACKUP_SUFFIX = ".ctxhealth-backup"
MANIFEST_SUFFIX = ".ctxhealth-install.json"


def read_config(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot read {path}: {exc.strerror}", hint="check its permissions"
        ) from None


def digest(raw: bytes | None) -> str | None:
    return None if raw is None else hashlib.sha256(raw).hexdigest()


def file_mode(path: Path) -> int:
    """The permission bits of ``path`` (0o644 when it does not exist yet), kept across rewrites."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        return 0o644


def unified_diff(path: Path, before: bytes | None, after: bytes | None) -> str:
    """A unified diff of the file, before -> after ("" when nothing changes)."""
    if before == after:
        return ""
    name = str(path)
    old = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    new = (after or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    lines = difflib.unified_diff(
        old,
        new,
        fromfile=name if before is not None else "/dev/null",
        tofile=name if after is not None else "/dev/null",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def parse_json_object(raw: bytes | None, path: Path, *, fix: str, what: str = "") -> dict[str, Any]:
    """The JSON object in ``raw`` ({} for a missing or blank file); ``fix`` says what to do otherwise,
    ``what`` names the file in the message ("settings file is not valid JSON")."""
    if raw is None or not raw.strip():
        return {}
    subject = f"{what} is not" if what else "not"
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{subject} valid JSON ({exc})", hint=fix, path=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{subject} a JSON object", hint=fix, path=str(path))
    return data


def dump_json_object(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


@dataclass(frozen=True, slots=True)
class FilePlan:
    """One file's change, computed but not yet written. ``after`` None deletes the file;
    ``restore_backup`` means ``after`` is the backup's exact bytes."""

    path: Path
    before: bytes | None
    after: bytes | None
    notes: tuple[str, ...] = ()
    installing: bool = True
    restore_backup: bool = False
    keep_backup: bool = True
    """Keep the user's original on the first install (a shared settings file); False for a file that
    is wholly ctxhealth's (a skill's SKILL.md)."""
    shared: bool = False
    """Uninstall only: another installer's entries stay in the file, so the backup/manifest pair stays
    too (its digest updated to ``after``)."""

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def backup_path(self) -> Path:
        return self.path.with_name(self.path.name + BACKUP_SUFFIX)

    @property
    def manifest_path(self) -> Path:
        return self.path.with_name(self.path.name + MANIFEST_SUFFIX)

    def diff(self) -> str:
        return unified_diff(self.path, self.before, self.after)

    def manifest_fields(self) -> dict[str, Any]:
        """What this install keeps in the manifest beside the digest (e.g. the status line it
        replaced), for uninstall to read back."""
        return {}


def load_manifest(path: Path) -> dict[str, Any]:
    """The install manifest at ``path`` ({} when it is missing or not a JSON object)."""
    raw = read_config(path)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def plan_install_file(
    path: Path, render: Callable[[bytes | None], bytes], *, keep_backup: bool = True
) -> FilePlan:
    """The plan that replaces the file by ``render(current bytes)`` (no change when they are equal)."""
    before = read_config(path)
    return FilePlan(path, before, render(before), installing=True, keep_backup=keep_backup)


RESTORED_NOTE = "restored the file as it was before install"
SHARED_NOTE = "kept the backup for the other ctxhealth entries still in the file"


def same_text(a: bytes | None, b: bytes | None) -> bool:
    """Whether two versions of a text file say the same, blank lines at either end aside (a missing file
    is an empty one)."""
    return (a or b"").strip() == (b or b"").strip()


def same_json(a: bytes | None, b: bytes | None) -> bool:
    """Whether two versions of a JSON file hold the same object (a missing or blank file is ``{}``);
    falls back to :func:`same_text` when either is not a JSON object."""
    try:
        return _json_object(a) == _json_object(b)
    except ValueError:
        return same_text(a, b)


def _json_object(raw: bytes | None) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def plan_uninstall_file(
    path: Path,
    strip: Callable[[bytes], bytes | None],
    *,
    same: Callable[[bytes | None, bytes | None], bool] = same_text,
) -> FilePlan:
    """The file without this installer's entries (``strip`` removes them: it returns its argument when
    nothing of ours is there, None to delete the file; it is called on the current bytes first).

    Several installers may share one file and so one backup/manifest pair (Gemini CLI's settings.json
    holds both the hooks and the MCP server). When the file is still exactly what the last install
    wrote, and removing this installer's entries leaves what the backup holds (``same`` compares,
    after ``strip`` has taken our entries out of both), the backup's exact bytes come back. When
    another installer's entries remain, only ours go and the pair stays, its digest updated, so that
    the last uninstall still restores the original byte for byte. A file changed since install loses
    only our entries, and the pair goes."""
    probe = FilePlan(path, None, None)
    before = read_config(path)
    if before is None:
        return FilePlan(path, None, None, ("ctxhealth is not installed here",), installing=False)
    after = strip(before)
    if after == before:
        return FilePlan(path, before, before, ("ctxhealth is not installed here",), installing=False)
    manifest = load_manifest(probe.manifest_path)
    backup = read_config(probe.backup_path)
    original_existed = bool(manifest.get("original_existed", backup is not None))
    untouched = bool(manifest) and digest(before) == manifest.get("installed_sha256")
    if untouched and (backup is not None or not original_existed):
        original = backup if original_existed else None
        if same(after, original if original is None else strip(original)):
            return FilePlan(path, before, original, (RESTORED_NOTE,), installing=False, restore_backup=True)
        return FilePlan(path, before, after, (SHARED_NOTE,), installing=False, shared=True)
    notes = ("the file changed since install: removed only ctxhealth's entries",) if manifest else ()
    return FilePlan(path, before, after, notes, installing=False, restore_backup=after == backup)


def apply_file_plan(plan: FilePlan) -> Path | None:
    """Write the plan atomically (backup + manifest on install); return the backup path if one is kept."""
    backup = plan.backup_path
    if not plan.changed:
        return backup if backup.exists() else None
    if plan.installing:
        manifest = load_manifest(plan.manifest_path)
        if plan.keep_backup and not manifest:
            # The first install keeps the user's own file; later installs must not overwrite it with ours.
            if plan.before is not None:
                write_atomic(backup, plan.before, mode=file_mode(plan.path))
            manifest = {"schema_version": 1, "original_existed": plan.before is not None}
        manifest.update(plan.manifest_fields())
        after = plan.after or b""
        write_atomic(plan.path, after, mode=file_mode(plan.path))
        if plan.keep_backup:
            manifest["installed_sha256"] = digest(after)
            write_atomic(plan.manifest_path, dump_json_object(manifest))
        return backup if backup.exists() else None
    if plan.after is None:
        plan.path.unlink(missing_ok=True)
    else:
        write_atomic(plan.path, plan.after, mode=file_mode(plan.path))
    if plan.shared and plan.after is not None:
        # another installer's entries remain in the file: its uninstall still restores the original
        manifest = load_manifest(plan.manifest_path)
        if manifest:
            manifest["installed_sha256"] = digest(plan.after)
            write_atomic(plan.manifest_path, dump_json_object(manifest))
            return backup if backup.exists() else None
    for leftover in (plan.manifest_path, backup):
        leftover.unlink(missing_ok=True)
    return None
