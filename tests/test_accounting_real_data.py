"""Calibrated estimates on real Claude Code sessions: hide half the reported usage, predict it back."""

from __future__ import annotations

from pathlib import Path

import msgspec.structs

from ctxhealth.accounting.fill import account_session
from ctxhealth.accounting.types import FillSource
from ctxhealth.model import Role
from ctxhealth.sources import read_sessions


def test_estimates_calibrated_on_the_other_half_are_close(claude_code_data: Path) -> None:
    checked = 0
    for path in sorted(claude_code_data.glob("*/*.jsonl")):
        (session,) = read_sessions([path])
        truth = account_session(session)
        if len(truth.turns) < 10:
            continue
        messages = list(session.messages)
        responses = [i for i, m in enumerate(messages) if m.role is Role.ASSISTANT and m.usage is not None]
        for i in responses[1::2]:  # every other response loses its usage (and looks like another model)
            messages[i] = msgspec.structs.replace(messages[i], usage=None, model="acme-model")
        mixed = account_session(msgspec.structs.replace(session, messages=tuple(messages)))
        assert len(mixed.turns) == len(truth.turns)
        errors = [
            abs(m.tokens - t.tokens) / t.tokens
            for m, t in zip(mixed.turns, truth.turns, strict=True)
            if m.source is FillSource.ESTIMATED
        ]
        assert errors, path.name
        assert sum(errors) / len(errors) < 0.05, path.name
        assert max(errors) < 0.25, path.name
        assert 1.5 <= mixed.chars_per_token <= 4.0, path.name  # code and JSON pack fewer chars per token
        checked += 1
    assert checked >= 5
