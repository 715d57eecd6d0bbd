"""Fuzz every reader with generated mutations of real transcripts: no traceback, no hang, valid lines kept.

Seeds: the real sessions in ../shared/data (Claude Code, mini-swe-agent, tau-bench result files and
OpenHands completion files, and their message lists; skipped with a reason when absent), the shipped
example and our own fixtures (always there, so the fuzzing always runs). Large seeds are cut into
windows of whole lines (or a prefix of the message list), so a case costs milliseconds. Mutations
are drawn from a seeded generator, a few thousand per run, in a bounded number per seed group, so a
run is reproducible.

Every case goes through the format's own parser, the detecting reader (``read_data``) and, for Claude
Code, the hooks' incremental reader fed in random chunks. Anything but a :class:`CtxHealthError` is a
failure, and so is one case running past ``HANG_SECONDS`` (a hang, not a timing).
"""

from __future__ import annotations

import json
import random
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import SHARED_DATA
from ctxhealth.errors import CtxHealthError
from ctxhealth.model import Format, Session
from ctxhealth.sources import (
    anthropic_messages,
    claude_code,
    codex,
    mini_swe_agent,
    openai_chat,
    openhands,
    swe_agent,
    tau_bench,
)
from ctxhealth.sources.claude_code import ClaudeCodeTail
from ctxhealth.sources.reader import read_data

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
HANG_SECONDS = 10
WINDOW_LINES = 40

PARSERS: dict[Format, Callable[[bytes, str], Session]] = {
    Format.CLAUDE_CODE: claude_code.parse,
    Format.CODEX: codex.parse,
    Format.MINI_SWE_AGENT: mini_swe_agent.parse,
    Format.OPENAI_CHAT: openai_chat.parse,
    Format.ANTHROPIC_MESSAGES: anthropic_messages.parse,
    Format.SWE_AGENT: swe_agent.parse,
    Format.OPENHANDS: openhands.parse,
    Format.TAU_BENCH: tau_bench.parse,
}
JSONL = (Format.CLAUDE_CODE, Format.CODEX)


class _Hang(Exception):
    pass


