"""The files under a state root, read and written safely.

Layout (``root`` is chosen by the caller; the CLI uses ``--root`` / ``CTXHEALTH_ROOT``)::

    root/task-state.json                 the truth (schema ``ctxhealth/task-state``)
    root/control.json                    halt record, override allowance, gate counter
    root/summaries/latest-summary.md     stable alias of the newest summary
    root/summaries/summary-<ts>.md       every summary ever written
    root/checkpoints/                    state checkpoints and transcript checkpoints
    root/snapshots/                      pre-compaction snapshots
    root/memory/{learnings,issues,decisions}.md
    root/archive/<ts>/                   whatever ``archive`` moved aside

Every write is atomic (:func:`ctxhealth.atomic.write_atomic`), private (files ``0600``, new
directories ``0700``) and redacted (:func:`ctxhealth.redact.scrub`) in :meth:`StateStore.write_file`. Before
any write the root is checked for legacy or foreign state files; if there are any,
the write is refused until they are archived explicitly.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ctxhealth.atomic import fsync_dir, write_atomic
from ctxhealth.errors import EnvironmentProblem, StateError
from ctxhealth.redact import scrub
from ctxhealth.state.schema import (
    SchemaKind,
    TaskState,
    classify_document,
    dump_state,
    parse_state,
    state_from_dict,
    state_to_dict,
)
from ctxhealth.state.summary import render_summary

__all__ = [
    "LEGACY_NAMES",
    "ArchiveResult",
    "Control",
    "HaltRecord",
    "StateStore",
    "stamp",
]

STATE_FILE = "task-state.json"
CONTROL_FILE = "control.json"
LATEST_SUMMARY = "latest-summary.md"
# Names that earlier layouts and similar tools use for the same purpose, at the root.
LEGACY_NAMES = (
    "task_state.json",
    "state.json",
    "TASK_STATE.json",
    ".task-state.json",
    "latest-summary.md",
    "latest_summary.md",
)
_ARCHIVE_HINT = "run `ctxhealth state archive` to move it aside (nothing is deleted), then retry"

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def stamp(moment: datetime) -> str:
    """A file-name-safe UTC timestamp with microseconds: ``20261130T083348.123456Z``."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


@dataclass(frozen=True, slots=True)
class HaltRecord:
    """Why and when the gate halted the agent."""

    reason: str
    at: str
    pressure: float | None = None
    turn: int | None = None


@dataclass(frozen=True, slots=True)
class Control:
    """The gate's own small state: halt, remaining overrides, turns seen, override log."""

    halt: HaltRecord | None = None
    override_remaining: int = 0
    gate_calls: int = 0
    overrides: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        halt = None
        if self.halt is not None:
            halt = {
                "reason": self.halt.reason,
                "at": self.halt.at,
                "pressure": self.halt.pressure,
                "turn": self.halt.turn,
            }
        return {
            "schema": "ctxhealth/control",
            "schema_version": 1,
            "halt": halt,
            "override_remaining": self.override_remaining,
            "gate_calls": self.gate_calls,
            "overrides": list(self.overrides),
        }


def _control_from_dict(obj: Any, path: str) -> Control:
    def bad(what: str) -> StateError:
        return StateError(f"control file field `{what}` is invalid", hint=_ARCHIVE_HINT, path=path)

    if not isinstance(obj, dict) or obj.get("schema") != "ctxhealth/control":
        raise bad("schema")
    halt_raw = obj.get("halt")
    halt = None
    if halt_raw is not None:
        if not isinstance(halt_raw, dict) or not isinstance(halt_raw.get("reason"), str):
            raise bad("halt")
        pressure = halt_raw.get("pressure")
        turn = halt_raw.get("turn")
        halt = HaltRecord(
            reason=halt_raw["reason"],
            at=str(halt_raw.get("at", "")),
            pressure=float(pressure) if isinstance(pressure, int | float) else None,
            turn=turn if isinstance(turn, int) else None,
        )
    remaining = obj.get("override_remaining", 0)
    calls = obj.get("gate_calls", 0)
    overrides = obj.get("overrides", [])
    if not isinstance(remaining, int) or remaining < 0:
        raise bad("override_remaining")
    if not isinstance(calls, int) or calls < 0:
        raise bad("gate_calls")
    if not isinstance(overrides, list):
        raise bad("overrides")
    return Control(halt, remaining, calls, tuple(o for o in overrides if isinstance(o, dict)))


