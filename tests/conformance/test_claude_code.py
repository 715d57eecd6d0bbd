"""The real Claude Code CLI against the fake Anthropic API: what ctxhealth reads from its transcripts is what
the server saw (turns, fill per turn, compactions, cost), and what the installed hooks did.

Each scenario runs the CLI in a scratch HOME and project (``claude_harness``) and compares ``ctxhealth check
--json`` on the transcript with the server's log (``fake_anthropic``), which is the truth. Set
``CTXHEALTH_RECORD_FIXTURES=1`` to copy each scenario's transcript (paths made neutral) to
``tests/fixtures/agents/claude-code-<version>/``, where ``tests/test_claude_code_fixtures.py`` reads them
without the CLI.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxhealth.accounting.cost import usage_cost
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.model import Usage
from ctxhealth.sources.claude_code.session import parse

from .agents import agent_or_skip, agent_version
from .claude_harness import CTXHEALTH_NOTE, ClaudeBox, TmuxClaude, ctxhealth, hooks_fired, injected, lines
from .fake_anthropic import Exchange, FakeAnthropic

pytestmark = pytest.mark.conformance

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def box(tmp_path: Path, fake: FakeAnthropic) -> Iterator[ClaudeBox]:
    scratch = ClaudeBox(tmp_path, fake, agent_or_skip("claude"))
    yield scratch
    scratch.close()


def check(path: Path) -> dict[str, Any]:
    done = ctxhealth(["check", "--json", str(path)])
    assert done.returncode in (0, 1), done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def main_requests(fake: FakeAnthropic) -> list[Exchange]:
    return fake.messages("main")


def record(box: ClaudeBox, name: str) -> None:
    """Keep this run's transcript as a regression fixture (only under CTXHEALTH_RECORD_FIXTURES=1)."""
    if os.environ.get("CTXHEALTH_RECORD_FIXTURES") != "1":
        return
    version = agent_version(box.cli).split()[0]
    folder = FIXTURES / f"claude-code-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    neutral = {str(box.home.parent): "/tmp/conformance", sys.executable: "python"}
    main = box.transcript()
    for source in [main, *box.subagent_files()]:
        text = source.read_text("utf-8")
        for old, new in neutral.items():
            text = text.replace(old, new)
        target = folder / f"{name}.jsonl" if source == main else folder / name / "subagents" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")
    truth = {
        "requests": [e.summary() for e in box.server.messages()],
        "cli": agent_version(box.cli),
    }
    (folder / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n", "utf-8")


def test_print_mode_turns_and_fill_match_the_server(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.print_mode("BASH: echo hi x2")
    main = main_requests(fake)
    assert len(main) == 3  # two tool calls, then the answer
    report = check(box.transcript())
    assert report["format"] == "claude-code"
    assert report["turns"] == len(main)
    assert report["fill"]["source"] == "reported"
    assert report["fill"]["peak"] == max(e.fill for e in main)
    assert report["fill"]["current"] == main[-1].fill
    assert report["tool_calls"] == 2
    assert report["tool_errors"] == 0
    assert report["compactions"] == []
    assert report["warnings"] == []
    record(box, "print")


def test_thinking_is_read_as_reasoning_tokens(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.print_mode("THINK then BASH: echo hi x1")
    main = main_requests(fake)
    assert any(e.usage["thinking_tokens"] for e in main)
    session = parse(box.transcript().read_bytes(), str(box.transcript()))
    reasoning = [m.usage.reasoning_tokens for m in session.messages if m.usage is not None]
    assert reasoning == [e.usage["thinking_tokens"] for e in main]
    record(box, "thinking")


def test_the_cli_sends_its_session_header_and_the_transcript_is_named_after_it(
    box: ClaudeBox, fake: FakeAnthropic
) -> None:
    box.print_mode("hello")
    sessions = {e.session_id for e in fake.messages()}
    assert len(sessions) == 1 and "" not in sessions
    assert box.transcript().stem == sessions.pop()


def test_continue_appends_to_the_same_session(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.print_mode("first question")
    box.print_mode("second question", "--continue")
    main = main_requests(fake)
    assert len(main) == 2
    assert len(box.transcripts()) == 1
    report = check(box.transcript())
    assert report["turns"] == 2
    assert report["fill"]["current"] == main[-1].fill
    assert report["fill"]["peak"] == max(e.fill for e in main)
    record(box, "continue")


def test_cost_state_counts_every_request_the_server_answered(box: ClaudeBox, fake: FakeAnthropic) -> None:
    """Claude Code's own running total (``cost-state``) has the tokens of every request, compaction's too."""
    box.print_mode("hello PAD: 2000")
    box.print_mode("/compact", "--continue")
    states = [line for line in lines(box.transcript()) if line.get("type") == "cost-state"]
    assert states
    usage: dict[str, Any] = states[-1]["modelUsage"]  # type: ignore[assignment]
    (model_usage,) = usage.values()
    served = fake.messages()
    assert model_usage["outputTokens"] == sum(e.usage["output_tokens"] for e in served)
    assert model_usage["cacheReadInputTokens"] == sum(e.usage["cache_read_input_tokens"] for e in served)
    assert model_usage["cacheCreationInputTokens"] == sum(
        e.usage["cache_creation_input_tokens"] for e in served
    )
    assert model_usage["inputTokens"] == sum(e.usage["input_tokens"] for e in served)
    report = check(box.transcript())
    assert report["agent_cost_usd"] == round(float(states[-1]["totalCostUSD"]), 6)  # type: ignore[arg-type]


def test_print_mode_compact_is_one_compaction(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.print_mode("hello PAD: 40000")
    box.print_mode("next", "--continue")  # the long answer is in this prompt
    box.print_mode("/compact", "--continue")
    box.print_mode("after the compaction", "--continue")
    assert len(fake.messages("compact")) == 1
    boundary = [line for line in lines(box.transcript()) if line.get("subtype") == "compact_boundary"]
    assert len(boundary) == 1
    report = check(box.transcript())
    assert len(report["compactions"]) == 1
    main = main_requests(fake)
    assert report["fill"]["current"] == main[-1].fill
    record(box, "compact")


def test_print_mode_compact_after_a_hook_note_is_not_an_abandoned_branch(
    box: ClaudeBox, fake: FakeAnthropic
) -> None:
    """With a SessionStart hook that adds context (ctxhealth's), 2.1.x hangs the ``/compact`` lines off the
    hook's line before the compaction: the compaction and its summary must stay on the thread."""
    box.install_ctxhealth()
    box.print_mode("BASH: echo hi x1")
    box.print_mode("/compact", "--continue")
    assert len(fake.messages("compact")) == 1
    report = check(box.transcript())
    assert len(report["compactions"]) == 1
    assert report["warnings"] == []
    assert report["turns"] == len(main_requests(fake))
    record(box, "compact-after-hook")


def test_autocompact_compacts_for_real(box: ClaudeBox, fake: FakeAnthropic) -> None:
    """``--autocompact 100000``: the CLI compacts by itself once the context passes its threshold."""
    flags = ("--autocompact", "100000")
    box.print_mode("start PAD: 280000", *flags)
    box.print_mode("next", "--continue", *flags)
    box.print_mode("third", "--continue", *flags)
    assert len(fake.messages("compact")) == 1
    boundary = [line for line in lines(box.transcript()) if line.get("subtype") == "compact_boundary"]
    assert [b["compactMetadata"]["trigger"] for b in boundary] == ["auto"]  # type: ignore[index]
    report = check(box.transcript())
    assert len(report["compactions"]) == 1
    main = main_requests(fake)
    assert report["fill"]["peak"] == max(e.fill for e in main)
    assert report["fill"]["current"] == main[-1].fill


def test_subagent(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.print_mode("AGENT: look around")
    assert fake.messages("subagent"), "the CLI started no sub-agent"
    assert any(p.name.endswith(".meta.json") for p in box.subagent_files())
    report = check(box.transcript())
    assert report["turns"] == len(main_requests(fake))
    assert report["sidechains"] == 1
    assert report["warnings"] == []  # the .meta.json beside the sub-agent's transcript is no transcript
    assert report["tool_calls"] == 2  # the Agent call and the sub-agent's Bash
    record(box, "subagent")


def test_a_failing_command_repeated_is_a_spiral(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.print_mode("BASH: false x4")
    report = check(box.transcript())
    assert report["tool_calls"] == 4
    assert report["tool_errors"] == 4
    # `false` prints nothing: no error line, so no "same mistake" signature; the spiral is the failures'
    assert not report["signals"]["same_mistake"]["fired"]
    assert report["signals"]["consecutive_failures"]["fired"]
    assert report["healthy"] is False
    record(box, "failing")


# ---------------------------------------------------------------- through ctxhealth proxy


def test_through_the_proxy_in_observe_mode_the_run_is_the_same(tmp_path: Path) -> None:
    """ANTHROPIC_BASE_URL at ``ctxhealth proxy --mode observe``: the same requests reach the model and the
    same answers come back as without it; the proxy's reported fill is the server's."""
    from proxy_process import ProxyProcess

    cli = agent_or_skip("claude")
    prompt = "BASH: echo hi x2"
    with FakeAnthropic() as direct:
        ClaudeBox(tmp_path / "direct", direct, cli).print_mode(prompt)
    with FakeAnthropic() as fake:
        proxy = ProxyProcess(fake.url, "--mode", "observe", home=tmp_path / "proxy-home")
        try:
            box = ClaudeBox(tmp_path / "proxied", fake, cli)
            box.base_url = proxy.url
            box.print_mode(prompt)
            status = proxy.status()
        finally:
            proxy.stop()
    assert [e.summary()["reply"] for e in fake.messages()] == [
        e.summary()["reply"] for e in direct.messages()
    ]
    assert [e.kind for e in fake.messages()] == [e.kind for e in direct.messages()]
    sessions: list[dict[str, Any]] = status["sessions"]  # type: ignore[assignment]
    (session,) = sessions
    assert session["requests"] == len(fake.messages())
    assert session["reported_fill"] == fake.messages()[-1].fill
    assert check(box.transcript())["turns"] == len(main_requests(fake))


# ---------------------------------------------------------------- with ctxhealth installed


def test_installed_hooks_fire_and_their_notes_reach_the_model(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.install_ctxhealth()
    box.print_mode("BASH: false x4")
    fired = hooks_fired(box)
    events = [h.event for h in fired]
    assert events.count("UserPromptSubmit") == 1
    assert events.count("PostToolUseFailure") == 4
    assert "Stop" in events
    assert all(h.status == 0 for h in fired)
    # the failure-spiral note was injected after the third failure and the model read it from then on
    main = main_requests(fake)
    notes = [injected(e) for e in main]
    assert not any(notes[:3])
    assert any("Failure spiral" in n for n in notes[3])
    # the reader recognises ctxhealth's own notes in the transcript: the ones the model was sent
    session = parse(box.transcript().read_bytes(), str(box.transcript()))
    logged = {note[0] for c in session.injected_context for note in CTXHEALTH_NOTE.finditer(c.text)}
    assert logged == {n for request in notes for n in request}
    assert {c.event for c in session.injected_context} == {"PostToolUseFailure"}


def test_precompact_checkpoint_is_reinjected_after_compact(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.install_ctxhealth()
    box.print_mode("BASH: false x2")
    box.print_mode("/compact", "--continue")
    box.print_mode("go on", "--continue")
    events = [(h.event, h.matcher) for h in hooks_fired(box)]
    assert ("PreCompact", "manual") in events or ("PreCompact", "") in events
    assert ("SessionStart", "compact") in events
    after = main_requests(fake)[-1]
    assert any("Context was compacted" in n for n in injected(after))


def test_resume_is_not_taken_for_a_compaction(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.install_ctxhealth()
    box.print_mode("first question")
    box.print_mode("second question", "--continue")
    events = [(h.event, h.matcher) for h in hooks_fired(box)]
    assert ("SessionStart", "resume") in events
    # nothing at all is injected on a resume within the cache's lifetime
    assert injected(main_requests(fake)[-1]) == []


# ---------------------------------------------------------------- interactive, under tmux


def status_line(screen: str) -> str:
    """ctxhealth's status line on the screen (the line after the prompt box that starts with a zone dot)."""
    found = [
        line.strip() for line in screen.splitlines() if "ctxhealth" in line or line.strip().startswith("●")
    ]
    return found[-1] if found else ""


def short(tokens: int) -> str:
    return f"{tokens / 1000:.1f}K"


def test_interactive_status_line_and_compact(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.install_ctxhealth()
    with TmuxClaude(box, "--dangerously-skip-permissions") as cli:
        cli.wait_for(lambda s: "❯" in s, what="the prompt")
        cli.type("BASH: false x3")
        cli.wait_for(lambda s: "DONE. Answer to" in s, what="the answer")
        main = main_requests(fake)
        assert len(main) == 4
        line = cli.wait_for(lambda s: short(main[-1].fill) in status_line(s), what="the status line's fill")
        assert "spiral" in status_line(line)
        cli.type("/compact")
        cli.wait_for(lambda s: "Compacted" in s, what="the compaction")
        assert len(fake.messages("compact")) == 1
    events = [(h.event, h.matcher) for h in hooks_fired(box)]
    assert ("StatusLine", "") in events
    assert ("PreCompact", "manual") in events
    assert ("SessionStart", "compact") in events
    report = check(box.transcript())
    assert report["turns"] == 4
    assert len(report["compactions"]) == 1
    record(box, "interactive")


def test_a_subagents_failures_are_not_the_main_sessions(box: ClaudeBox, fake: FakeAnthropic) -> None:
    """Three failures inside a sub-agent, then one in the main thread: the main thread is not spiralling."""
    box.install_ctxhealth()
    box.print_mode("AGENT: SUB false x3")
    assert len(fake.messages("subagent")) == 4
    box.print_mode("BASH: false x1", "--continue")
    assert not any("Failure spiral" in note for note in injected(main_requests(fake)[-1]))


def test_right_after_compact_the_hooks_fill_is_what_the_compaction_left(
    box: ClaudeBox, fake: FakeAnthropic
) -> None:
    """``doctor`` (the hooks' account) and ``check`` agree on the fill a ``/compact`` left, far below the
    fill before it, before any response reports a new one."""
    box.install_ctxhealth()
    box.print_mode("hello PAD: 40000")
    box.print_mode("next", "--continue")
    box.print_mode("/compact", "--continue")
    before = main_requests(fake)[-1].fill  # the last prompt before the compaction: the long answer in it
    report = check(box.transcript())
    (compaction,) = report["compactions"]
    assert compaction["post_source"] == "estimated"
    assert report["fill"]["current"] < 0.75 * before
    doctor = ctxhealth(["doctor"], env=box.env())
    said = re.search(r"fill ([\d,]+) tokens", doctor.stdout)
    assert said is not None, doctor.stdout
    # the hooks last read the transcript at SessionStart(compact), before the /compact command's own lines
    assert int(said[1].replace(",", "")) == pytest.approx(report["fill"]["current"], rel=0.05)


def test_cost_ours_is_the_transcripts_and_claude_codes_adds_the_compaction(
    box: ClaudeBox, fake: FakeAnthropic
) -> None:
    """With a model both price tables know: ours is the cost of the requests the transcript keeps, Claude
    Code's own total (cost-state) is the cost of every request the server answered; the gap is the
    compaction's request."""
    model = ("--model", "claude-sonnet-4-5")
    box.print_mode("hello PAD: 4000", *model)
    box.print_mode("/compact", "--continue", *model)
    box.print_mode("after", "--continue", *model)
    registry = ModelRegistry.default()
    prices = registry.lookup("claude-sonnet-4-5").prices
    assert prices is not None

    def cost(exchanges: list[Exchange]) -> float:
        total = 0.0
        for e in exchanges:
            u = e.usage
            usage = Usage(
                u["input_tokens"],
                u["output_tokens"],
                u["cache_creation_input_tokens"],
                u["cache_read_input_tokens"],
            )
            total += usage_cost(usage, prices)
        return total

    report = check(box.transcript())
    assert report["cost_usd"] == pytest.approx(cost(main_requests(fake)), abs=1e-6)
    assert report["agent_cost_usd"] == pytest.approx(cost(fake.messages()), rel=1e-3)
    assert report["cost_not_in_transcript_usd"] == pytest.approx(cost(fake.messages("compact")), rel=1e-2)
    record(box, "cost")


def test_interactive_status_line_right_after_compact(box: ClaudeBox, fake: FakeAnthropic) -> None:
    box.install_ctxhealth()
    with TmuxClaude(box, "--dangerously-skip-permissions") as cli:
        cli.wait_for(lambda s: "❯" in s, what="the prompt")
        for n, prompt in enumerate(("hello PAD: 40000", "next"), 1):
            cli.type(prompt)
            cli.wait_for(
                lambda s, n=n: (
                    len(main_requests(fake)) == n and short(main_requests(fake)[-1].fill) in status_line(s)
                ),
                what=f"answer {n} and its fill on the status line",
            )
        before = main_requests(fake)[-1].fill
        cli.type("/compact")
        cli.wait_for(lambda s: "Compacted" in s, what="the compaction")
        time.sleep(2)  # the status line refreshes after the compaction
        line = status_line(cli.screen())
    left = check(box.transcript())["fill"]["current"]
    assert left < 0.75 * before
    shown = re.search(r"([\d.]+)(K?)/", line)  # "12.4K/1.00M" or "0/1.00M"
    assert shown is not None, line
    assert float(shown[1]) * (1000 if shown[2] else 1) == pytest.approx(left, rel=0.1), line
