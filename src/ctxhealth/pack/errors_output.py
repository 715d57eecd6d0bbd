"""Error output for L4: the last 50 lines plus every stack trace before them, trimmed to a cap, never dropped.

A stack trace is a run that starts at a ``Traceback (most recent call last):`` line (Python) or a
``    at name(...)`` frame line (JavaScript, Java) and runs to its first unindented line after the
frames (the exception message), inclusive. When the result is still over the cap, the oldest lines
go first; the last line always stays (cut to fit when even it is too long).
"""

from __future__ import annotations

import re
from collections.abc import Callable

TAIL_LINES = 50
_TRACE_START = re.compile(
    r"^(?:Traceback \(most recent call last\):|\s+at \S+.*\(|panic:|thread '.*' panicked)"
)


def select_error_lines(text: str, tail: int = TAIL_LINES) -> list[str]:
    """The lines L4 keeps before any cap: the last ``tail`` lines and the stack traces above them."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= tail:
        return lines
    head, last = lines[:-tail], lines[-tail:]
    keep: list[str] = []
    i = 0
    while i < len(head):
        if _TRACE_START.match(head[i]):
            start = i
            i += 1
            while i < len(head) and (head[i][:1] in (" ", "\t") or _TRACE_START.match(head[i])):
                i += 1
            end = min(i + 1, len(head))  # the exception line that closes the trace
            keep.extend(head[start:end])
            i = end
        else:
            i += 1
    dropped = len(head) - len(keep)
    marker = [f"[... {dropped} earlier lines of error output trimmed ...]"] if dropped else []
    return [*keep, *marker, *last]


def fit_error_output(text: str, cap_tokens: int, count: Callable[[str], int]) -> str:
    """The error output to pack within ``cap_tokens`` (never empty for non-blank input)."""
    lines = select_error_lines(text)
    if not lines:
        return ""
    joined = "\n".join(lines)
    if count(joined) <= cap_tokens:
        return joined
    lo, hi = 1, len(lines)  # the most recent k lines that fit, by binary search
    best = 0
    while lo <= hi:
        mid = (lo + hi) // 2
        if count("\n".join(["[... earlier error output trimmed ...]", *lines[-mid:]])) <= cap_tokens:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best:
        return "\n".join(["[... earlier error output trimmed ...]", *lines[-best:]])
    last = lines[-1]
    lo, hi, keep = 1, len(last), 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if count(last[-mid:]) <= max(1, cap_tokens):
            keep, lo = mid, mid + 1
        else:
            hi = mid - 1
    return last[-keep:]
