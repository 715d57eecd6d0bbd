"""The Monitor: fill (reported / estimated / compaction), decisions over a run, recovery bookkeeping,
``observe_session(upto=...)``, cheap import — on constructed sessions and on real transcripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec.structs
import pytest

from ctxhealth.accounting.types import FillSource
from ctxhealth.errors import UsageError
from ctxhealth.model import (
    CompactionSummary,
    Format,
    Message,
    Role,
    Session,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from ctxhealth.monitor import Monitor, cut_index
from ctxhealth.policy import Action, Rule
from ctxhealth.policy.profile import Profile
from ctxhealth.risk import RiskModel

P = Profile(risk=None)


def user(text: str) -> Message:
    return Message(Role.USER, (TextBlock(text),))


def act(n: int, command: str = "ls", fill: int | None = None) -> Message:
    usage = Usage(input_tokens=fill, output_tokens=5) if fill is not None else None
    return Message(Role.ASSISTANT, (ToolCall(f"c{n}", "bash", {"command": command}),), usage=usage)


def res(n: int, code: int = 0) -> Message:
    return Message(Role.USER, (ToolResult(f"c{n}", "out" if code == 0 else "Error: x", bool(code), code),))


def test_fill_is_the_accounts_fill_at_each_response() -> None:
    m = Monitor("claude-sonnet-4", P)
    a = m.observe(Message(Role.SYSTEM, (TextBlock("s" * 400),)))
    assert a.fill == 0 and a.fill_source is FillSource.ESTIMATED  # no response yet
    a = m.observe(act(0, fill=5_000))
    assert a.fill == 5_000 and a.fill_source is FillSource.REPORTED
    a = m.observe(Message(Role.USER, (ToolResult("c0", "x" * 4_000),)))
    assert a.fill == 5_000  # between responses the fill is the latest response's prompt
    a = m.observe(act(1))  # no usage: the report plus what was added since, ~4 chars a token
    call_chars = len("bash") + len('{"command":"ls"}') + 1
    expected = 5_000 + round((call_chars + 4 * (4 + 8) + 4_000 + 4 * (4 + 8)) / 4)
    assert a.fill == expected and a.fill_source is FillSource.ESTIMATED
    summary = Message(Role.USER, (CompactionSummary("summary " * 100),))
    # at a compaction the fill drops at once to what it left: the hidden base of the last report,
    # the system prompt and the summary (estimated), and the next response counts from there
    hidden = 5_000 - (400 + 16) / 4
    at = m.observe(summary)
    assert at.fill == round(hidden + (400 + 16 + 800 + 16) / 4) and at.fill_source is FillSource.ESTIMATED
    a = m.observe(act(2))
    assert a.fill == round(hidden + (400 + 16 + 800 + 16) / 4)
    assert m.pressure.peak == expected


def test_explicit_fill_wins() -> None:
    m = Monitor("claude-sonnet-4", P)
    assert m.observe(user("hi"), fill=42_000).fill == 42_000


def test_model_taken_from_first_message_when_not_given() -> None:
    m = Monitor(profile=P)
    assert m.info.tier.value == "compact"
    m.observe(Message(Role.ASSISTANT, (TextBlock("x"),), model="claude-opus-4-20250514"))
    assert m.info.tier.value == "full"


def test_decisions_follow_the_tree_over_a_constructed_run() -> None:
    m = Monitor("claude-sonnet-4", P)
    m.observe(user("fix the bug"))
    assert m.observe(act(0, fill=10_000)).action is Action.CONTINUE
    assert m.observe(act(1, fill=130_000)).rule is Rule.COMPACT_ZONE
    # 145K of 167K usable (Claude Code: 200K - 20K - 13K): pressure 0.87, zone still orange
    assert m.observe(act(2, fill=145_000)).action is Action.HALT
    assert m.observe(act(3, fill=185_000)).rule is Rule.HARD_LIMIT


def test_restart_cooldown_and_circuit_breaker_through_the_monitor() -> None:
    m = Monitor("claude-sonnet-4", P)
    m.observe(user("go"))
    n = 0
    seen: list[Action] = []
    for _ in range(4):  # four restarts asked for; the fourth is refused by the breaker
        while True:
            a = m.observe(act(n, f"cmd{n}", fill=185_000))
            m.observe(res(n))
            n += 1
            seen.append(a.action)
            if a.action in (Action.RESTART, Action.TRUNCATE):
                break
        m.record_recovery(a.action)
    assert m.counters.restarts == 3
    assert a.action is Action.TRUNCATE and "circuit breaker" in a.reasons[-1]
    # after each restart exactly 3 assistant turns continue (cooldown)
    assert seen[:5] == [Action.RESTART, Action.CONTINUE, Action.CONTINUE, Action.CONTINUE, Action.RESTART]


def test_record_recovery_resets_failures_and_fill() -> None:
    m = Monitor("claude-sonnet-4", P)
    m.observe(user("go"))
    for n in range(4):
        m.observe(act(n, f"x{n}"))
        m.observe(res(n, code=1))
    assert m.last is not None and m.last.rule is Rule.FAILURE_SPIRAL
    m.record_recovery(Action.RESTART, fill=2_000)
    assert m.failures.rate == 0 and m.fill == 2_000


def test_too_many_turns_compresses_until_recorded() -> None:
    m = Monitor("claude-sonnet-4", P)
    m.observe(user("go"))
    actions = [m.observe(Message(Role.ASSISTANT, (TextBlock(f"step {i}"),))).action for i in range(32)]
    assert actions[29] is Action.CONTINUE and actions[30] is Action.COMPRESS_HISTORY
    m.record_recovery(Action.COMPRESS_HISTORY)
    assert m.observe(Message(Role.ASSISTANT, (TextBlock("next"),))).action is Action.CONTINUE


def test_the_agents_own_compaction_restarts_the_turn_count() -> None:
    m = Monitor("claude-sonnet-4", P)
    m.observe(user("go"))
    for i in range(31):
        m.observe(Message(Role.ASSISTANT, (TextBlock(f"step {i}"),)))
    assert m.last is not None and m.last.rule is Rule.TOO_MANY_TURNS
    m.observe(Message(Role.USER, (CompactionSummary("summary of the work so far"),)))
    assert m.counters.steps == 0
    actions = [m.observe(Message(Role.ASSISTANT, (TextBlock(f"more {i}"),))).action for i in range(31)]
    assert actions[29] is Action.CONTINUE and actions[30] is Action.COMPRESS_HISTORY


def test_a_risk_warning_names_what_drives_the_score() -> None:
    model = RiskModel(
        features=("output_tokens", "edits", "hedges"),
        weights=(1.0, -1.0, 0.5),
        bias=-6.0,
        mean=(0.0, 0.0, 0.0),
        scale=(1.0, 1.0, 1.0),
        log_features=frozenset({"output_tokens", "edits"}),
    )
    m = Monitor("claude-sonnet-4", Profile(risk=model))
    m.observe(user("go"))
    quiet = m.observe(Message(Role.ASSISTANT, (TextBlock("ok"),), usage=Usage(output_tokens=20)))
    assert quiet.action is Action.CONTINUE and quiet.risk is not None and quiet.risk < 0.5
    a = m.observe(Message(Role.ASSISTANT, (TextBlock("but maybe"),), usage=Usage(output_tokens=5_000)))
    assert a.rule is Rule.WARNING and a.risk is not None and a.risk >= 0.5
    drivers = a.reasons[-1]
    # log1p(5020) ~ 8.52 from output tokens, then hedges (2 words over 2 turns) 0.5; edits add nothing
    assert drivers.startswith("risk driven by: output tokens +8.52, hedges +0.50")
    assert "edits" not in drivers


def test_assessment_is_explainable_and_serialisable() -> None:
    m = Monitor("claude-sonnet-4", P)
    m.observe(user("go"))
    a = m.observe(act(0, fill=100_000))
    d = a.to_dict()
    assert d["zone"] == "yellow" and d["action"] == "warn" and d["rule"] == "warning"
    assert set(d["signals"]) >= {"pressure", "drift", "failure_rate", "repeated_calls", "verification_gap"}
    assert all("evidence" in s and "detail" in s for s in d["signals"].values())
    json.dumps(d)


def _session(n_turns: int) -> Session:
    msgs: list[Message] = [user("task")]
    for i in range(n_turns):
        msgs += [act(i), res(i)]
    return Session(path="x", format=Format.OPENAI_CHAT, messages=tuple(msgs))


def test_cut_index_and_upto() -> None:
    s = _session(8)
    assert cut_index(s, None) == 17
    assert cut_index(s, 0.5) == 9  # 4 turns and their results
    assert cut_index(s, 0.01) == 3
    a = Monitor(None, P).observe_session(s, upto=0.5)
    assert a.turn == 4 and a.index == 8


def test_import_is_cheap() -> None:
    code = "import sys, ctxhealth.monitor; print(sorted(m for m in ('click', 'orjson') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------- real data


def test_real_mini_swe_fill_is_the_reported_prompt(mini_swe_data: Path) -> None:
    from ctxhealth.sources import read_session

    path = sorted((mini_swe_data / "trajs").glob("*/*.traj.json"))[0]
    raw = json.loads(path.read_text())
    expected = [
        m["extra"]["response"]["usage"]["prompt_tokens"] for m in raw["messages"] if m["role"] == "assistant"
    ]
    m = Monitor(None, P)
    got = [a.fill for a in m.iter_session(read_session(path)) if a.fill_source is FillSource.REPORTED]
    got_turns = []
    last_turn = 0
    m2 = Monitor(None, P)
    for a in m2.iter_session(read_session(path)):
        if a.turn != last_turn:
            got_turns.append(a.fill)
            last_turn = a.turn
    assert got_turns == expected
    assert max(got) == max(expected)


def _raw_peak(path: Path) -> int:
    peak = 0
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("type") != "assistant" or obj.get("isSidechain"):
            continue
        u = obj.get("message", {}).get("usage") or {}
        fill = (
            u.get("input_tokens", 0)
            + u.get("cache_read_input_tokens", 0)
            + u.get("cache_creation_input_tokens", 0)
        )
        peak = max(peak, fill)
    return peak


def test_real_claude_code_sessions_walk_the_tree_with_breaker_and_cooldown(claude_code_data: Path) -> None:
    from ctxhealth.sources import read_session

    path = next(claude_code_data.rglob("f67ab274*.jsonl"))
    session = read_session(path)
    m = Monitor(session.model, P)
    rules: set[Rule] = set()
    cooldown_turns: list[Action] = []
    pending_cooldown = 0
    last_turn = 0
    reported_peak = 0
    for a in m.iter_session(session):
        rules.add(a.rule)
        if session.messages[a.index].role is Role.ASSISTANT:
            reported_peak = max(reported_peak, a.fill)
        if a.turn != last_turn and pending_cooldown:
            cooldown_turns.append(a.action)
            pending_cooldown -= 1
        last_turn = a.turn
        if a.action in (Action.RESTART, Action.TRUNCATE, Action.COMPRESS_HISTORY):
            m.record_recovery(a.action)
            if a.action is Action.RESTART:
                pending_cooldown = 3
        if a.rule is Rule.COMPACT_ZONE:
            assert 120_000 <= a.fill < 180_000 or a.base_zone.value == "orange"
    assert reported_peak == _raw_peak(path)
    assert m.counters.restarts <= 3
    assert {Rule.COMPACT_ZONE, Rule.REPEATED_TRUNCATION, Rule.COOLDOWN}.issubset(rules)
    assert m.counters.restarts >= 1
    assert cooldown_turns and all(x is Action.CONTINUE for x in cooldown_turns)


def test_real_sessions_all_assess_without_error(claude_code_data: Path) -> None:
    from ctxhealth.sources import read_sessions

    count = 0
    for session in read_sessions([str(claude_code_data)]):
        a = Monitor(session.model).observe_session(session)
        assert 0.0 <= (a.risk or 0.0) <= 1.0
        assert a.reasons
        count += 1
    assert count >= 9


@pytest.mark.parametrize("upto", [0.25, 0.5])
def test_real_upto_sees_only_a_prefix(mini_swe_data: Path, upto: float) -> None:
    from ctxhealth.sources import read_session

    path = sorted((mini_swe_data / "trajs").glob("*/*.traj.json"))[1]
    session = read_session(path)
    a = Monitor(None, P).observe_session(session, upto=upto)
    turns = session.assistant_turns
    assert a.turn == -(-int(upto * 100) * turns // 100)


def test_state_stays_bounded_on_a_long_run() -> None:
    m = Monitor("gpt-4.1", P)
    m.observe(user("keep the parser green"))
    for i in range(3_000):
        m.observe(
            Message(
                Role.ASSISTANT,
                (
                    TextBlock(f"Attempt {i}: wait, that was wrong; retry file f{i}.py"),
                    ToolCall(f"c{i}", "bash", {"command": f"sed -i 's/a{i}/b{i}/' f{i}.py && cat f{i}.py"}),
                ),
                usage=Usage(input_tokens=1_000 + i * 300, output_tokens=10),
            )
        )
        m.observe(res(i, code=i % 2))
    rep, fail, ind = m.repetition, m.failures, m.indicators
    assert len(rep.seen_calls) <= 128 and len(rep.changes) <= 128 and len(rep.edit_turns) <= 128
    assert len(fail.window) <= P.indicator_window and len(fail.mistakes) <= 32
    assert len(ind.sentences) <= 512 and len(ind.contradictions) <= 256
    assert m.drift._chars <= P.drift_window_chars
    assert len(m._events._pending) <= 256
    assert m.turn == 3_000 and 0 <= m.pressure.peak - (1_000 + 2_999 * 300) < 1_000


def test_real_transcripts_reach_every_branch(claude_code_data: Path, mini_swe_data: Path) -> None:
    """Every rule of the tree fires on real runs (compact tier on the second pass, so the hard limit is
    reachable), recoveries recorded as a host would; breaker and cooldown hold throughout."""
    from ctxhealth.sources import read_sessions

    paths = [str(claude_code_data), *map(str, sorted((mini_swe_data / "trajs").glob("*/*.traj.json"))[:12])]
    rules: set[Rule] = set()
    breaker = 0
    for model in (None, "claude-haiku-4"):
        for session in read_sessions(paths):
            m = Monitor(model or session.model)
            cooldown_left = 0
            for a in m.iter_session(session):
                rules.add(a.rule)
                if session.messages[a.index].role is Role.ASSISTANT and cooldown_left:
                    assert a.action is Action.CONTINUE
                    cooldown_left -= 1
                if a.rule is Rule.HARD_LIMIT and model:
                    assert a.fill >= 50_000 or a.zone.level >= 3  # haiku: compact tier, hard limit 50K
                if "circuit breaker" in " ".join(a.reasons):
                    breaker += 1
                    assert a.action is Action.TRUNCATE and m.counters.restarts == 3
                # the first pass records restarts only (so critical pressure is reached), the second
                # truncations too (so repeated truncations escalate)
                if a.action is Action.RESTART or (model and a.action is Action.TRUNCATE):
                    m.record_recovery(a.action)
                    if a.action is Action.RESTART:
                        cooldown_left = 3
    # the real runs keep their prompt cache warm: the cache rule is shown on a constructed session; the
    # same mistake repeated too (its one real instance was three different LaTeX failures sharing a last
    # output line, which is no error signature: test_signals_detectors covers the rule)
    assert rules == set(Rule) - {Rule.CACHE_MISSES, Rule.SAME_MISTAKE}
    assert breaker > 0


def test_prompt_cache_misses_reach_the_decision() -> None:
    """A session that had a cache hit, then keeps missing the cache, gets the cache-misses warning
    with the response indices as evidence; a warm cache again clears it."""
    msgs = [Message(Role.USER, (TextBlock("Fix the parser."),))]
    reads = [4_000, 0, 0, 0, 0, 0, 4_500]
    for t, read in enumerate(reads):
        usage = Usage(input_tokens=5_000 - read, cache_read_tokens=read, output_tokens=20)
        msgs.append(Message(Role.ASSISTANT, (TextBlock(f"step {t}"),), usage=usage))
    m = Monitor("claude-sonnet-4")
    out = [m.observe(msg) for msg in msgs]
    assert [a.rule for a in out[1:6]] == [Rule.HEALTHY] * 5
    assert out[6].rule is Rule.CACHE_MISSES and out[6].action is Action.WARN
    assert "prompt cache: 0% hit rate" in out[6].reasons[0]
    assert out[6].signals["cache_hits"].fired and out[6].signals["cache_hits"].evidence == (2, 6)
    assert out[7].rule is Rule.HEALTHY and not out[7].signals["cache_hits"].fired


def test_snapshot_of_builds_the_same_snapshot_as_the_constructor() -> None:

    from ctxhealth.policy import Snapshot, snapshot_of
    from ctxhealth.signals.pressure import Zone

    values = (Zone.ORANGE, 0.71, 123_456, 0.8, 0.5, 6, 0.12, True, 2, 3, 1, 0.42, 0.25, 4)
    built = snapshot_of(*values)
    assert built == Snapshot(*values)
    assert tuple(getattr(built, f.name) for f in msgspec.structs.fields(Snapshot)) == values


def test_observe_takes_a_message_dict_as_the_readme_shows() -> None:
    m = Monitor(model="gpt-4o")
    a = m.observe({"role": "user", "content": "Fix the failing parser test in src/parser.py."})
    assert a.turn == 0 and m.index == 0
    reply = {
        "role": "assistant",
        "content": "Reading it.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "src/parser.py"}'},
            }
        ],
    }
    assert m.observe(reply).turn == 1
    blocks = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]}
    m.observe(blocks)
    assert m.index == 2 and m.failures.window  # the tool result was read as one
    with pytest.raises(UsageError, match="not a message"):
        m.observe({"content": "no role"})


def test_a_pending_prompt_counts() -> None:
    """A message list saved just before sending: its last message, a huge tool result, is part of the
    prompt the next response will see, so it decides (it is not the 12 tokens of the last response)."""
    messages = [
        {"role": "user", "content": "Fix the parser bug in src/parser.py."},
        {
            "role": "assistant",
            "content": "Reading the log.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "cat log"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "word " * 150_000},
    ]
    from ctxhealth.sources.messages import read_messages

    m = Monitor(model="gpt-4o")
    *head, last = read_messages(messages, format="openai").messages
    for message in head:
        m.observe(message)
    a = m.observe(last)
    assert a.fill > 150_000 and a.zone.value != "green" and a.action is not Action.CONTINUE
    assert any("pending prompt" in r for r in a.reasons)
    assert m.pressure.peak < 1_000  # the series of response fills is unchanged: no response saw it yet
