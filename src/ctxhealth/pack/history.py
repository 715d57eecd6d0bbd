"""L5 and decay: a transcript summarised by the recovery code's turn policy, and which files it references.

:func:`read_history` reads any transcript ``ctxhealth.sources`` reads, compresses it with
:func:`ctxhealth.recovery.compress.compress_history` (raw under 5 turns, light to 15, aggressive
beyond) and renders the result as ``role: text`` lines. :func:`file_references` finds, per repository
path, whether a previous pack in the transcript included it (our own file headers in user messages)
and in which turns the agent named it (assistant text and tool calls) — the input of the decay.
:func:`transcript_for_session` finds the transcript of a session id in the ledger.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from ctxhealth.model import (
    CompactionSummary,
    Message,
    Role,
    Session,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
)

UNREFERENCED_TURNS = 3
DECAY_UNREFERENCED = 0.5
BOOST_REFERENCED = 1.3
_PACKED_HEADER = re.compile(r'^### (\S+) \((?:full|signatures|trimmed)\)$|<file path="([^"]+)"', re.M)


@dataclass(frozen=True, slots=True)
class History:
    """A transcript prepared for packing: its compressed text, turn count and messages."""

    path: str
    text: str
    turns: int
    messages: tuple[Message, ...]
    level: str


def _render(message: Message) -> str:
    parts: list[str] = []
    for block in message.blocks:
        if isinstance(block, TextBlock) and block.text.strip():
            parts.append(block.text.strip())
        elif isinstance(block, ToolCall):
            args = block.input if isinstance(block.input, str) else orjson.dumps(block.input).decode()
            parts.append(f"[tool call {block.name}] {args[:300]}")
        elif isinstance(block, ToolResult):
            flag = " (error)" if block.is_error else ""
            parts.append(f"[tool result{flag}] {block.text[:600]}")
        elif isinstance(block, (ThinkingBlock, CompactionSummary)) and block.text.strip():
            parts.append(block.text.strip())
    body = "\n".join(p for p in parts if p)
    return f"{message.role.value}: {body}" if body else ""


def read_history(path: Path | str) -> History:
    """Read and compress the transcript at ``path`` (raises the sources' errors on bad input)."""
    from ctxhealth.recovery.compress import compress_history
    from ctxhealth.sources import read_session

    session: Session = read_session(str(path))
    compressed, report = compress_history(session)
    turns = sum(1 for m in session.messages if m.role is Role.ASSISTANT)
    text = "\n\n".join(t for t in (_render(m) for m in compressed.messages if m.role is not Role.SYSTEM) if t)
    level = report.notes[0].split(" ", 1)[0] if report.notes else "raw"
    return History(str(path), text, turns, session.messages, level)


def _mentions(text: str, paths: Iterable[str]) -> set[str]:
    return {p for p in paths if p in text}


def decay_factors(history: History, paths: Sequence[str]) -> dict[str, float]:
    """Per path: 1.3 when the agent referenced it in the last 3 turns, 0.5 when a previous pack
    included it and it went unreferenced for 3 turns since, no entry otherwise."""
    path_set = set(paths)
    packed_at: dict[str, int] = {}
    last_ref: dict[str, int] = {}
    turn = 0
    for message in history.messages:
        if message.role is Role.ASSISTANT:
            turn += 1
            text = "\n".join(
                [message.text]
                + [
                    c.input if isinstance(c.input, str) else orjson.dumps(c.input).decode()
                    for c in message.tool_calls
                ]
            )
            for p in _mentions(text, path_set):
                last_ref[p] = turn
        elif message.role is Role.USER:
            for match in _PACKED_HEADER.finditer(message.text):
                p = match.group(1) or match.group(2)
                if p in path_set:
                    packed_at.setdefault(p, turn)
    factors: dict[str, float] = {}
    for p in path_set & (set(packed_at) | set(last_ref)):
        ref = last_ref.get(p)
        if ref is not None and turn - ref < UNREFERENCED_TURNS:
            factors[p] = BOOST_REFERENCED
        elif p in packed_at and turn - max(ref or 0, packed_at[p]) >= UNREFERENCED_TURNS:
            factors[p] = DECAY_UNREFERENCED
    return factors


def transcript_for_session(home: Path, session_id: str) -> Path:
    """The transcript the ledger under ``home`` knows for ``session_id`` (the most recently updated one).

    Raises :class:`~ctxhealth.errors.InputError` when there is no ledger or it does not know the
    session; never creates a ledger.
    """
    from ctxhealth.errors import InputError
    from ctxhealth.state.ledger import LEDGER_FILENAME, Ledger

    hint = "give --history TRANSCRIPT, or let the hooks or `ctxhealth watch` record the session first"
    if not (home / LEDGER_FILENAME).is_file():
        raise InputError(f"no ledger to look session {session_id} up in", path=str(home), hint=hint)
    with Ledger.open(home) as ledger:
        for row in ledger.sessions(limit=100_000):
            if row.session_id == session_id:
                return Path(row.path)
    raise InputError(f"the ledger knows no session {session_id}", path=str(home / LEDGER_FILENAME), hint=hint)
