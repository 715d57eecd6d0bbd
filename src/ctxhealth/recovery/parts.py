"""The parts of a session every strategy must locate and keep: system messages, the original
instruction message, turns (an assistant message with the messages that answer it), and the
helpers that shorten one tool result without losing what kind of output it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from ctxhealth.errors import UsageError
from ctxhealth.model import CompactionSummary, Message, Role, Session, TextBlock, ToolResult
from ctxhealth.recovery.digest import is_failure, trim_error_output
from ctxhealth.signals.requests import clean_user_text, is_user_request


def instruction_index(messages: Sequence[Message]) -> int | None:
    """Index of the original request: the first real user request (not a tool result, compaction,
    harness wrapper or pasted terminal output, see :mod:`ctxhealth.signals.requests`), or None."""
    for i, m in enumerate(messages):
        if is_user_request(m):
            return i
    return None


def original_request(messages: Sequence[Message]) -> str:
    """The text of the original request (cleaned), or "" when the messages hold none."""
    i = instruction_index(messages)
    return clean_user_text(messages[i].text) if i is not None else ""


def system_indices(messages: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role is Role.SYSTEM]


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indices of assistant messages: each starts a turn that runs to the next one."""
    return [i for i, m in enumerate(messages) if m.role is Role.ASSISTANT]


def instruction_message(message: Message) -> Message:
    """The instruction message as kept by strategies: its text only, tool results stripped
    (their calls are gone), so the kept prefix never carries an orphan."""
    if not message.tool_results:
        return message
    return replace(message, blocks=tuple(b for b in message.blocks if not isinstance(b, ToolResult)))


def user_text(text: str) -> Message:
    return Message(role=Role.USER, blocks=(TextBlock(text),))


def shorten_result(result: ToolResult, max_chars: int) -> ToolResult:
    """A tool result cut to about ``max_chars``: errors keep their last 50 lines and stack trace
    (then the tail); other output keeps its head and tail around a marker saying what was cut."""
    text = result.text
    if len(text) <= max_chars:
        return result
    if is_failure(result):
        trimmed = trim_error_output(text)
        if len(trimmed) > max_chars:
            cut = len(trimmed) - max_chars
            trimmed = f"[... {cut} chars of error output trimmed ...]\n" + trimmed[-max_chars:]
        return replace(result, text=trimmed)
    head = max_chars * 2 // 3
    tail = max_chars - head
    cut = len(text) - head - tail
    lines = text.count("\n")
    marker = f"\n[... {cut} chars trimmed from a {len(text)}-char, {lines + 1}-line output ...]\n"
    return replace(result, text=text[:head] + marker + (text[-tail:] if tail else ""))


def compaction_indices(messages: Sequence[Message]) -> list[int]:
    """Indices of messages that carry an agent's compaction summary, in order."""
    return [i for i, m in enumerate(messages) if m.compaction is not None]


def before_compaction(session: Session, k: int) -> tuple[Session, CompactionSummary]:
    """``session`` up to (not including) its ``k``-th compaction (1-based), and that compaction's summary.

    Raises :class:`UsageError` when the session has fewer than ``k`` compactions.
    """
    found = compaction_indices(session.messages)
    if k < 1 or k > len(found):
        raise UsageError(
            f"--before-compaction {k}: the session has {len(found)} compaction(s)",
            hint=f"use a value from 1 to {len(found)}" if found else "omit --before-compaction",
            path=session.path,
        )
    index = found[k - 1]
    summary = session.messages[index].compaction or CompactionSummary("")
    fills = {i: v for i, v in session.reported_fill.items() if i < index}
    return replace(session, messages=session.messages[:index], reported_fill=fills), summary