def _guarded(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` with a hang guard; a CtxHealthError is an accepted outcome (returns None)."""

    def expire(signum: int, frame: object) -> None:
        raise _Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(HANG_SECONDS)
    try:
        return fn()
    except CtxHealthError:
        return None
    except _Hang:
        pytest.fail(f"a reader ran past {HANG_SECONDS} s: a hang")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# -- seeds ------------------------------------------------------------------------------------------


def _windows(data: bytes, rng: random.Random, count: int) -> Iterator[bytes]:
    lines = data.splitlines(keepends=True)
    for _ in range(count):
        start = rng.randrange(max(1, len(lines) - WINDOW_LINES + 1))
        yield b"".join(lines[start : start + WINDOW_LINES])


def _message_list(messages: list[Any], rng: random.Random, count: int) -> Iterator[bytes]:
    for _ in range(count):
        end = rng.randint(min(len(messages), 2), min(len(messages), 30))
        yield json.dumps(messages[:end]).encode()


def _own_seeds() -> list[tuple[Format, bytes]]:
    return [
        (Format.CLAUDE_CODE, (REPO / "examples" / "claude-code-session.jsonl").read_bytes()),
        (Format.CODEX, (FIXTURES / "codex-rollout.jsonl").read_bytes()),
        (Format.OPENAI_CHAT, (FIXTURES / "openai-chat.json").read_bytes()),
        (Format.ANTHROPIC_MESSAGES, (FIXTURES / "anthropic-messages.json").read_bytes()),
        (Format.SWE_AGENT, (FIXTURES / "agents" / "swe-agent-0.x.traj").read_bytes()),
        (Format.SWE_AGENT, (FIXTURES / "agents" / "swe-agent-1.x-function-calling.traj").read_bytes()),
        (Format.TAU_BENCH, (FIXTURES / "agents" / "tau-bench-results.json").read_bytes()),
        (Format.OPENHANDS, (FIXTURES / "agents" / "openhands-output.jsonl").read_bytes()),
    ]


def _real_seeds(rng: random.Random) -> list[tuple[Format, bytes]]:
    seeds: list[tuple[Format, bytes]] = []
    for path in sorted((SHARED_DATA / "claude-code").rglob("*.jsonl")):
        seeds += [(Format.CLAUDE_CODE, w) for w in _windows(path.read_bytes(), rng, 3)]
    for path in sorted((SHARED_DATA / "mini-swe-agent").rglob("*.traj.json"))[:8]:
        doc = json.loads(path.read_bytes())
        for _ in range(2):
            end = rng.randint(3, max(3, min(len(doc["messages"]), 20)))
            seeds.append(
                (Format.MINI_SWE_AGENT, json.dumps({**doc, "messages": doc["messages"][:end]}).encode())
            )
    tau = SHARED_DATA / "tau-bench" / "gpt-4o-airline.json"
    if tau.is_file():
        runs = json.loads(tau.read_bytes())
        for run in rng.sample(runs, min(6, len(runs))):
            seeds += [(Format.OPENAI_CHAT, d) for d in _message_list(run["traj"], rng, 2)]
        # the file as tau-bench writes it: a list of runs (two short ones, so a case stays cheap)
        short = sorted(runs, key=lambda r: len(json.dumps(r)))[:2]
        seeds.append((Format.TAU_BENCH, json.dumps(short).encode()))
    for path in sorted((SHARED_DATA / "openhands").rglob("*.json"))[:6]:
        messages = json.loads(path.read_bytes()).get("messages")
        if isinstance(messages, list) and messages:
            seeds += [(Format.OPENAI_CHAT, d) for d in _message_list(messages, rng, 2)]
            # one model call's file as OpenHands writes it, its context cut short
            doc = json.loads(path.read_bytes())
            doc["messages"] = messages[: rng.randint(2, min(len(messages), 12))]
            seeds.append((Format.OPENHANDS, json.dumps(doc).encode()))
    return seeds


# -- mutations --------------------------------------------------------------------------------------

JUNK = [
    b"\x00\x00\x00",
    b"\xff\xfe\xfd",  # invalid UTF-8
    b'{"type": "assistant", "message": {"usage": {"input_tokens": 1e400}}}',
    b'{"uuid": "\\ud800", "message": null}',
    b'{"message": {"usage": {"input_tokens": "12", "output_tokens": -5}}}',
    b"[" * 200,
    b'{"type":',
    b"18446744073709551617",
]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """``data`` after 1-4 random edits of the kinds real damage takes: bytes flipped, a run cut out,
    random or hostile bytes inserted, the file cut short, a line repeated, two lines swapped."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not out:
            out += rng.choice(JUNK)
            continue
        pos = rng.randrange(len(out))
        kind = rng.randrange(7)
        if kind == 0:
            out[pos] = rng.randrange(256)
        elif kind == 1:
            del out[pos : pos + rng.randint(1, 200)]
        elif kind == 2:
            out[pos:pos] = rng.choice(JUNK)
        elif kind == 3:
            out[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 30)))
        elif kind == 4:
            del out[pos:]
        else:
            lines = bytes(out).splitlines(keepends=True)
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if kind == 5:
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            out = bytearray(b"".join(lines))
    return bytes(out)


def _check(fmt: Format, data: bytes, rng: random.Random) -> None:
    for run in (lambda: PARSERS[fmt](data, "fuzz"), lambda: read_data(data, "fuzz")):
        result = _guarded(run)
        assert result is None or isinstance(result, Session)
    if fmt is Format.CLAUDE_CODE:
        # The hooks' incremental reader, as a growing file feeds it: each call gets the bytes after
        # what the previous calls consumed, up to where the file has grown.
        offset = 0
        for end in [*sorted(rng.randrange(len(data) + 1) for _ in range(3)), len(data)]:
            tail = ClaudeCodeTail("fuzz")
            chunk = data[offset:end]
            messages = _guarded(lambda chunk=chunk, tail=tail: tail.feed(chunk)) or []
            assert isinstance(messages, list) and 0 <= tail.consumed <= len(chunk)
            offset += tail.consumed


def _shape(session: Session) -> list[tuple[Any, ...]]:
    return [(m.role, m.blocks, m.id, m.response_id, m.usage, m.model) for m in session.messages]


def _junk_line_keeps_every_message(fmt: Format, data: bytes, rng: random.Random) -> None:
    """A line that is not JSON, inserted anywhere in a JSONL file, costs nothing but a warning."""
    clean = _guarded(lambda: PARSERS[fmt](data, "fuzz"))
    if clean is None:
        return
    lines = data.splitlines()
    at = rng.randint(0, len(lines))
    junk = rng.choice([b"\xff\xfe not json", b"{broken", b"\x00" * 20, b"<<<<<<< HEAD"])
    broken = b"\n".join([*lines[:at], junk, *lines[at:]]) + b"\n"
    session = _guarded(lambda: PARSERS[fmt](broken, "fuzz"))
    assert session is not None and _shape(session) == _shape(clean)


def _run(seeds: list[tuple[Format, bytes]], cases_per_seed: int, rng: random.Random) -> int:
    cases = 0
    for fmt, seed in seeds:
        for _ in range(cases_per_seed):
            _check(fmt, mutate(seed, rng), rng)
            cases += 1
        if fmt in JSONL:
            _junk_line_keeps_every_message(fmt, seed, rng)
            cases += 1
    return cases


def test_mutations_of_our_own_samples_never_break_a_reader() -> None:
    rng = random.Random(20261201)
    assert _run(_own_seeds(), 250, rng) >= 1000


def test_mutations_of_real_sessions_never_break_a_reader() -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real transcripts not found at {SHARED_DATA}")
    rng = random.Random(17)
    seeds = _real_seeds(rng)
    formats = {fmt for fmt, _ in seeds}
    assert Format.CLAUDE_CODE in formats and len(seeds) >= 30
    assert _run(seeds, 40, rng) >= 2000
