"""Waste of a session built here: each kind counted as tokens x the later requests that re-sent them."""

from __future__ import annotations

import pytest

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.audit.waste import audit_waste
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
from ctxhealth.recovery.clear import ClearConfig, ClearTrigger
from ctxhealth.recovery.compress import compress_history


def assistant(text: str, *calls: ToolCall, prompt: int = 1_000) -> Message:
    return Message(Role.ASSISTANT, (TextBlock(text), *calls), usage=Usage(input_tokens=prompt))


def result(call_id: str, text: str) -> Message:
    return Message(Role.USER, (ToolResult(call_id, text),))


def read(call_id: str, path: str) -> ToolCall:
    return ToolCall(call_id, "Read", {"file_path": path})


def test_each_kind_of_waste_on_a_small_session() -> None:
    listing = "config_loader.py\nsettings_v2.yaml"  # 33 chars -> 9 tokens; its words are never used
    source_v1 = "def parse_config(path):\n    return load_yaml(path)\n"  # 51 chars -> 13 tokens
    source_v2 = "def parse_config(path):\n    return load_yaml(path, strict=True)\n"
    paragraph = "The quick brown fox jumps over the lazy dog while the parser reads every line twice."
    messages = (
        Message(Role.USER, (TextBlock("Fix parse_config"),)),
        assistant("Listing.", ToolCall("c1", "Bash", {"command": "ls"})),  # 1st request
        result("c1", listing),
        assistant("Reading.", read("c2", "src/app.py")),  # 2nd
        result("c2", source_v1),
        assistant("Again, after an edit: parse_config and load_yaml.", read("c3", "src/app.py")),  # 3rd
        result("c3", source_v2 + "\n\n" + paragraph),  # no new distinctive word: not judged
        assistant("Done with parse_config."),  # 4th
        Message(Role.USER, (TextBlock(paragraph),)),
        assistant("ok"),  # 5th
    )
    session = Session("s.jsonl", Format.CLAUDE_CODE, messages)
    prices = ModelRegistry.default().lookup("claude-sonnet-4").prices
    waste = audit_waste(session, prices)
    # The listing (9 tokens) is re-sent with requests 2-5 and never used: 4 x 9.
    assert waste.unused_tool_output == 9 * 4
    # The first read of src/app.py (13 tokens) is stale from the second read on: requests 4 and 5.
    assert waste.stale_reads == 13 * 2
    # The paragraph (84 chars -> 21 tokens) was already in the context when the user pasted it: request 5.
    assert waste.duplicate_paragraphs == 21 * 1
    assert waste.clearing_savings == 0  # no prompt reached 100K tokens
    assert prices is not None
    assert waste.usd_floor == pytest.approx((36 + 26 + 21) * prices.cache_read / 1e6)


def test_clearing_savings_and_a_compaction_resets_what_is_re_sent() -> None:
    big = "x" * 4_000  # 1,000 tokens
    messages = [Message(Role.USER, (TextBlock("go"),))]
    for n in range(5):
        messages += [
            assistant(f"step {n}", ToolCall(f"c{n}", "Bash", {"command": "make"})),
            result(f"c{n}", big),
        ]
    messages += [assistant("big prompt", prompt=150_000)]
    messages += [Message(Role.USER, (CompactionSummary("summary"),)), assistant("after", prompt=150_000)]
    session = Session("s.jsonl", Format.CLAUDE_CODE, tuple(messages))
    waste = audit_waste(session, None, ClearConfig(trigger=ClearTrigger(value=100_000), keep_tool_uses=3))
    # At the 150K request, 5 results are in the context; clearing keeps the last 3: 2 x 1,000 saved.
    # After the compaction no tool result is left to clear.
    assert waste.clearing_savings == 2_000
    assert waste.usd_floor is None


def test_compression_savings_at_the_first_request_past_the_gate() -> None:
    big = "y" * 12_000  # a 3,000-token tool output: light compression shortens outputs over 2K tokens
    messages = [Message(Role.USER, (TextBlock("go"),))]
    for n in range(8):
        prompt = 10_000 * (n + 1)
        messages += [assistant(f"step {n}", ToolCall(f"c{n}", "Bash", {"command": "make"}), prompt=prompt)]
        messages += [result(f"c{n}", big)]
    messages += [assistant("last", prompt=90_000)]
    session = Session("s.jsonl", Format.CLAUDE_CODE, tuple(messages))
    assert audit_waste(session, None).compression_savings == 0  # no gate given
    waste = audit_waste(session, None, compress_at=60_000)
    # The gate is crossed at the 6th response (60K), after 5 turns (the light level: outputs over 2K
    # tokens shortened); compressing once saves the same tokens in that request and the 3 after it.
    gate = next(i for i, m in enumerate(messages) if m.usage is not None and m.usage.input_tokens >= 60_000)
    _, report = compress_history(
        Session("s.jsonl", Format.CLAUDE_CODE, tuple(messages[:gate])), encoding=None
    )
    assert report.tokens_removed > 0
    assert report.notes == ("light (5 turns)",)
    assert waste.compression_savings == report.tokens_removed * 4
