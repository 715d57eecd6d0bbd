"""Helpers several test modules share: byte-level fuzzing and the figures reader tests compare."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ctxhealth.model import Session


def mutate_bytes(
    data: st.DataObject, seed: bytes, *, most_edits: int, most_deleted: int, most_inserted: int
) -> bytes:
    """``seed`` after 1 to ``most_edits`` random edits: a byte flipped, a run of up to
    ``most_deleted`` bytes deleted, or up to ``most_inserted`` random bytes inserted."""
    mutated = bytearray(seed)
    for _ in range(data.draw(st.integers(1, most_edits))):
        pos = data.draw(st.integers(0, len(mutated) - 1))
        action = data.draw(st.sampled_from(["flip", "delete", "insert"]))
        if action == "flip":
            mutated[pos] = data.draw(st.integers(0, 255))
        elif action == "delete":
            del mutated[pos : pos + data.draw(st.integers(1, most_deleted))]
        else:
            mutated[pos:pos] = data.draw(st.binary(min_size=1, max_size=most_inserted))
    return bytes(mutated)


def reader_counts(session: Session) -> dict[str, Any]:
    """What a reader made of a transcript, in the terms a plain walk of the file can count too:
    assistant turns, tool calls and tool calls that failed."""
    return {
        "turns": session.assistant_turns,
        "tool_calls": sum(len(m.tool_calls) for m in session.messages),
        "tool_errors": sum(r.is_error for m in session.messages for r in m.tool_results),
    }
