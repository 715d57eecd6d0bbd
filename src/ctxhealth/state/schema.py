"""The task-state document: a versioned JSON schema, its validation, and (de)serialisation.

A task state is the truth about a long task kept outside the model: goal, phase,
next action, what was done and decided, what failed, what blocks. The file carries
``"schema": "ctxhealth/task-state"`` and ``"schema_version"`` so files written by
other tools (or by an older ctxhealth) are recognised before anything overwrites them.

Validation errors name the field (``decisions[2].why``) and say how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import orjson

from ctxhealth.errors import StateError

__all__ = [
    "DONE_ACTIONS",
    "REQUIRED_FIELDS",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "START_ACTION",
    "Artifact",
    "Decision",
    "FailedAttempt",
    "LastAction",
    "Outcome",
    "SchemaKind",
    "TaskState",
    "classify_document",
    "decode_document",
    "dump_state",
    "merge_update",
    "missing_required",
    "parse_state",
    "state_from_dict",
    "state_to_dict",
]

SCHEMA_NAME = "ctxhealth/task-state"
SCHEMA_VERSION = 1
START_ACTION = "START"
DONE_ACTIONS = frozenset({"DONE", "COMPLETE", "FINISH"})
REQUIRED_FIELDS = ("goal", "current_phase", "next_action")

_HINT = "fix the field in the state file, or run `ctxhealth state archive` to move it aside and start over"


class Outcome(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


class SchemaKind(StrEnum):
    """What a JSON document found where the task state belongs turned out to be."""

    CURRENT = "current"
    LEGACY = "legacy"  # ours, older schema (or a known older layout without the schema marker)
    NEWER = "newer"  # ours, written by a newer ctxhealth
    FOREIGN = "foreign"  # somebody else's file


@dataclass(frozen=True, slots=True)
class LastAction:
    summary: str = ""
    outcome: Outcome = Outcome.UNKNOWN


@dataclass(frozen=True, slots=True)
class Decision:
    decision: str
    why: str


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    attempt: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Artifact:
    path: str
    role: str = ""


@dataclass(frozen=True, slots=True)
class TaskState:
    """One task's durable state. ``updated_at`` is an ISO-8601 UTC timestamp."""

    goal: str
    current_phase: str
    next_action: str
    last_action: LastAction = field(default_factory=LastAction)
    constraints: tuple[str, ...] = ()
    invariants: tuple[str, ...] = ()
    decisions: tuple[Decision, ...] = ()
    completed_steps: tuple[str, ...] = ()
    failed_attempts: tuple[FailedAttempt, ...] = ()
    blockers: tuple[str, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    important_outputs: tuple[str, ...] = ()
    updated_at: str = ""

    @property
    def is_done(self) -> bool:
        return self.next_action.strip().upper() in DONE_ACTIONS

    def touched(self, now: str) -> TaskState:
        return replace(self, updated_at=now)


# -- validation ------------------------------------------------------------------------------


def _fail(field_name: str, problem: str, path: str | None) -> StateError:
    return StateError(f"task state field `{field_name}` {problem}", hint=_HINT, path=path)


def _str(obj: dict[str, Any], key: str, where: str, path: str | None, *, default: str | None = None) -> str:
    if key not in obj:
        if default is None:
            raise _fail(where + key, "is missing", path)
        return default
    value = obj[key]
    if not isinstance(value, str):
        raise _fail(where + key, f"must be a string, not {type(value).__name__}", path)
    return value


def _list(obj: dict[str, Any], key: str, path: str | None) -> list[Any]:
    value = obj.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(key, f"must be a list, not {type(value).__name__}", path)
    return value


def _strings(obj: dict[str, Any], key: str, path: str | None) -> tuple[str, ...]:
    items = _list(obj, key, path)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise _fail(f"{key}[{i}]", f"must be a string, not {type(item).__name__}", path)
    return tuple(items)


def _records(obj: dict[str, Any], key: str, path: str | None) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for i, item in enumerate(_list(obj, key, path)):
        if not isinstance(item, dict):
            raise _fail(f"{key}[{i}]", f"must be an object, not {type(item).__name__}", path)
        out.append((f"{key}[{i}].", item))
    return out


def missing_required(obj: dict[str, Any]) -> list[str]:
    """Required fields absent (or null) from the document, plus ``next_action`` when it is an empty
    string. A field of the wrong type is not missing: :func:`state_from_dict` rejects it by name
    (INVALID_STATE, not MISSING_STATE)."""
    missing = [name for name in REQUIRED_FIELDS if obj.get(name) is None]
    next_action = obj.get("next_action")
    if "next_action" not in missing and isinstance(next_action, str) and not next_action.strip():
        missing.append("next_action")
    return missing


def classify_document(obj: Any) -> SchemaKind:
    """Tell our current task state from a legacy, newer or foreign document."""
    if not isinstance(obj, dict):
        return SchemaKind.FOREIGN
    name = obj.get("schema")
    version = obj.get("schema_version")
    if name == SCHEMA_NAME:
        if not isinstance(version, int) or isinstance(version, bool):
            return SchemaKind.FOREIGN
        if version == SCHEMA_VERSION:
            return SchemaKind.CURRENT
        return SchemaKind.NEWER if version > SCHEMA_VERSION else SchemaKind.LEGACY
    if name is None and {"goal", "next_action"} <= obj.keys():
        return SchemaKind.LEGACY  # the unversioned layout of hand-written / earlier state files
    return SchemaKind.FOREIGN


def state_from_dict(obj: Any, *, path: str | None = None) -> TaskState:
    """Validate a decoded document and build a :class:`TaskState` (raises :class:`StateError`)."""
    if not isinstance(obj, dict):
        raise StateError(f"task state must be a JSON object, not {type(obj).__name__}", hint=_HINT, path=path)
    kind = classify_document(obj)
    if kind is not SchemaKind.CURRENT:
        raise StateError(
            f"not a current ctxhealth task state ({kind.value} document; schema "
            f"{obj.get('schema')!r} version {obj.get('schema_version')!r})",
            hint="run `ctxhealth state archive` to move it aside; nothing was overwritten",
            path=path,
        )
    last_raw = obj.get("last_action", {})
    if last_raw is None:
        last_raw = {}
    if not isinstance(last_raw, dict):
        raise _fail("last_action", f"must be an object, not {type(last_raw).__name__}", path)
    outcome_raw = _str(last_raw, "outcome", "last_action.", path, default=Outcome.UNKNOWN.value)
    try:
        outcome = Outcome(outcome_raw)
    except ValueError:
        allowed = ", ".join(o.value for o in Outcome)
        raise _fail("last_action.outcome", f"must be one of {allowed}, not {outcome_raw!r}", path) from None
    return TaskState(
        goal=_str(obj, "goal", "", path),
        current_phase=_str(obj, "current_phase", "", path),
        next_action=_str(obj, "next_action", "", path),
        last_action=LastAction(_str(last_raw, "summary", "last_action.", path, default=""), outcome),
        constraints=_strings(obj, "constraints", path),
        invariants=_strings(obj, "invariants", path),
        decisions=tuple(
            Decision(_str(d, "decision", w, path), _str(d, "why", w, path))
            for w, d in _records(obj, "decisions", path)
        ),
        completed_steps=_strings(obj, "completed_steps", path),
        failed_attempts=tuple(
            FailedAttempt(_str(d, "attempt", w, path), _str(d, "reason", w, path, default=""))
            for w, d in _records(obj, "failed_attempts", path)
        ),
        blockers=_strings(obj, "blockers", path),
        artifacts=tuple(
            Artifact(_str(d, "path", w, path), _str(d, "role", w, path, default=""))
            for w, d in _records(obj, "artifacts", path)
        ),
        important_outputs=_strings(obj, "important_outputs", path),
        updated_at=_str(obj, "updated_at", "", path, default=""),
    )


def state_to_dict(state: TaskState) -> dict[str, Any]:
    """The JSON document for ``state`` (schema marker first, fields in a stable order)."""
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "goal": state.goal,
        "current_phase": state.current_phase,
        "next_action": state.next_action,
        "last_action": {"summary": state.last_action.summary, "outcome": state.last_action.outcome.value},
        "constraints": list(state.constraints),
        "invariants": list(state.invariants),
        "decisions": [{"decision": d.decision, "why": d.why} for d in state.decisions],
        "completed_steps": list(state.completed_steps),
        "failed_attempts": [{"attempt": f.attempt, "reason": f.reason} for f in state.failed_attempts],
        "blockers": list(state.blockers),
        "artifacts": [{"path": a.path, "role": a.role} for a in state.artifacts],
        "important_outputs": list(state.important_outputs),
        "updated_at": state.updated_at,
    }


