"""The human-readable markdown summary of a task state, rendered from one template.

The summary is derived data: the JSON state is the truth. Each summary carries a
digest of the state it was rendered from in an HTML comment on its first line, so
a summary that no longer matches the state (edited by hand, or left behind by a
crash between two writes) is detected and rewritten from the state.
"""

from __future__ import annotations

import hashlib
import re

from ctxhealth.state.schema import TaskState, dump_state

__all__ = ["render_summary", "state_digest", "summary_digest", "summary_matches"]

_DIGEST_RE = re.compile(r"<!-- ctxhealth:task-state sha256=([0-9a-f]{64}) -->")

_TEMPLATE = """\
<!-- ctxhealth:task-state sha256={digest} -->
# Task summary

**Goal:** {goal}

**Current phase:** {phase}

**Next action:** {next_action}

**Last action:** {last_summary} ({last_outcome})

**Updated:** {updated_at}

## Constraints
{constraints}

## Invariants
{invariants}

## Decisions
{decisions}

## Completed steps
{completed}

## Failed attempts
{failed}

## Blockers
{blockers}

## Artifacts
{artifacts}

## Important outputs
{outputs}
"""


def state_digest(state: TaskState) -> str:
    """SHA-256 of the canonical JSON of ``state``."""
    return hashlib.sha256(dump_state(state)).hexdigest()


def _bullets(items: list[str], *, numbered: bool = False) -> str:
    if not items:
        return "_none_"
    lines = []
    for i, item in enumerate(items, 1):
        flat = " ".join(item.split())
        lines.append(f"{i}. {flat}" if numbered else f"- {flat}")
    return "\n".join(lines)


def _inline(text: str) -> str:
    flat = " ".join(text.split())
    return flat or "_none_"


def render_summary(state: TaskState) -> str:
    """The markdown summary of ``state``, covering every field."""
    return _TEMPLATE.format(
        digest=state_digest(state),
        goal=_inline(state.goal),
        phase=_inline(state.current_phase),
        next_action=_inline(state.next_action),
        last_summary=_inline(state.last_action.summary),
        last_outcome=state.last_action.outcome.value,
        updated_at=state.updated_at or "_unknown_",
        constraints=_bullets(list(state.constraints)),
        invariants=_bullets(list(state.invariants)),
        decisions=_bullets([f"{d.decision} — why: {d.why}" for d in state.decisions]),
        completed=_bullets(list(state.completed_steps), numbered=True),
        failed=_bullets(
            [f"{f.attempt} — {f.reason}" if f.reason else f.attempt for f in state.failed_attempts]
        ),
        blockers=_bullets(list(state.blockers)),
        artifacts=_bullets([f"`{a.path}` ({a.role})" if a.role else f"`{a.path}`" for a in state.artifacts]),
        outputs=_bullets(list(state.important_outputs)),
    )


def summary_digest(text: str) -> str | None:
    """The state digest a summary claims to be rendered from, or None if it has none."""
    match = _DIGEST_RE.search(text[:200])
    return match.group(1) if match else None


def summary_matches(text: str, state: TaskState) -> bool:
    """True when ``text`` is exactly the summary ``state`` renders to."""
    return summary_digest(text) == state_digest(state) and text == render_summary(state)
