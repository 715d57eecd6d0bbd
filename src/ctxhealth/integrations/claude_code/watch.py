"""``ctxhealth watch`` on a Claude Code session: fill over time, zone, signals, recent events.

(Which watcher follows a path, and the default session, are :mod:`ctxhealth.integrations.watch`'s.)

:class:`SessionWatch` keeps its own counters in memory (it never writes the hooks' cache) and reads
only the bytes appended since its last :meth:`SessionWatch.poll`. Being one long-lived process, it also
feeds each new message to a :class:`ctxhealth.monitor.Monitor`, so the frame shows the full assessment
(risk, the policy's action and reasons, the signals that fired) beside the counters.
:func:`render_frame` turns what it has into a plain-text frame. The CLI owns the loop and the screen.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from ctxhealth.failures import is_failure
from ctxhealth.integrations.claude_code.assess import read_counters, tool_counts
from ctxhealth.integrations.claude_code.tailstate import SessionCounters
from ctxhealth.model import Format, Message, Role
from ctxhealth.monitor import Assessment, Monitor

__all__ = ["SessionWatch", "find_newest_session", "render_frame"]

MAX_EVENTS = 10
MAX_POINTS = 400
_BARS = " ▁▂▃▄▅▆▇█"


def find_newest_session(projects: Path) -> Path | None:
    """The most recently modified session under ``projects`` (``~/.claude/projects``), as
    :func:`ctxhealth.sources.homes.session_files` names a Claude Code session file."""
    from ctxhealth.sources.homes import newest, session_files

    return newest(session_files("claude-code", projects))


class SessionWatch:
    """The live state of one transcript: counters, fill per turn, recent events."""

    def __init__(self, transcript: Path) -> None:
        self.transcript = transcript
        self.counters = SessionCounters(str(transcript.resolve()))
        self.fills: deque[int] = deque(maxlen=MAX_POINTS)
        self.events: deque[str] = deque(maxlen=MAX_EVENTS)
        # scoring risk with the model for Claude Code logs, as check does (without the format it took
        # the profile's model, fitted on another agent's runs)
        self.monitor = Monitor(source_format=Format.CLAUDE_CODE)
        self.assessment: Assessment | None = None

    def poll(self) -> int:
        """Read what was appended since the last poll; return the number of new messages."""
        from ctxhealth.integrations.claude_code.tail import read_tail

        if not self.transcript.exists():
            return 0
        tools = tool_counts(self.counters)
        before = (self.counters.turns, tools.failed, self.counters.compactions, tools.repeats)
        messages = read_tail(self.counters, str(self.transcript))
        for message in messages:
            self.assessment = self.monitor.observe(message)
        self._note(messages, before)
        return len(messages)

    def _note(self, messages: list[Message], before: tuple[int, int, int, int]) -> None:
        turns, errors, compactions, dooms = before
        c = self.counters
        seen_ids: set[str] = set()
        for m in messages:
            usage = m.usage
            fresh = m.response_id not in seen_ids
            if m.role is Role.ASSISTANT and usage is not None and usage.context_tokens and fresh:
                seen_ids.add(m.response_id or "")
                self.fills.append(usage.context_tokens)
            if m.compaction is not None:
                pre = f" from {m.compaction.pre_tokens:,} tokens" if m.compaction.pre_tokens else ""
                self.events.append(f"compaction{pre}")
            for r in m.tool_results:
                if is_failure(r):
                    self.events.append(f"tool failed: {' '.join(r.text.split())[:70]}")
        tools = tool_counts(c)
        if tools.repeats > dooms:
            self.events.append(f"repeated calls: {tools.repeats} identical calls in the monitor's window")
        if c.turns > turns and tools.failed == errors and c.compactions == compactions and not self.events:
            self.events.append(f"turn {c.turns}: fill {c.fill:,}")


def _sparkline(values: list[int], width: int, top: int) -> str:
    if not values:
        return ""
    step = max(1, -(-len(values) // width))
    points = [max(values[i : i + step]) for i in range(0, len(values), step)]
    return "".join(_BARS[min(len(_BARS) - 1, round(v / max(1, top) * (len(_BARS) - 1)))] for v in points)


def _assessment_lines(a: Assessment | None) -> list[str]:
    if a is None:
        return ["assessment: (no messages yet)"]
    risk = "-" if a.risk is None else f"{a.risk:.2f}"
    lines = [f"assessment: zone {a.zone.value}, risk {risk}, action {a.action.value}"]
    lines += [f"  because {reason}" for reason in a.reasons[:3]]
    fired = [s for s in a.signals.values() if s.fired]
    lines += [f"  signal {s.name}: {s.detail or round(s.value, 3)}" for s in fired[:6]]
    return lines


def render_frame(watch: SessionWatch, *, width: int = 80) -> str:
    """One screenful: header, fill sparkline against the usable window, zone, signals, recent events."""
    c = watch.counters
    r = read_counters(c)
    tools = tool_counts(c)
    lines = [
        f"ctxhealth watch — {watch.transcript.name}",
        f"model {c.model or '?'} · turns {c.turns} · compactions {c.compactions} · read {c.offset:,} bytes",
        "",
        f"zone {r.zone.value.upper()}  fill {c.fill:,} / {r.usable:,} usable ({r.percent:.0f}%)  "
        f"peak {c.peak:,}  pressure {r.pressure:.2f}",
        f"fill │{_sparkline(list(watch.fills), max(10, width - 8), r.usable)}│",
        "",
        "signals:",
        f"  on-task      {'-' if r.drift is None else f'{r.drift:.2f}'}{'  DRIFTING' if r.drifting else ''}",
        f"  tool calls   {tools.calls} ({tools.failed} failed, {tools.streak} in a row now, "
        f"max {tools.max_streak})",
        f"  spiral       {r.spiral_reason or 'no'}",
        f"  repeats      {tools.repeats}{'  (fired)' if r.doom_loop else ''}",
        "",
        *_assessment_lines(watch.assessment),
        "",
        "recent events:",
        *(f"  {e}" for e in list(watch.events)[-MAX_EVENTS:]),
    ]
    return "\n".join(line[:width] if len(line) > width else line for line in lines)