def dump_state(state: TaskState) -> bytes:
    """Serialise to indented JSON bytes (trailing newline), ready for an atomic write."""
    return orjson.dumps(state_to_dict(state), option=orjson.OPT_INDENT_2) + b"\n"


def decode_document(data: bytes, *, path: str | None = None) -> Any:
    """Decode JSON bytes, turning a decode failure (corrupt / truncated file) into a StateError."""
    if not data.strip():
        raise StateError("task state file is empty", hint=_HINT, path=path)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StateError(f"task state is not valid JSON ({exc})", hint=_HINT, path=path) from None


def parse_state(data: bytes, *, path: str | None = None) -> TaskState:
    """Decode and validate a task-state file's bytes."""
    return state_from_dict(decode_document(data, path=path), path=path)


def merge_update(state: TaskState, update: Any, *, path: str | None = None) -> TaskState:
    """Apply a partial document (only the fields given) on top of ``state`` and re-validate."""
    if not isinstance(update, dict):
        raise StateError(
            f"a state update must be a JSON object, not {type(update).__name__}",
            hint='pass an object such as {"next_action": "run the tests"}',
            path=path,
        )
    unknown = sorted(set(update) - set(state_to_dict(state)))
    if unknown:
        raise StateError(
            f"unknown task state field(s): {', '.join(unknown)}",
            hint="allowed fields: "
            + ", ".join(k for k in state_to_dict(state) if not k.startswith("schema")),
            path=path,
        )
    merged = state_to_dict(state) | update
    merged["schema"], merged["schema_version"] = SCHEMA_NAME, SCHEMA_VERSION
    try:
        return state_from_dict(merged, path=path)
    except StateError as exc:
        # the saved state was valid: the bad field came with the update, so blame the update
        raise StateError(
            f"the update's {exc.message.removeprefix('task state ')}",
            hint="fix that field in the update (--update / --set); the task state was not changed",
        ) from None