@dataclass(frozen=True, slots=True)
class ArchiveResult:
    destination: Path
    moved: tuple[Path, ...]


def _special_kind(path: Path) -> str | None:
    """``"FIFO"``, ``"socket"`` or ``"device"`` when ``path`` is one (reading it could block), else
    None (a regular file, a directory, or nothing)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


def _refuse_special(path: Path, what: str) -> None:
    kind = _special_kind(path)
    if kind is not None:
        raise StateError(
            f"the {what} file is a {kind}, not a regular file",
            hint="remove it, or run `ctxhealth state archive` to move it aside",
            path=str(path),
        )


class StateStore:
    """The state files of one task under ``root``. Cheap to create; touches the disk only when asked."""

    def __init__(self, root: Path, *, clock: Clock = _utc_now) -> None:
        self.root = Path(root)
        self._clock = clock
        kind = _special_kind(self.root)
        if kind is not None:
            raise EnvironmentProblem(
                f"the state root is a {kind}, not a directory",
                hint="point --root / CTXHEALTH_ROOT at a directory (it is created when missing)",
                path=str(self.root),
            )

    # -- paths -----------------------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FILE

    @property
    def control_path(self) -> Path:
        return self.root / CONTROL_FILE

    @property
    def summaries_dir(self) -> Path:
        return self.root / "summaries"

    @property
    def latest_summary_path(self) -> Path:
        return self.summaries_dir / LATEST_SUMMARY

    @property
    def checkpoints_dir(self) -> Path:
        return self.root / "checkpoints"

    @property
    def snapshots_dir(self) -> Path:
        return self.root / "snapshots"

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    @property
    def archive_dir(self) -> Path:
        return self.root / "archive"

    # -- time ------------------------------------------------------------------------------

    def now(self) -> datetime:
        return self._clock()

    def now_iso(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

    def unique_path(self, directory: Path, prefix: str, suffix: str) -> Path:
        """``directory/prefix-<timestamp>suffix``, with a counter if that name is taken."""
        base = f"{prefix}-{stamp(self.now())}"
        candidate = directory / f"{base}{suffix}"
        n = 1
        while candidate.exists():
            candidate = directory / f"{base}-{n}{suffix}"
            n += 1
        return candidate

    # -- detection -------------------------------------------------------------------------

    def foreign_files(self) -> list[tuple[Path, SchemaKind]]:
        """Legacy or foreign state files in the root that must be archived before any write."""
        found: list[tuple[Path, SchemaKind]] = []
        for name in LEGACY_NAMES:
            candidate = self.root / name
            if candidate.is_file():
                found.append((candidate, SchemaKind.LEGACY))
        if self.state_path.is_file():
            try:
                obj = orjson.loads(self.state_path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                return found  # corrupt, not foreign: reported as an invalid state instead
            kind = classify_document(obj)
            if kind is not SchemaKind.CURRENT:
                found.append((self.state_path, kind))
        return found

    def check_writable(self) -> None:
        """Refuse to write over legacy or foreign state (raises :class:`StateError`)."""
        found = self.foreign_files()
        if found:
            listing = ", ".join(f"{p.name} ({k.value})" for p, k in found)
            raise StateError(
                f"legacy or foreign state found in the state root: {listing}",
                hint=_ARCHIVE_HINT,
                path=str(self.root),
            )

    def write_file(self, path: Path, data: bytes | str) -> Path:
        """Write one file under the root atomically, redacted (:func:`ctxhealth.redact.scrub`, whatever
        the caller did before) and private (``0600``, new directories ``0700``); an OS failure becomes
        a clear error."""
        try:
            return write_atomic(path, scrub(data))
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot write {path.name}: {exc.strerror or exc}",
                hint="check that the state root is a writable directory (--root / CTXHEALTH_ROOT)",
                path=str(path),
            ) from exc

    # -- task state ------------------------------------------------------------------------

    def has_state(self) -> bool:
        return self.state_path.exists()

    def has_summary(self) -> bool:
        return self.latest_summary_path.exists()

    def read_state_bytes(self) -> bytes:
        _refuse_special(self.state_path, "task state")
        try:
            return self.state_path.read_bytes()
        except OSError as exc:
            raise StateError(
                f"cannot read the task state: {exc.strerror or exc}",
                hint="check the path and permissions, or run `ctxhealth state ensure` to create it",
                path=str(self.state_path),
            ) from exc

    def read_state(self) -> TaskState | None:
        """The task state, None when there is none (raises :class:`StateError` when invalid)."""
        if not self.state_path.exists():
            return None
        return parse_state(self.read_state_bytes(), path=str(self.state_path))

    def write_state(self, state: TaskState) -> TaskState:
        """Validate, redact and write the task state atomically; return what was written."""
        self.check_writable()
        clean = state_from_dict(scrub(state_to_dict(state)), path=str(self.state_path))
        self.write_file(self.state_path, dump_state(clean))
        return clean

    # -- summaries -------------------------------------------------------------------------

    def read_summary(self) -> str | None:
        try:
            return self.latest_summary_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateError(
                f"cannot read the summary: {exc.strerror or exc}",
                hint="check permissions",
                path=str(self.latest_summary_path),
            ) from exc

    def write_summary(self, state: TaskState) -> Path:
        """Write a timestamped summary, then the stable alias; return the timestamped path."""
        self.check_writable()
        text = scrub(render_summary(state))
        copy = self.unique_path(self.summaries_dir, "summary", ".md")
        self.write_file(copy, text)
        self.write_file(self.latest_summary_path, text)
        return copy

    def set_aside_summary(self) -> Path | None:
        """Keep a conflicting summary as ``summaries/conflict-<ts>.md`` before it is rewritten."""
        if not self.latest_summary_path.exists():
            return None
        target = self.unique_path(self.summaries_dir, "conflict", ".md")
        try:
            os.replace(self.latest_summary_path, target)
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot set the conflicting summary aside: {exc.strerror or exc}",
                hint="check permissions on the summaries directory",
                path=str(self.latest_summary_path),
            ) from exc
        fsync_dir(self.summaries_dir)
        return target

    # -- checkpoints of the state ----------------------------------------------------------

    def write_state_checkpoint(self, state: TaskState, label: str = "state") -> Path:
        """A copy of the task state under ``checkpoints/`` (never overwritten)."""
        self.check_writable()
        path = self.unique_path(self.checkpoints_dir, label, ".json")
        self.write_file(path, dump_state(state))
        return path

    # -- control ---------------------------------------------------------------------------

    def read_control(self) -> Control:
        if not self.control_path.exists():
            return Control()
        _refuse_special(self.control_path, "control")
        try:
            obj = orjson.loads(self.control_path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise StateError(
                f"the control file cannot be read ({exc})", hint=_ARCHIVE_HINT, path=str(self.control_path)
            ) from None
        return _control_from_dict(obj, str(self.control_path))

    def write_control(self, control: Control) -> None:
        self.check_writable()
        data = orjson.dumps(scrub(control.to_dict()), option=orjson.OPT_INDENT_2) + b"\n"
        self.write_file(self.control_path, data)

    def clear_halt(self, *, reason: str, allow: int) -> Control:
        """Lift a halt and allow ``allow`` gate passes at critical pressure."""
        control = self.read_control()
        entry = {
            "at": self.now_iso(),
            "reason": reason,
            "allow": allow,
            "halt_reason": control.halt.reason if control.halt else None,
        }
        updated = replace(
            control,
            halt=None,
            override_remaining=allow,
            overrides=(*control.overrides, entry)[-20:],
        )
        self.write_control(updated)
        return updated

    # -- archive ---------------------------------------------------------------------------

    def archive(self) -> ArchiveResult:
        """Move the task state, latest summary, control file and legacy files to ``archive/<ts>/``.

        Timestamped summaries, checkpoints, snapshots and memory stay where they are.
        """
        candidates = [self.state_path, self.latest_summary_path, self.control_path]
        candidates += [self.root / name for name in LEGACY_NAMES]
        present = [p for p in candidates if p.is_file()]
        destination = self.unique_path(self.archive_dir, "archive", "")
        if not present:
            return ArchiveResult(destination, ())
        moved: list[Path] = []
        try:
            destination.mkdir(parents=True, exist_ok=False)
            for source in present:
                relative = source.relative_to(self.root)
                target = destination / str(relative).replace(os.sep, "__")
                os.replace(source, target)
                moved.append(target)
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot archive the state: {exc.strerror or exc} ({len(moved)} file(s) moved so far)",
                hint="check permissions on the state root, then run `ctxhealth state archive` again",
                path=str(destination),
            ) from exc
        fsync_dir(destination)
        fsync_dir(self.root)
        if self.summaries_dir.is_dir():
            fsync_dir(self.summaries_dir)
        return ArchiveResult(destination, tuple(moved))
