"""Checkpoints written by the hooks: from a bounded part of the transcript, within a time budget.

PreCompact exists to leave a checkpoint behind, so it must finish before Claude Code gives up on it
(60 s by default), whatever the transcript. The checkpoint is built from a bounded window of the file
(its head, which holds the original request, and its last ``HookLimits.tail_bytes``), never from a
file that is not regular (:mod:`.transcript`). When the transcript is larger than the small window
(head + ``fallback_tail_bytes``), a checkpoint of that small window is written first; then the fuller
one is built under a deadline (the rest of ``checkpoint_seconds``) and replaces it as the latest only
if it finished in time. Building (parsing, digesting) is what the deadline interrupts; writing is not.

The window is read as Claude Code JSONL: the gap between head and tail is bridged by the reader (its
first tail line's parent is missing) and shows up as one warning.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ctxhealth.errors import CtxHealthError
from ctxhealth.integrations.claude_code.tailstate import INSTRUCTION_CHARS, SessionCounters
from ctxhealth.integrations.claude_code.transcript import HookLimits, read_window, transcript_problem
from ctxhealth.model import Format, Session

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ctxhealth.state.ledger import Ledger

__all__ = ["CheckpointOutcome", "OutOfTime", "build_within", "write_hook_checkpoint"]

BUDGET_TOKENS = 500
# Hooks size checkpoints with the estimate (about 4 characters a token): loading an exact BPE
# vocabulary takes seconds in a fresh process, too long for a hook that runs before compaction.
ENCODING: str | None = None


class OutOfTime(Exception):
    """Raised inside a build when its deadline passed (never escapes :func:`build_within`)."""


class CheckpointOutcome:
    """What :func:`write_hook_checkpoint` wrote: ``json_path``, ``tokens``, the transcript bytes the
    checkpoint was built from (``window_bytes`` of ``size``) and whether it is the smaller
    ``fallback`` (the fuller one did not finish in time, or failed)."""

    __slots__ = ("fallback", "json_path", "size", "tokens", "window_bytes")

    def __init__(self, json_path: str, tokens: int, window_bytes: int, size: int, fallback: bool) -> None:
        self.json_path = json_path
        self.tokens = tokens
        self.window_bytes = window_bytes
        self.size = size
        self.fallback = fallback


def build_within(seconds: float, build: Callable[[], Any]) -> Any | None:
    """``build()``, or None when it did not finish within ``seconds``.

    The deadline is a real-time timer (``SIGALRM``) that raises :class:`OutOfTime` in the build;
    where there is none (another thread, another platform) the build runs to its end. A previous
    timer and handler are restored.
    """
    import signal
    import threading

    if seconds <= 0:
        return None
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return build()

    armed = [True]

    def expire(signum: int, frame: object) -> None:
        if armed[0]:
            raise OutOfTime

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        result = build()
        armed[0] = False
        return result
    except OutOfTime:
        return None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _read(
    path: str,
    tail_bytes: int,
    head_bytes: int,
    *,
    before_last_compaction: bool,
    source_format: Format | None = Format.CLAUDE_CODE,
) -> Session:
    from msgspec.structs import replace

    from ctxhealth.sources.reader import read_data

    window = read_window(path, tail_bytes=tail_bytes, head_bytes=head_bytes)
    session = read_data(window.data, path, format=source_format)
    if before_last_compaction:
        found = [i for i, m in enumerate(session.messages) if m.compaction is not None]
        if found:
            cut = found[-1]
            fills = {i: v for i, v in session.reported_fill.items() if i < cut}
            session = replace(session, messages=session.messages[:cut], reported_fill=fills)
    return session


def _build(session: Session, created_at: str, snapshot: bool) -> tuple[dict[str, Any], str, Any]:
    from ctxhealth.state.checkpoint import checkpoint_document

    document, markdown = checkpoint_document(
        session, budget_tokens=BUDGET_TOKENS, created_at=created_at, encoding=ENCODING
    )
    shot = None
    if snapshot:
        from ctxhealth.state.memory import snapshot_from_session

        shot = snapshot_from_session(session, created_at=created_at)
    return document, markdown, shot


def _windows(size: int, limits: HookLimits) -> Iterator[tuple[int, bool]]:
    """(tail bytes, is the fallback) of each checkpoint to try, smallest first."""
    if (
        size > limits.head_bytes + limits.fallback_tail_bytes
        and limits.fallback_tail_bytes < limits.tail_bytes
    ):
        yield limits.fallback_tail_bytes, True
    yield limits.tail_bytes, False


def write_hook_checkpoint(
    root: str,
    counters: SessionCounters,
    ledger: Ledger | None,
    limits: HookLimits,
    *,
    snapshot: bool,
    before_last_compaction: bool = False,
    deadline: float | None = None,
    source_format: Format | None = Format.CLAUDE_CODE,
) -> CheckpointOutcome | None:
    """Write the checkpoint of ``counters.path`` under the state root ``root`` (and the
    pre-compaction snapshot when ``snapshot``); None when the transcript is not a regular file or
    no checkpoint could be built in time. ``deadline`` (``time.monotonic()``; default: now +
    ``limits.checkpoint_seconds``) ends the building. Updates the counters' checkpoint fields.
    ``source_format`` None: another agent's transcript, its format detected from the window."""
    from pathlib import Path

    from ctxhealth.state.checkpoint import write_checkpoint_document
    from ctxhealth.state.store import StateStore

    path = counters.path
    if transcript_problem(path) is not None:
        return None
    if deadline is None:
        deadline = time.monotonic() + limits.checkpoint_seconds
    size = os.stat(path).st_size
    store = StateStore(Path(root))
    outcome: CheckpointOutcome | None = None
    for tail_bytes, fallback in _windows(size, limits):
        created_at = store.now_iso()

        def build(tail_bytes: int = tail_bytes, created_at: str = created_at) -> tuple[Any, ...]:
            session = _read(
                path,
                tail_bytes,
                limits.head_bytes,
                before_last_compaction=before_last_compaction,
                source_format=source_format,
            )
            return (session, *_build(session, created_at, snapshot))

        try:
            built = build_within(deadline - time.monotonic(), build)
        except CtxHealthError:
            break  # nothing readable in the window: keep what was written (if anything)
        if built is None:
            break  # out of time: keep what was written (if anything)
        session, document, markdown, shot = built
        if not session.messages:
            break  # nothing readable in the window (zeros, junk): no empty checkpoint
        files = write_checkpoint_document(store, session, document, markdown, ledger=ledger)
        if shot is not None:
            from ctxhealth.state.memory import write_snapshot

            write_snapshot(store, shot)
        window_bytes = min(size, tail_bytes + (limits.head_bytes if size > tail_bytes else 0))
        outcome = CheckpointOutcome(str(files.json_path), files.tokens, window_bytes, size, fallback)
        counters.checkpoint_json = str(files.json_path)
        text = document.get("text")
        counters.checkpoint_text = text if isinstance(text, str) else None
        if not counters.instruction:
            from ctxhealth.recovery.parts import original_request
            from ctxhealth.redact import scrub

            counters.instruction = scrub(original_request(session.messages)[:INSTRUCTION_CHARS])
    return outcome
