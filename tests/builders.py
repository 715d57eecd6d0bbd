"""Helpers several test modules share: byte-level fuzzing, the figures reader tests compare, and plain
reference implementations that fast paths are checked against."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ctxhealth.model import Session
from ctxhealth.signals.text import content_words


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


class PlainDriftWindow:
    """The drift window the plain way: the output tail as one string, recounted from it on a long
    reply, else word-by-word with each word weighted by its share of the reply's characters.
    ``instruction`` (its content words) may be replaced between replies."""

    def __init__(self, instruction: str, limit: int) -> None:
        self.limit = limit
        self.instruction = set(content_words(instruction))
        self.tail = ""
        self.window: list[tuple[str, int]] = []

    def add(self, text: str) -> None:
        self.tail = (self.tail + "\n" + text if self.tail else text)[-self.limit :]
        if len(text) * 4 >= self.limit:
            stems = content_words(self.tail)
            each = len(self.tail) // len(stems) if stems else 0
            self.window = [(w, each) for w in stems]
            return
        stems = content_words(text)
        if stems:
            each, extra = divmod(len(text), len(stems))
            self.window += [(w, each + (extra if i == 0 else 0)) for i, w in enumerate(stems)]
        while sum(c for _, c in self.window) > self.limit and self.window:
            self.window.pop(0)

    def similarity(self) -> float:
        present = {w for w, _ in self.window}
        n = len(self.instruction)
        return len(self.instruction & present) / n if n and self.window else 1.0
