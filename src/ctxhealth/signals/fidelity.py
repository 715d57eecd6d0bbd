"""Fidelity signals: verification steps disappearing, plans contracting, file awareness narrowing.

Measured in blocks of ``fidelity_window`` assistant turns: the current block is compared with the
previous one (bounded state: two blocks). Verification = a call classified as a check (tests,
builds, linters, reproduction scripts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxhealth.model import Message, Role, TextBlock
from ctxhealth.signals.base import CachedDetector, Signal
from ctxhealth.signals.calls import CallKind
from ctxhealth.signals.events import Event
from ctxhealth.signals.thresholds import SignalThresholds

if TYPE_CHECKING:
    from ctxhealth.signals.state import FidelityState

FILE_LIMIT = 256


class FidelityDetector(CachedDetector):
    """Verification gaps, contracting replies and narrowing file focus, block by block."""

    def __init__(self, profile: SignalThresholds) -> None:
        self.profile = profile
        self.block_start = 1
        self.cur_files: set[str] = set()
        self.prev_files = 0
        self.prev_files_index = 0
        self.cur_chars = 0
        self.cur_turns = 0
        self.early_plan = 0.0
        self.early_done = False
        self.early_chars = 0
        self.early_turns = 0
        self.last_verify_turn = 0
        self.last_verify_index: int | None = None
        self.verifications = 0
        self.turn = 0
        self.turn_index = 0

    def serialize(self) -> FidelityState:
        from ctxhealth.signals.state import FidelityState

        return FidelityState(
            block_start=self.block_start,
            cur_files=sorted(self.cur_files),
            prev_files=self.prev_files,
            prev_files_index=self.prev_files_index,
            cur_chars=self.cur_chars,
            cur_turns=self.cur_turns,
            early_plan=self.early_plan,
            early_done=self.early_done,
            early_chars=self.early_chars,
            early_turns=self.early_turns,
            last_verify_turn=self.last_verify_turn,
            last_verify_index=self.last_verify_index,
            verifications=self.verifications,
            turn=self.turn,
            turn_index=self.turn_index,
        )

    def restore(self, state: FidelityState) -> None:
        self.block_start = state.block_start
        self.cur_files = set(state.cur_files)
        self.prev_files = state.prev_files
        self.prev_files_index = state.prev_files_index
        self.cur_chars = state.cur_chars
        self.cur_turns = state.cur_turns
        self.early_plan = state.early_plan
        self.early_done = state.early_done
        self.early_chars = state.early_chars
        self.early_turns = state.early_turns
        self.last_verify_turn = state.last_verify_turn
        self.last_verify_index = state.last_verify_index
        self.verifications = state.verifications
        self.turn = state.turn
        self.turn_index = state.turn_index
        self._snap = None

    def update(self, event: Event) -> None:
        msg = event.message
        if event.continues:
            self._continue_reply(msg)
        elif msg.role is Role.ASSISTANT and event.turn != self.turn:
            self.turn = event.turn
            self.turn_index = event.index
            if event.turn - self.block_start >= self.profile.fidelity_window:
                self.prev_files = len(self.cur_files)
                self.prev_files_index = event.index
                self.cur_files = set()
                self.block_start = event.turn
                self.cur_chars = 0
                self.cur_turns = 0
            chars = 0
            for b in msg.blocks:  # a loop, not a generator per reply
                if isinstance(b, TextBlock):
                    chars += len(b.text)
            self.cur_chars += chars
            self.cur_turns += 1
            if not self.early_done:
                self.early_chars += chars
                self.early_turns += 1
                if self.early_turns >= self.profile.fidelity_window:
                    self.early_done = True
            self._snap = None
        for call in event.calls:
            if CallKind.VERIFY in call.kinds:
                self.verifications += 1
                self.last_verify_turn = event.turn
                self.last_verify_index = event.index
            if len(self.cur_files) < FILE_LIMIT:
                self.cur_files.update(call.mentions)
            self._snap = None

    def _continue_reply(self, msg: Message) -> None:
        """More of the current turn's reply: its text counts toward the turn's length, in the early
        block too when the turn is one of the early ones (every turn so far was early)."""
        chars = sum(len(b.text) for b in msg.blocks if isinstance(b, TextBlock))
        if chars:
            self.cur_chars += chars
            if not self.early_done or self.early_turns == self.turn:
                self.early_chars += chars
            self._snap = None

    @property
    def turns_since_verification(self) -> int:
        return self.turn - self.last_verify_turn if self.last_verify_index is not None else self.turn

    @property
    def plan_ratio(self) -> float:
        """Recent reply length over the early reply length (1.0 until both are known)."""
        if not self.early_done or not self.cur_turns or not self.early_chars:
            return 1.0
        return (self.cur_chars / self.cur_turns) / (self.early_chars / self.early_turns)

    @property
    def files_ratio(self) -> float:
        if not self.prev_files or self.turn - self.block_start < self.profile.fidelity_window // 2:
            return 1.0
        return len(self.cur_files) / self.prev_files

    def _take(self) -> tuple[Any, ...]:
        return (
            self.turns_since_verification,
            self.last_verify_index,
            self.verifications,
            self.plan_ratio,
            self.turn_index,
            self.files_ratio,
            len(self.cur_files),
            self.prev_files,
            self.prev_files_index,
        )

    def render(self, snap: tuple[Any, ...]) -> tuple[Signal, ...]:
        since, last_idx, checks, plan, turn_idx, files_ratio, cur_files, prev_files, prev_idx = snap
        w = self.profile.fidelity_window
        return (
            Signal(
                "verification_gap",
                float(since),
                last_idx is not None and since >= w,
                (last_idx,) if last_idx is not None else (),
                f"{checks} checks run; last one {since} turns ago (fires after {w} turns without one "
                "once checks were run)",
            ),
            Signal(
                "plan_contraction",
                plan,
                plan < 0.5,
                (turn_idx,),
                "recent reply length / early reply length (fires below 0.5)",
            ),
            Signal(
                "file_narrowing",
                files_ratio,
                prev_files >= 3 and files_ratio < 0.5,
                (prev_idx,),
                f"{cur_files} files touched in this block of {w} turns vs {prev_files} before "
                "(fires below 0.5 with >= 3 before)",
            ),
        )
