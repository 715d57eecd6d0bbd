"""The pre-compaction snapshot and the memory files (learnings, issues, decisions).

A host that is about to compact its context can save a snapshot of what compaction
tends to lose: the original intent, the files in play, how many edits were made and
how often the person had to correct the agent. The memory files are append-only
markdown lists an agent keeps across restarts. Both live under the state root and
are written atomically and redacted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson

from ctxhealth.errors import StateError
from ctxhealth.model import Role, Session, ToolCall
from ctxhealth.recovery.digest import edited_paths
from ctxhealth.recovery.parts import original_request
from ctxhealth.redact import scrub
from ctxhealth.state.store import StateStore

__all__ = [
    "MemoryKind",
    "PreCompactionSnapshot",
    "append_memory",
    "read_memory",
    "snapshot_from_session",
    "write_snapshot",
]

LATEST_SNAPSHOT = "latest-pre-compaction.json"
MAX_INTENT_CHARS = 2_000
MAX_ACTIVE_FILES = 20
MAX_MEMORY_ENTRY_CHARS = 2_000

_PATH_KEYS = ("file_path", "path", "notebook_path", "filename")
_EDIT_TOOLS = frozenset(
    {
        "edit",
        "multiedit",
        "write",
        "notebookedit",
        "str_replace_based_edit_tool",
        "apply_patch",
        "create_file",
    }
)
_EDITOR_READ_ONLY = frozenset({"view"})
# A person correcting the agent: a short reply that starts by rejecting what it did.
_CORRECTION = re.compile(
    r"^\s*(?:no\b|nope\b|wrong\b|stop\b|don'?t\b|do not\b|that'?s (?:not|wrong)|this is (?:not|wrong)|"
    r"actually\b|instead\b|you (?:broke|missed|forgot|didn'?t)|revert\b|undo\b|why did you\b)",
    re.I,
)
_NOISE = ("<command-", "<local-command", "caveat:", "[request interrupted", "<system-reminder>")


class MemoryKind(StrEnum):
    LEARNINGS = "learnings"
    ISSUES = "issues"
    DECISIONS = "decisions"


@dataclass(frozen=True, slots=True)
class PreCompactionSnapshot:
    original_intent: str
    active_files: tuple[str, ...]
    edit_count: int
    correction_count: int
    session_id: str | None = None
    created_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "ctxhealth/pre-compaction-snapshot",
            "schema_version": 1,
            "session_id": self.session_id,
            "created_at": self.created_at,
            "original_intent": self.original_intent,
            "active_files": list(self.active_files),
            "edit_count": self.edit_count,
            "correction_count": self.correction_count,
        }


def _call_paths(call: ToolCall) -> list[str]:
    inp = call.input if isinstance(call.input, dict) else {}
    return [v for k in _PATH_KEYS if isinstance(v := inp.get(k), str) and v]


def _user_texts(session: Session) -> list[str]:
    out = []
    for m in session.messages:
        if m.role is not Role.USER or m.tool_results or m.compaction is not None:
            continue
        text = m.text.strip()
        if text and not text.lower().startswith(_NOISE):
            out.append(text)
    return out


def snapshot_from_session(
    session: Session, *, created_at: str = "", max_files: int = MAX_ACTIVE_FILES
) -> PreCompactionSnapshot:
    """Count edits (edit tools, patches, shell writes) and corrections; list files in play, newest first."""
    edits = 0
    recent: dict[str, None] = {}
    for message in session.messages:
        for call in message.tool_calls:
            edited = edited_paths(call)
            if edited:
                edits += 1
            for path in [*_call_paths(call), *edited]:
                recent.pop(path, None)
                recent[path] = None
    active = tuple(reversed(list(recent)))[:max_files]
    users = _user_texts(session)
    corrections = sum(1 for text in users[1:] if _CORRECTION.match(text))
    intent = original_request(session.messages)[:MAX_INTENT_CHARS]
    return PreCompactionSnapshot(
        original_intent=intent,
        active_files=active,
        edit_count=edits,
        correction_count=corrections,
        session_id=session.session_id,
        created_at=created_at,
    )


def write_snapshot(store: StateStore, snapshot: PreCompactionSnapshot) -> Path:
    """Write the snapshot (timestamped, plus ``snapshots/latest-pre-compaction.json``)."""
    store.check_writable()
    data = orjson.dumps(scrub(snapshot.to_dict()), option=orjson.OPT_INDENT_2) + b"\n"
    path = store.unique_path(store.snapshots_dir, "pre-compaction", ".json")
    store.write_file(path, data)
    store.write_file(store.snapshots_dir / LATEST_SNAPSHOT, data)
    return path


def _memory_path(store: StateStore, kind: MemoryKind) -> Path:
    return store.memory_dir / f"{kind.value}.md"


_TITLES = {
    MemoryKind.LEARNINGS: "# Learnings",
    MemoryKind.ISSUES: "# Issues",
    MemoryKind.DECISIONS: "# Decisions",
}


def read_memory(store: StateStore, kind: MemoryKind) -> list[str]:
    """The entries of one memory file, oldest first (the text after ``- [timestamp] ``)."""
    path = _memory_path(store, kind)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StateError(
            f"cannot read memory file: {exc.strerror or exc}", hint="check permissions", path=str(path)
        ) from exc
    entries = []
    for line in text.splitlines():
        if line.startswith("- "):
            body = line[2:]
            if body.startswith("[") and "] " in body:
                body = body.split("] ", 1)[1]
            entries.append(body)
    return entries


def append_memory(store: StateStore, kind: MemoryKind, text: str) -> Path:
    """Append one entry (one line, redacted, timestamped) to a memory file; return its path."""
    entry = " ".join(scrub(text).split())[:MAX_MEMORY_ENTRY_CHARS]
    if not entry:
        raise StateError("a memory entry cannot be empty", hint="pass the text to remember")
    store.check_writable()
    path = _memory_path(store, kind)
    try:
        current = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = f"{_TITLES[kind]}\n\n"
    if not current.endswith("\n"):
        current += "\n"
    store.write_file(path, f"{current}- [{store.now_iso()}] {entry}\n")
    return path
