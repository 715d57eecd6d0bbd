"""Repetition detectors: the same call repeated, the same file re-read without an edit in between,
edit thrash (a change undone, or one file edited again and again within a few turns).

Re-running a command after editing what it runs is iteration, not repetition: a call that reads or
runs a file (``cat x.py``, ``python repro.py``, ``Read x.py``) is forgotten when an edit, patch or
write touches that file, so running it again is not a repeat. A check with no file of its own
(``pytest``, ``make test``) depends on the whole workspace: any edit makes its next run new; an
edit whose files are unknown (``git apply``, ``patch``) makes every such call new. Files
are matched by name (an edit of ``/repo/src/x.py`` matches ``python src/x.py``), which errs on the
side of not calling a run a repeat.

State is bounded: recent call keys and per-file state live in :class:`BoundedDict` maps, events in
turn windows of ``indicator_window`` turns.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from ctxhealth.signals.base import BoundedDict, CachedDetector, Signal, TurnWindow, pair_hash
from ctxhealth.signals.calls import CallInfo, CallKind
from ctxhealth.signals.events import Event
from ctxhealth.signals.thresholds import SignalThresholds

if TYPE_CHECKING:
    from ctxhealth.signals.state import RepetitionState

KEY_LIMIT = 128
ANY_EDIT = "*"
"""The dependency of a check that names no file: any edit."""


def _file_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


class RepetitionDetector(CachedDetector):
    """Identical calls, re-reads without an edit, and edit thrash, within a window of turns."""

    def __init__(self, profile: SignalThresholds) -> None:
        self.profile = profile
        w = profile.indicator_window
        self.seen_calls: BoundedDict[int, int] = BoundedDict(KEY_LIMIT)
        self.read_since_edit: BoundedDict[str, int] = BoundedDict(KEY_LIMIT)
        self.changes: BoundedDict[tuple[str, int], int] = BoundedDict(KEY_LIMIT)
        self.edit_turns: BoundedDict[str, deque[int]] = BoundedDict(KEY_LIMIT)
        self.repeats = TurnWindow(w)
        self.rereads = TurnWindow(w)
        self.thrash = TurnWindow(w)
        self.total_edits = 0
        self._turn = 0
        self.files_edited: BoundedDict[str, None] = BoundedDict(KEY_LIMIT)
        # file (or ANY_EDIT) -> keys of seen calls that read or run it: an edit forgets them
        self.depends: BoundedDict[str, list[int]] = BoundedDict(KEY_LIMIT)

    def serialize(self) -> RepetitionState:
        from ctxhealth.signals.state import RepetitionState, pairs, window_state

        return RepetitionState(
            seen_calls=pairs(self.seen_calls),
            read_since_edit=pairs(self.read_since_edit),
            changes=pairs(self.changes),
            edit_turns=[(path, list(turns)) for path, turns in self.edit_turns.items()],
            repeats=window_state(self.repeats),
            rereads=window_state(self.rereads),
            thrash=window_state(self.thrash),
            total_edits=self.total_edits,
            turn=self._turn,
            files_edited=list(self.files_edited),
            depends=[(target, list(keys)) for target, keys in self.depends.items()],
        )

    def restore(self, state: RepetitionState) -> None:
        from ctxhealth.signals.state import bounded, load_window

        self.seen_calls = bounded(KEY_LIMIT, state.seen_calls)
        self.read_since_edit = bounded(KEY_LIMIT, state.read_since_edit)
        self.changes = bounded(KEY_LIMIT, state.changes)
        thrash = self.profile.edit_thrash
        self.edit_turns = bounded(KEY_LIMIT, ((p, deque(t, maxlen=thrash)) for p, t in state.edit_turns))
        load_window(self.repeats, state.repeats)
        load_window(self.rereads, state.rereads)
        load_window(self.thrash, state.thrash)
        self.total_edits = state.total_edits
        self._turn = state.turn
        self.files_edited = bounded(KEY_LIMIT, ((path, None) for path in state.files_edited))
        self.depends = bounded(KEY_LIMIT, ((target, list(keys)) for target, keys in state.depends))
        self._snap = None

    def update(self, event: Event) -> None:
        turn = event.turn
        if not event.calls and turn == self._turn:
            return
        self._turn = turn
        for call in event.calls:
            key = call.key
            if key in self.seen_calls:
                self.repeats.add(turn, event.index)
                self._snap = None
            self.seen_calls.put(key, event.index)
            self._depend(call)
            for path in call.reads:
                if path in self.read_since_edit:
                    self.rereads.add(turn, event.index)
                    self._snap = None
                self.read_since_edit.put(path, event.index)
            for path in call.edits:
                if self._edit(path, call.change, turn, event.index):
                    self._snap = None
            if not call.edits and CallKind.EDIT in call.kinds:
                self._forget_all_dependents()  # ``git apply``, ``patch``: files unknown
        if self.repeats.prune(turn) | self.rereads.prune(turn) | self.thrash.prune(turn):
            self._snap = None

    def _depend(self, call: CallInfo) -> None:
        """Remember which files ``call`` reads or runs, so an edit of one of them forgets the call."""
        targets = call.reads + call.runs
        if not targets and CallKind.VERIFY in call.kinds:
            targets = (ANY_EDIT,)
        for path in targets:
            target = _file_name(path)
            keys = self.depends.get(target)
            if keys is None:
                keys = []
            elif call.key in keys:
                continue
            keys.append(call.key)
            del keys[:-KEY_LIMIT]
            self.depends.put(target, keys)

    def _forget_dependents(self, path: str) -> None:
        """An edit of ``path``: the calls that read or ran it (and checks of the whole workspace)
        are no longer repeats when run again."""
        for target in (_file_name(path), ANY_EDIT):
            for key in self.depends.pop(target, ()):
                self.seen_calls.pop(key, None)

    def _forget_all_dependents(self) -> None:
        for keys in self.depends.values():
            for key in keys:
                self.seen_calls.pop(key, None)
        self.depends.clear()

    def _edit(self, path: str, change: tuple[str, str] | None, turn: int, index: int) -> bool:
        """Record an edit; True when it counts as thrash."""
        self._forget_dependents(path)
        self.total_edits += 1
        self.files_edited.put(path, None)
        self.read_since_edit.pop(path, None)
        thrash = False
        if change is not None:
            old, new = change
            if (path, pair_hash(new, old)) in self.changes:
                thrash = True  # this edit undoes an earlier one
            self.changes.put((path, pair_hash(old, new)), index)
        turns = self.edit_turns.get(path)
        if turns is None:
            turns = deque(maxlen=self.profile.edit_thrash)
        turns.append(turn)
        self.edit_turns.put(path, turns)
        if len(turns) == turns.maxlen and turn - turns[0] < self.profile.fidelity_window:
            thrash = True  # the same file edited edit_thrash times within a few turns
        if thrash:
            self.thrash.add(turn, index)
        return thrash

    def _take(self) -> tuple[Any, ...]:
        return (
            len(self.repeats),
            self.repeats.evidence(),
            len(self.rereads),
            self.rereads.evidence(),
            len(self.thrash),
            self.thrash.evidence(),
        )

    def render(self, snap: tuple[Any, ...]) -> tuple[Signal, ...]:
        repeats, repeats_idx, rereads, rereads_idx, thrash, thrash_idx = snap
        p = self.profile
        w = p.indicator_window
        return (
            Signal(
                "repeated_calls",
                float(repeats),
                repeats >= p.repeated_calls,
                repeats_idx,
                f"{repeats} identical calls repeated in the last {w} turns (fires at {p.repeated_calls})",
            ),
            Signal(
                "rereads",
                float(rereads),
                rereads >= p.rereads,
                rereads_idx,
                f"{rereads} files re-read without an edit in the last {w} turns (fires at {p.rereads})",
            ),
            Signal(
                "edit_thrash",
                float(thrash),
                thrash >= 1,
                thrash_idx,
                f"{thrash} edits undoing a change or hitting one file {p.edit_thrash}x within "
                f"{p.fidelity_window} turns",
            ),
        )

    @property
    def repeated_fired(self) -> bool:
        p = self.profile
        return len(self.repeats) >= p.repeated_calls or len(self.rereads) >= p.rereads
