"""What a failed tool call is: the one definition every counter uses.

A reader sets what the log itself says about a tool result: ``ToolResult.is_error`` (the format's
error flag: Claude Code's ``is_error``, an OpenHands error observation, ...) and ``exit_code`` (when
the result states one). From those:

* :func:`flagged` — the log says it failed (error flag, or a non-zero exit code);
* :func:`looks_failed` — the one heuristic, for results the log says nothing about (no error flag,
  no exit code): the output reads like an error (a traceback, ``command not found``, ``Error:`` at a
  line start, ...). On the real Claude Code sessions it finds commands that failed inside a pipeline
  that exited 0 (``gcc-12: command not found``), which the flag misses;
* :func:`is_failure` — the definition: flagged, else (no exit code stated) looks failed. The
  Monitor's failure detector, ``check``'s tool counts, fleet, ``watch``, the hooks and the status
  line all count with it, so they agree;
* :class:`Verdicts` — :func:`is_failure` of each result, judged once: one table per session, shared
  by the accounting's error count, fleet's tool-call rows and the Monitor's events (each asks it
  instead of judging the same result again);
* :func:`declined` — the person declined to run the call, or interrupted it (Claude Code's fixed
  texts). Claude Code flags those as errors and they are counted as failures (the agent did not get
  what it asked for); recovery, which keeps "the latest error" for a checkpoint, skips them.

:func:`spiral_reason` and :func:`streak_reason` are the rules on those counts (the policy's decision
tree and the hooks' notices both ask them). :data:`RULE` says the definition in words, for a
counter's label. Patterns compile on first use:
the hooks import this module and most results need only a substring test.
"""

from __future__ import annotations

import re

from ctxhealth.lazy import pattern
from ctxhealth.native import KERNELS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxhealth.model import ToolResult

__all__ = [
    "ERROR_TEXT",
    "RULE",
    "Verdicts",
    "declined",
    "flagged",
    "is_failure",
    "looks_failed",
    "output_failed",
    "spiral_reason",
    "streak_reason",
    "text_looks_failed",
]

RULE = "error flag or non-zero exit code; without either, error text (looks_failed)"
"""The definition in words (shown beside failure counts)."""

ERROR_TEXT = (
    r"Traceback \(most recent call last\)|<tool_use_error>|command not found|No such file or directory|"
    r"^(?:Error|ERROR|error)[:\s]|^\w*(?:Error|Exception): "
)
"""What an error reads like (a multi-line pattern)."""

_DECLINED = r"^\s*(\[request interrupted|the user doesn't want to proceed)"


def flagged(result: ToolResult) -> bool:
    """The log says the call failed: its error flag, or a non-zero exit code."""
    return result.is_error or (result.exit_code is not None and result.exit_code != 0)


def looks_failed(result: ToolResult) -> bool:
    """The heuristic: the output reads like an error (head and tail of a long output are read)."""
    return text_looks_failed(result.text)


_PHRASES = (
    "Traceback (most recent call last)",
    "<tool_use_error>",
    "command not found",
    "No such file or directory",
)
"""The literal alternatives of :data:`ERROR_TEXT` (a substring test finds them)."""
_AT_LINE_START = r"^(?:Error|ERROR|error)[:\s]"
_NAMED_ERROR = r"^\w*(?:Error|Exception): "
"""The two line-start alternatives of :data:`ERROR_TEXT`, each tried only when the substring it
needs is there."""
_OPENINGS = ("Error", "ERROR", "error")

_ANY = 1
"""Gate bit: the probe holds one of the six substrings every alternative of the pattern needs."""
_PHRASE = 2
"""Gate bit: the probe holds one of :data:`_PHRASES` (it reads failed)."""
_NAMED = 4
"""Gate bit: the probe holds ``Error: `` or ``Exception: `` (:data:`_NAMED_ERROR` may match)."""
_OPENING = 8
"""Gate bit: an opening of :data:`_OPENINGS` starts the probe or follows a ``\\n``
(:data:`_AT_LINE_START` may match)."""
_HALF = 1200
"""A text longer than twice this is read as its head and tail of this many characters."""


def _probe(text: str) -> str:
    """What the gate reads: the text, or its head + ``\\n`` + its tail when it is long."""
    return text if len(text) <= 2 * _HALF else text[:_HALF] + "\n" + text[-_HALF:]


