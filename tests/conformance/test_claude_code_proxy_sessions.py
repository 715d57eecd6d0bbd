"""Claude Code through the proxy is one session the proxy follows, not one it starts again on every turn.

Claude Code 2.1 puts its cache breakpoint on the newest message of each request, turning that message's
string content into a one-block list to carry the marker, and sends it as a string again on the next
request. The proxy matches a request against the conversation it saw by the items' bytes with the
markers left out; a content written both ways must match too, or every such turn reads as an edited
history: a reset, the conversation observed again from the start without the usage the server reported
(counted by hand, the tool definitions left out). Without a compaction there is no reset here, each
message is observed once, and the fill the proxy reads is the server's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy_process import ProxyProcess

from .agents import agent_or_skip
from .claude_harness import ClaudeBox
from .fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.conformance

PROMPTS = (
    ("start BASH: ls x1", ()),
    ("next BASH: false x3", ("--continue",)),
    ("then say done", ("--continue",)),
)


def test_a_session_without_compaction_is_never_reset(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        proxy = ProxyProcess(fake.url, "--mode", "observe")
        box = ClaudeBox(tmp_path, fake, agent_or_skip("claude"))
        try:
            for prompt, flags in PROMPTS:
                run = box.run(
                    "-p",
                    prompt,
                    "--dangerously-skip-permissions",
                    *flags,
                    extra_env={"ANTHROPIC_BASE_URL": proxy.url},
                )
                assert run.returncode == 0, run.stderr[-500:]
            sessions = proxy.status()["sessions"]
        finally:
            box.close()
            proxy.stop()
    main = fake.messages("main")
    assert isinstance(sessions, list) and len(sessions) == 1
    session = sessions[0]
    assert not fake.messages("compact")
    last = main[-1]
    assert session["requests"] == len(main)
    assert session["resets"] == 0
    # every message of the conversation observed once (the system prompt and the last request's items)
    assert session["observed_messages"] == len(last.body["messages"]) + 1
    # the fill of the latest response is the prompt the server counted for it
    assert session["reported_fill"] == last.fill
