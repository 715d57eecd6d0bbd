"""The deterministic checkpoint: what an agent needs to continue, in 300–500 tokens.

:func:`build_checkpoint` reads a session (see :mod:`ctxhealth.recovery.digest`) and fits the
spec's fields — original task (first 300 chars, with the instruction kept verbatim beside
it), tools used (≤ 10), key findings (last 5 tool results, ≤ 200 chars each), last progress
(≤ 500 chars) — plus what the spec says never to compact away: current goal, user
constraints, active decisions, blocking errors, files being worked on, the uncommitted
change, ids and branch names, completed and remaining work.

The budget is met by walking a fixed ladder of limits until the rendered text fits: below the
spec's default, shorter findings, fewer requests, ...; above it, when a caller gives a larger
budget, more of what the spec says never to compact away, in priority order — the current goal,
active decisions, blocking errors, files being worked on (those read or edited for the current
goal first, most recent first), then other errors, decisions and identifiers, later requests and
the plan, so a larger budget is spent rather than left unused. User constraints, blocking
errors, the latest ids and the current goal are never dropped; if they alone exceed the budget
the checkpoint says so (``over_budget``) rather than lose them. Same session, same budget → same bytes.
"""

from __future__ import annotations

import os.path
from dataclasses import dataclass, fields, replace

from ctxhealth.model import Session
from ctxhealth.recovery.budget import DEFAULT_ENCODING, text_tokens
from ctxhealth.recovery.digest import Decision, Digest, digest, sentences
from ctxhealth.recovery.text import bullets