def _error_gate_py(text: str) -> int:
    """The substring searches of :func:`text_looks_failed` on the probe of ``text``, as gate bits
    (:data:`_ANY`, :data:`_PHRASE`, :data:`_NAMED`, :data:`_OPENING`); 0 when it holds none of the
    six substrings (most results). The definition of ``_native.error_gate``, which makes them in
    one pass (``tests/test_failure_gate.py`` holds the two equal)."""
    probe = _probe(text)
    # every alternative of the pattern holds one of these substrings ("rror" covers Error, error and
    # <tool_use_error>, "RROR" ERROR, then "Exception" and the three phrases): most results have none
    # (written out: a generator per result costs more than the searches)
    if not (
        "rror" in probe
        or "RROR" in probe
        or "Exception" in probe
        or "Traceback (most recent call last)" in probe
        or "command not found" in probe
        or "No such file or directory" in probe
    ):
        return 0
    bits = _ANY
    if any(phrase in probe for phrase in _PHRASES):
        bits |= _PHRASE
    if "Error: " in probe or "Exception: " in probe:
        bits |= _NAMED
    if probe.startswith(_OPENINGS) or "\nError" in probe or "\nERROR" in probe or "\nerror" in probe:
        bits |= _OPENING
    return bits


_error_gate: Callable[[str], int] = _error_gate_py
"""The gate :func:`text_looks_failed` runs: :func:`_error_gate_py`, or the same in C
(:mod:`~ctxhealth.native`)."""
if KERNELS is not None:
    _error_gate = KERNELS.error_gate


def text_looks_failed(text: str) -> bool:
    """:func:`looks_failed` on bare text (for a hook payload, which has no ToolResult).

    Whether :data:`ERROR_TEXT` matches on the probe (the text, or the head and tail of a long one),
    alternative by alternative: the phrases by substring, each line-start pattern only when the
    probe holds what it needs (the gate bits of :func:`_error_gate_py`;
    ``tests/test_signals_fast_paths.py`` holds this equal to the one pattern)."""
    bits = _error_gate(text)
    if not bits & _ANY:
        return False
    if bits & _PHRASE:
        return True
    probe = _probe(text)
    if bits & _NAMED and pattern(_NAMED_ERROR, re.M).search(probe):
        return True
    return bool(bits & _OPENING) and pattern(_AT_LINE_START, re.M).search(probe) is not None


def is_failure(result: ToolResult) -> bool:
    """The definition (:data:`RULE`): flagged; else, when no exit code is stated, looks failed."""
    return output_failed(result.text, is_error=result.is_error, exit_code=result.exit_code)


class Verdicts:
    """:func:`is_failure` of each result asked about, judged once per result object.

    One table serves one session's analysis (the accounting, the tool-call rows and the Monitor of
    it ask the same table): the first question about a result judges it, the later ones read the
    kept verdict. A result is frozen, so a kept verdict cannot go stale; the table holds each result
    it judged, so the object (and its ``id``) stays the one that was judged while the table lives.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: dict[int, tuple[ToolResult, bool]] = {}

    def __call__(self, result: ToolResult) -> bool:
        """Whether ``result`` is a failure (:func:`is_failure`)."""
        kept = self._kept.get(id(result))
        if kept is not None and kept[0] is result:
            return kept[1]
        verdict = is_failure(result)
        self._kept[id(result)] = (result, verdict)
        return verdict

    def __len__(self) -> int:
        """How many results were judged."""
        return len(self._kept)


def output_failed(text: str, *, is_error: bool = False, exit_code: int | None = None) -> bool:
    """:func:`is_failure` on a result's parts (a hook payload has no ToolResult, and importing the
    transcript model costs a hook more than its own work)."""
    if is_error:
        return True
    if exit_code is not None:
        return exit_code != 0
    return text_looks_failed(text)


def declined(result: ToolResult) -> bool:
    """The person declined or interrupted the call (Claude Code's own texts for these)."""
    return result.is_error and pattern(_DECLINED, re.I).match(result.text) is not None


def spiral_reason(calls: int, failure_rate: float, *, min_calls: int, rate: float) -> str | None:
    """The failure-spiral rule (the policy's reset trigger, and the hooks' notice): more than ``rate``
    of the last ``calls`` tool calls failed, with at least ``min_calls`` of them; None otherwise."""
    if calls >= min_calls and failure_rate > rate:
        return f"failure spiral: {failure_rate:.0%} of the last {calls} tool calls failed (> {rate:.0%})"
    return None


def streak_reason(streak: int, consecutive: int) -> str | None:
    """The consecutive-failures rule (a warning in the policy): ``consecutive`` or more in a row."""
    return f"{streak} consecutive tool failures" if streak >= consecutive else None
