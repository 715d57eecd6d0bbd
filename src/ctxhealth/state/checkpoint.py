"""Checkpoints of a transcript, written to disk (JSON + markdown) and recorded in the ledger.

The content comes from the recovery layer's deterministic builder
(:func:`ctxhealth.recovery.checkpoint.build_checkpoint`); this module owns where it
goes: ``<root>/checkpoints/<session>-<ts>.{json,md}`` plus the stable aliases
``latest-checkpoint.{json,md}``, every file written atomically and redacted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec.structs
import orjson

from ctxhealth.labels import session_label
from ctxhealth.model import (
    Session,
)
from ctxhealth.recovery.budget import DEFAULT_ENCODING
from ctxhealth.recovery.checkpoint import (
    DEFAULT_BUDGET_TOKENS,
    build_checkpoint,
    render_markdown,
    render_text,
)
from ctxhealth.redact import redact_message, scrub
from ctxhealth.state.ledger import Ledger
from ctxhealth.state.store import StateStore

__all__ = [
    "DEFAULT_BUDGET_TOKENS",
    "CheckpointFiles",
    "checkpoint_document",
    "redact_session",
    "write_checkpoint_document",
    "write_transcript_checkpoint",
]

CHECKPOINT_SCHEMA = "ctxhealth/checkpoint"


@dataclass(frozen=True, slots=True)
class CheckpointFiles:
    json_path: Path
    markdown_path: Path
    session_id: str | None
    tokens: int
    budget_tokens: int
    over_budget: bool
    ledger_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "json_path": str(self.json_path),
            "markdown_path": str(self.markdown_path),
            "session_id": self.session_id,
            "tokens": self.tokens,
            "budget_tokens": self.budget_tokens,
            "over_budget": self.over_budget,
            "ledger_id": self.ledger_id,
        }


def redact_session(session: Session) -> Session:
    """The session with every text, tool input and tool output redacted.

    Redacting the input (not only the output) matters: the builder extracts fragments
    (identifiers, findings) that, once cut from their ``TOKEN=...`` context, no longer
    look like secrets.
    """
    messages = tuple(redact_message(m) for m in session.messages)
    sidechains = tuple(redact_session(s) for s in session.sidechains)
    return msgspec.structs.replace(session, messages=messages, sidechains=sidechains)


def checkpoint_document(
    session: Session,
    *,
    budget_tokens: int,
    created_at: str,
    encoding: str | None = DEFAULT_ENCODING,
    max_chars: int | None = None,
) -> tuple[dict[str, Any], str]:
    """The redacted JSON document and markdown text of the checkpoint of ``session``.

    ``encoding`` is the tokenizer that sizes it (None: the estimate, no tokenizer load);
    ``max_chars`` bounds the time it takes (see :func:`~ctxhealth.recovery.checkpoint.build_checkpoint`).
    """
    cp = build_checkpoint(
        redact_session(session), budget_tokens=budget_tokens, encoding=encoding, max_chars=max_chars
    )
    document = {
        "schema": CHECKPOINT_SCHEMA,
        "schema_version": 1,
        "created_at": created_at,
        "source_path": session.path,
        "session_id": session.session_id,
        "format": session.format.value,
        "budget_tokens": cp.budget_tokens,
        "tokens": cp.tokens,
        "over_budget": cp.over_budget,
        "checkpoint": dataclasses.asdict(cp),
        "text": render_text(cp),
    }
    return scrub(document), scrub(render_markdown(cp))


def write_transcript_checkpoint(
    store: StateStore,
    session: Session,
    *,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    ledger: Ledger | None = None,
    encoding: str | None = DEFAULT_ENCODING,
    max_chars: int | None = None,
) -> CheckpointFiles:
    """Build, redact and write the checkpoint of ``session``; record it in ``ledger`` if given.
    ``max_chars`` bounds the build for a caller with a time budget (a PreCompact hook)."""
    store.check_writable()
    document, markdown = checkpoint_document(
        session,
        budget_tokens=budget_tokens,
        created_at=store.now_iso(),
        encoding=encoding,
        max_chars=max_chars,
    )
    return write_checkpoint_document(store, session, document, markdown, ledger=ledger)


def write_checkpoint_document(
    store: StateStore,
    session: Session,
    document: dict[str, Any],
    markdown: str,
    *,
    ledger: Ledger | None = None,
) -> CheckpointFiles:
    """Write a checkpoint built by :func:`checkpoint_document` (the slow part, which a caller with a
    time budget runs on its own): the timestamped files, the ``latest-checkpoint`` aliases, and the
    ledger row when ``ledger`` is given."""
    store.check_writable()
    label = session_label(session.session_id or Path(session.path).stem)
    json_path = store.unique_path(store.checkpoints_dir, label, ".json")
    markdown_path = json_path.with_suffix(".md")
    data = orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    store.write_file(json_path, data)
    store.write_file(markdown_path, markdown)
    store.write_file(store.checkpoints_dir / "latest-checkpoint.json", data)
    store.write_file(store.checkpoints_dir / "latest-checkpoint.md", markdown)
    ledger_id = None
    if ledger is not None:
        ledger_id = ledger.record_checkpoint(
            session.session_id,
            json_path,
            markdown_path,
            tokens=int(document["tokens"]),
            source_path=session.path,
        )
    return CheckpointFiles(
        json_path=json_path,
        markdown_path=markdown_path,
        session_id=session.session_id,
        tokens=int(document["tokens"]),
        budget_tokens=int(document["budget_tokens"]),
        over_budget=bool(document["over_budget"]),
        ledger_id=ledger_id,
    )