DEFAULT_BUDGET_TOKENS = 500
CHECKPOINT_HEADER = "[CONTEXT CHECKPOINT -- PREVIOUS PROGRESS]"
CHECKPOINT_FOOTER = "[END CHECKPOINT]"
CONTINUE_DIRECTIVE = "Continue from where you left off. Do not repeat completed work."
MAX_BLOCKING_ERRORS = 3
MAX_ERRORS = 5
RESOLVED_MARK = " (not blocking)"
MAX_IDENTIFIERS = 12


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A structured checkpoint. ``tokens`` is the size of :func:`render_text` of it."""

    task: str
    instruction: str
    tools_used: tuple[str, ...]
    tool_call_count: int
    key_findings: tuple[str, ...]
    last_progress: str
    current_goal: str
    requests: tuple[str, ...]
    constraints: tuple[str, ...]
    decisions: tuple[Decision, ...]
    errors: tuple[str, ...]  # latest distinct errors; all but the blocking ones end with RESOLVED_MARK
    files: tuple[str, ...]
    uncommitted: str
    identifiers: tuple[str, ...]
    completed: tuple[str, ...]
    remaining: tuple[str, ...]
    budget_tokens: int
    tokens: int = 0

    @property
    def blocking_errors(self) -> tuple[str, ...]:
        """Errors no later retry resolved: never dropped from a checkpoint."""
        return tuple(e for e in self.errors if not e.endswith(RESOLVED_MARK))

    @property
    def over_budget(self) -> bool:
        return self.tokens > self.budget_tokens


@dataclass(frozen=True, slots=True)
class _Limits:
    goal_chars: int = 300
    blocking: int = MAX_BLOCKING_ERRORS
    identifiers: int = MAX_IDENTIFIERS
    task_chars: int = 300
    findings: int = 5
    finding_chars: int = 200
    progress_chars: int = 500
    tools: int = 10
    requests: int = 10
    request_chars: int = 160
    decisions: int = 5
    decision_chars: int = 160
    files: int = 12
    files_read: int = 4
    errors: int = MAX_ERRORS
    completed: int = 5
    remaining: int = 6
    item_chars: int = 160


# One field at a time, in the order they give way when the budget is tight: the spec's verbose
# fields (findings, last progress) first, then resolved errors and older decisions, then what can
# be re-read from disk; must-keep fields (constraints, blocking errors, ids, current goal) are not
# in the list ("errors" limits the latest distinct errors, never below the latest one, as the
# design asks; blocking errors always stay on top of that).
_REDUCTIONS: tuple[tuple[str, int], ...] = (
    ("files_read", 2), ("files_read", 0),
    ("finding_chars", 120), ("findings", 3), ("progress_chars", 300), ("findings", 2),
    ("finding_chars", 80), ("progress_chars", 200), ("completed", 3), ("findings", 1),
    ("progress_chars", 150), ("tools", 6), ("completed", 2), ("findings", 0), ("progress_chars", 100),
    ("decision_chars", 120), ("decisions", 4), ("completed", 0), ("progress_chars", 0), ("tools", 3),
    ("errors", 4), ("decisions", 3), ("request_chars", 120), ("errors", 3), ("decisions", 2),
    ("item_chars", 120), ("task_chars", 200), ("requests", 8), ("remaining", 5), ("errors", 2),
    ("decisions", 1), ("requests", 6), ("files", 10), ("remaining", 4), ("errors", 1), ("requests", 4),
    ("task_chars", 150), ("files", 8), ("request_chars", 80), ("remaining", 3),
    ("requests", 3), ("files", 6), ("item_chars", 100), ("requests", 2), ("remaining", 2), ("requests", 1),
    ("files", 4), ("requests", 0), ("decisions", 0), ("remaining", 1), ("files", 3), ("task_chars", 100),
)  # fmt: skip


# Beyond the spec's 300-500 tokens, when a caller gives a larger budget: one field at a time, in
# the order of what the spec says never to compact away — the current goal, active decisions,
# blocking errors, files being worked on (read or edited for the current goal first), then the
# other errors, decisions and identifiers, later requests and the plan — until the budget is used.
# The spec's own fields (task 300 chars, 10 tools, 5 findings of 200 chars, progress 500 chars)
# keep their limits.
_EXPANSION_ORDER: tuple[tuple[str, int], ...] = (
    ("goal_chars", 4_000), ("decisions", 200), ("decision_chars", 600), ("blocking", 20), ("files_read", 400),
    ("files", 400), ("errors", 200), ("identifiers", 400), ("requests", 100), ("request_chars", 800),
    ("completed", 50), ("remaining", 50), ("item_chars", 600),
)  # fmt: skip
"""The fields a larger budget grows, in priority order, each with the most it grows to."""
_GROWTH = 1.25


def _expansions() -> tuple[tuple[str, int], ...]:
    """Rounds over :data:`_EXPANSION_ORDER`, each field growing by a quarter (at least one) until its
    most: small steps, so the richest checkpoint that fits comes close to the budget."""
    defaults = _Limits()
    current: dict[str, int] = {f.name: getattr(defaults, f.name) for f in fields(_Limits)}
    out: list[tuple[str, int]] = []
    while True:
        grown = False
        for name, most in _EXPANSION_ORDER:
            value = current[name]
            if value < most:
                value = min(most, max(value + 1, int(value * _GROWTH)))
                current[name] = value
                out.append((name, value))
                grown = True
        if not grown:
            return tuple(out)


_EXPANSIONS = _expansions()


def _ladder() -> tuple[_Limits, ...]:
    """Richest first: the expansions in reverse, the spec's default, then the reductions. Every step
    holds no more than the one before it, so rendered sizes fall along the ladder."""
    richer = [_Limits()]
    for name, value in _EXPANSIONS:
        richer.append(replace(richer[-1], **{name: value}))
    steps = richer[::-1]
    for name, value in _REDUCTIONS:
        steps.append(replace(steps[-1], **{name: value}))
    return tuple(steps)


_LADDER = _ladder()


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 3)].rstrip() + "..."


def _first_sentence(text: str) -> str:
    found = sentences(text)
    return found[0] if found else " ".join(text.split())


def _uncommitted(d: Digest) -> str:
    if not d.edits_since_commit:
        return ""
    n = len(d.files_since_commit)
    since = "since the last commit" if d.commit_seen else "none committed in this session"
    return f"{d.edits_since_commit} edits to {n} file{'s' if n != 1 else ''}, {since}"


def _working_files(d: Digest, limits: _Limits) -> tuple[str, ...]:
    """The latest ``limits.files`` edited files and the latest ``limits.files_read`` files read for
    the current goal, in :attr:`Digest.working_files` order (for the current goal first, most recent
    first)."""
    edited = set(d.files_edited[-limits.files :]) if limits.files else set()
    read_only = [f for f in reversed(d.files_for_goal) if f not in set(d.files_edited)]
    kept = edited | set(read_only[: limits.files_read])
    return tuple(f for f in d.working_files if f in kept)


def _assemble(d: Digest, limits: _Limits, budget: int) -> Checkpoint:
    later_requests = [_first_sentence(r) for r in d.requests if r != d.instruction.strip()]
    current = d.current_goal
    # A request already quoted as a constraint is not repeated.
    later_requests = [r for r in later_requests if r != current and r not in d.constraints]
    requests = tuple(
        _clip(r, limits.request_chars)
        for r in (later_requests[-limits.requests :] if limits.requests else [])
    )
    # The latest distinct errors; blocking ones always stay, resolved ones while there is room.
    latest: dict[str, None] = {}
    for e in d.errors:
        latest.pop(e.label, None)
        latest[e.label] = None
    blocking = {e.label for e in d.blocking_errors[-limits.blocking :]}
    recent = set(list(latest)[-max(1, limits.errors) :]) if latest else set()
    errors = tuple(
        _clip(label, limits.item_chars) + ("" if label in blocking else RESOLVED_MARK)
        for label in latest
        if label in blocking or label in recent
    )
    return Checkpoint(
        task=_clip(d.instruction, limits.task_chars),
        instruction=d.instruction,
        tools_used=d.tools_used[: limits.tools],
        tool_call_count=d.tool_call_count,
        key_findings=tuple(
            _clip(f"{name}: {text}", limits.finding_chars)
            for name, text in (d.findings[-limits.findings :] if limits.findings else ())
        ),
        last_progress=_clip(d.last_progress, limits.progress_chars) if limits.progress_chars else "",
        current_goal=_clip(current, limits.goal_chars),
        requests=requests,
        constraints=d.constraints,
        decisions=tuple(
            Decision(_clip(x.text, limits.decision_chars), _clip(x.why, limits.decision_chars))
            for x in (d.decisions[-limits.decisions :] if limits.decisions else ())
        ),
        errors=errors,
        files=_working_files(d, limits),
        uncommitted=_uncommitted(d),
        identifiers=d.identifiers[-limits.identifiers :],
        completed=tuple(
            _clip(s, limits.item_chars)
            for s in (d.completed[-limits.completed :] if limits.completed else ())
        ),
        remaining=tuple(
            _clip(s, limits.item_chars) for s in [r for r in d.remaining if r != current][: limits.remaining]
        ),
        budget_tokens=budget,
    )


def build_checkpoint(
    session: Session,
    *,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    encoding: str | None = DEFAULT_ENCODING,
    max_chars: int | None = None,
) -> Checkpoint:
    """The checkpoint of ``session`` whose :func:`render_text` fits ``budget_tokens`` when it can.

    Building is linear in the session (one pass per concern, see :func:`~.digest.digest`): about
    0.1-0.2 s per MB of transcript text. A caller with a time budget (a PreCompact hook, which the
    host kills after a timeout) passes ``max_chars`` to read only the latest messages holding that
    many characters of text and tool payload (the person's requests are still read from the whole
    session): the cost is then bounded by ``max_chars``, not by the session, and the checkpoint is
    smaller in what it knows (older files, errors and decisions are left out). ``max_chars=4_000_000``
    keeps a checkpoint under about a second on a slow machine."""
    d = digest(session, max_chars=max_chars)
    return checkpoint_from_digest(d, budget_tokens=budget_tokens, encoding=encoding)


def checkpoint_from_digest(
    d: Digest, *, budget_tokens: int = DEFAULT_BUDGET_TOKENS, encoding: str | None = DEFAULT_ENCODING
) -> Checkpoint:
    """As :func:`build_checkpoint`, from an already computed digest.

    Binary search over the ladder of limits (each step only removes content, so sizes fall
    along it) for the richest checkpoint that fits; the last step when none does.
    """

    cache: dict[int, Checkpoint] = {}

    def sized(step: int) -> Checkpoint:
        if step not in cache:
            cp = _assemble(d, _LADDER[step], budget_tokens)
            cache[step] = replace(cp, tokens=text_tokens(render_text(cp), encoding))
        return cache[step]

    lo, hi = 0, len(_LADDER) - 1
    if sized(hi).tokens > budget_tokens:
        return sized(hi)
    while lo < hi:
        mid = (lo + hi) // 2
        if sized(mid).tokens <= budget_tokens:
            hi = mid
        else:
            lo = mid + 1
    return sized(lo)


def render_paths(paths: tuple[str, ...]) -> str:
    """Paths joined, absolute ones sharing a directory written once: ``under /a/b/: x.c, y/z.py``."""
    absolute = [p for p in paths if p.startswith("/")]
    relative = [p for p in paths if not p.startswith("/")]
    common = os.path.commonpath(absolute) if len(absolute) >= 2 else ""
    if len(common) < 2:
        return ", ".join(paths)
    grouped = f"under {common}/: " + ", ".join(p[len(common) + 1 :] or p for p in absolute)
    return "; ".join([grouped, ", ".join(relative)]) if relative else grouped


def render_block(cp: Checkpoint) -> str:
    """The ``[CONTEXT CHECKPOINT ...] ... [END CHECKPOINT]`` block alone (no directive)."""
    lines = [CHECKPOINT_HEADER, f"Original task: {cp.task}"]
    if cp.tools_used:
        lines.append(f"Tools used: {', '.join(cp.tools_used)} ({cp.tool_call_count} calls)")
    lines += bullets("Key findings", cp.key_findings)
    if cp.last_progress:
        lines.append(f"Last progress: {cp.last_progress}")
    if cp.current_goal and cp.current_goal != cp.task:
        lines.append(f"Current goal: {cp.current_goal}")
    lines += bullets("Later user requests", cp.requests)
    lines += bullets("User constraints (verbatim)", cp.constraints)
    lines += bullets("Decisions", [x.text for x in cp.decisions])
    lines += bullets("Latest errors", cp.errors)
    if cp.files:
        lines.append(f"Files being worked on: {render_paths(cp.files)}")
    if cp.uncommitted:
        lines.append(f"Uncommitted changes: {cp.uncommitted}")
    if cp.identifiers:
        lines.append(f"Ids and branches: {', '.join(cp.identifiers)}")
    lines += bullets("Completed", cp.completed)
    lines += bullets("Remaining", cp.remaining)
    lines.append(CHECKPOINT_FOOTER)
    return "\n".join(lines)


def render_text(cp: Checkpoint) -> str:
    """The spec's text format: the checkpoint block, a blank line, the continuation directive."""
    return f"{render_block(cp)}\n\n{CONTINUE_DIRECTIVE}"


