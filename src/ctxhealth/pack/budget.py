"""The budget-allocation tree: which levels a task uses and how many tokens each may take.

Shares (percent of the window) from the spec: a window over 150K tokens gets L1 3 · L2 10 · L3 35 ·
L4 5 · L5 7 (buffer 20), a smaller one L1 4 · L2 8 · L3 25 · L4 3 · L5 5 (buffer 15). Debugging
shifts 10 points from L3 to L4; a conversation of more than 20 turns reserves 10 more for L5 (taken
from L3). The payload is the levels without the buffer; with a model it is 80% of the usable
window, with ``--budget`` it is exactly that number and the tree is the large one when the budget
implies a window over 150K (budget / 0.8).

Levels by task type: code L1+L2+L3; debug L1+L3+L4 (+L2 when specs are given); review L1+L2+L3;
docs and explore all five. Error output (L4) is included whenever it is given — it is never dropped
— and may take at most 5% of the payload (15% when debugging). L1, L2, L4 and L5 get fixed caps
(their share of the payload over the levels the task type uses), so their bytes do not depend on
the source files; L3 gets whatever the others leave.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

LARGE_WINDOW = 150_000
MODEL_PAYLOAD_SHARE = 0.80
ERROR_SHARE = 0.05
DEBUG_SHIFT = 0.10
LONG_CONVERSATION_TURNS = 20
LONG_CONVERSATION_EXTRA = 0.10
MIN_BUDGET = 64
"""No pack fits in fewer tokens than this (headers, the error output that must never be dropped)."""

LEVELS = ("L1", "L2", "L3", "L4", "L5")
LEVEL_NAMES = {"L1": "rules", "L2": "specs", "L3": "source files", "L4": "error output", "L5": "history"}


class TaskType(StrEnum):
    CODE = "code"
    DEBUG = "debug"
    REVIEW = "review"
    DOCS = "docs"
    EXPLORE = "explore"


_LARGE = {"L1": 0.03, "L2": 0.10, "L3": 0.35, "L4": 0.05, "L5": 0.07}
_SMALL = {"L1": 0.04, "L2": 0.08, "L3": 0.25, "L4": 0.03, "L5": 0.05}


@dataclass(frozen=True, slots=True)
class Allocation:
    """Token caps per level for one request, the tree used and the levels the task type selects."""

    payload: int
    tree: str  # "large" or "small"
    levels: tuple[str, ...]
    caps: dict[str, int]
    shares: dict[str, float]


def selected_levels(task_type: TaskType, *, has_specs: bool, has_errors: bool) -> tuple[str, ...]:
    """The levels the spec's table selects for ``task_type`` (L4 whenever errors are given)."""
    if task_type in (TaskType.CODE, TaskType.REVIEW):
        chosen = ["L1", "L2", "L3"]
    elif task_type is TaskType.DEBUG:
        chosen = ["L1", "L3", "L4"] + (["L2"] if has_specs else [])
    else:
        chosen = list(LEVELS)
    if has_errors and "L4" not in chosen:
        chosen.append("L4")
    return tuple(sorted(chosen))


def payload_for_model(usable_window: int) -> int:
    """The payload budget a model allows: 80% of its usable window."""
    return int(usable_window * MODEL_PAYLOAD_SHARE)


def allocate(
    payload: int,
    task_type: TaskType,
    *,
    window: int | None,
    has_specs: bool,
    has_errors: bool,
    turns: int = 0,
) -> Allocation:
    """Caps per level for a payload of ``payload`` tokens (see the module docstring)."""
    effective_window = window if window is not None else int(payload / MODEL_PAYLOAD_SHARE)
    large = effective_window > LARGE_WINDOW
    shares = dict(_LARGE if large else _SMALL)
    if task_type is TaskType.DEBUG:
        shares["L3"] -= DEBUG_SHIFT
        shares["L4"] += DEBUG_SHIFT
    if turns > LONG_CONVERSATION_TURNS:
        shares["L3"] -= LONG_CONVERSATION_EXTRA
        shares["L5"] += LONG_CONVERSATION_EXTRA
    levels = selected_levels(task_type, has_specs=has_specs, has_errors=has_errors)
    total = sum(shares[level] for level in levels)
    caps = {level: int(payload * shares[level] / total) for level in levels}
    if "L4" in caps:
        limit = ERROR_SHARE + (DEBUG_SHIFT if task_type is TaskType.DEBUG else 0.0)
        caps["L4"] = int(payload * limit)
    caps["L3"] = payload  # L3 takes what the other levels leave (see pack assembly)
    return Allocation(payload, "large" if large else "small", levels, caps, {lv: shares[lv] for lv in levels})
