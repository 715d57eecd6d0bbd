"""The live context of a session: what the model sees now, which every strategy works on.

A log keeps the whole history, but after an agent compacts its context the model sees only its
system messages, the compaction summary and what came after it. Recovery must start from that:
replaying pre-compaction history would hand back a context larger than the one being recovered
(and larger than the window). :func:`live_context` cuts a session at its last compaction summary
and says which original message each live message is, so reports keep the log's indices.

Two things from before the cut stay, because no strategy may lose them: the system messages and
the original request (the first real user request, tool results stripped from its message).
"""

from __future__ import annotations

from dataclasses import dataclass

from msgspec.structs import replace

from ctxhealth.model import Message, Role, Session
from ctxhealth.recovery.parts import instruction_index, instruction_message


@dataclass(frozen=True, slots=True)
class LiveContext:
    """``session`` cut to its live context; ``indices[k]`` is the original index of its k-th message.

    ``compactions`` counts the compaction summaries in the log; ``start`` is the index of the last
    one (0 without compactions)."""

    session: Session
    indices: tuple[int, ...]
    compactions: int
    start: int

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.session.messages

    def original(self, k: int) -> int:
        """The original index of live message ``k`` (``k`` itself past the end)."""
        return self.indices[k] if 0 <= k < len(self.indices) else k

    @property
    def notes(self) -> tuple[str, ...]:
        if not self.compactions:
            return ()
        n = self.compactions
        return (
            f"live context: after compaction {n} of {n} (message {self.start}); "
            f"{self.start} earlier messages are not in the context",
        )


def live_context(session: Session) -> LiveContext:
    """The live context of ``session`` (the whole session when it has no compaction)."""
    messages = session.messages
    found = [i for i, m in enumerate(messages) if m.compaction is not None]
    if not found:
        return LiveContext(session, tuple(range(len(messages))), 0, 0)
    start = found[-1]
    first = instruction_index(messages)
    head = [i for i in range(start) if messages[i].role is Role.SYSTEM or i == first]
    indices = (*head, *range(start, len(messages)))
    position = {i: k for k, i in enumerate(indices)}
    fills = {position[i]: v for i, v in session.reported_fill.items() if i in position}
    kept = tuple(instruction_message(messages[i]) if i == first else messages[i] for i in indices)
    live = replace(session, messages=kept, reported_fill=fills)
    return LiveContext(live, indices, len(found), start)