def render_markdown(cp: Checkpoint) -> str:
    """The spec's markdown checkpoint: ``## Checkpoint: {task}`` with Status, Completed,
    Key decisions, Remaining work and Blockers."""
    title = _clip(cp.task.splitlines()[0] if cp.task else "(no instruction)", 100)
    status = [f"- Current goal: {cp.current_goal or cp.task}"]
    if cp.last_progress:
        status.append(f"- Last progress: {cp.last_progress}")
    if cp.files:
        status.append(f"- Files being worked on: {', '.join(f'`{f}`' for f in cp.files)}")
    if cp.uncommitted:
        status.append(f"- Uncommitted changes: {cp.uncommitted}")
    if cp.identifiers:
        status.append(f"- Ids and branches: {', '.join(f'`{i}`' for i in cp.identifiers)}")
    if cp.tools_used:
        status.append(f"- Tools used: {', '.join(cp.tools_used)} ({cp.tool_call_count} calls)")
    status += bullets("- User constraints (verbatim)", cp.constraints)
    status += bullets("- Later user requests", cp.requests)
    status += bullets("- Key findings", cp.key_findings)

    def section(name: str, items: list[str]) -> list[str]:
        return ["", f"### {name}", *([f"- {i}" for i in items] or ["- none recorded"])]

    decisions = [f"{x.text}" for x in cp.decisions]
    lines = [
        f"## Checkpoint: {title}",
        "",
        "### Status",
        *status,
        *section("Completed", list(cp.completed)),
        *section("Key decisions", decisions),
        *section("Remaining work", list(cp.remaining)),
        *section("Blockers", list(cp.blocking_errors)),
    ]
    return "\n".join(lines) + "\n"


COMPACTION_FACTS_HEADER = "[CTXHEALTH -- KEEP IN THE SUMMARY]"


def render_compaction_facts(cp: Checkpoint) -> str:
    """Extra instructions for an agent's own compaction: the checkpoint's facts that a summary must
    keep (the requests, constraints, files edited, errors still open, ids), so the agent's summary
    loses none of them. Added to the agent's compaction request, never in place of it."""
    lines = [
        COMPACTION_FACTS_HEADER,
        "While summarising, keep these facts (taken from the conversation) in the summary:",
        f"- Original request: {cp.task}",
    ]
    if cp.current_goal and cp.current_goal != cp.task:
        lines.append(f"- Current goal: {cp.current_goal}")
    lines += bullets("- Later user requests", cp.requests)
    lines += bullets("- User constraints (verbatim)", cp.constraints)
    if cp.files:
        lines.append(f"- Files being worked on: {render_paths(cp.files)}")
    lines += bullets("- Errors not resolved yet", list(cp.blocking_errors))
    if cp.identifiers:
        lines.append(f"- Ids and branches: {', '.join(cp.identifiers)}")
    lines += bullets("- Remaining", cp.remaining)
    return "\n".join(lines)
