"""Message content and usage of a decoded Claude Code line as model values.

Owns the lenient path's fallback to the shared Anthropic block parser (the typed path's blocks
are converted on decoding, in :mod:`.typed`) and the clamping of usage counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec.structs import replace

from ctxhealth.model import Block, Usage
from ctxhealth.sources.anthropic_messages import parse_blocks
from ctxhealth.sources.lines import WarningSink, make_usage

if TYPE_CHECKING:
    from ctxhealth.sources.claude_code.schema import _Msg, _Node, _Usage


def _blocks(node: _Node, message: _Msg, sink: WarningSink) -> list[Block]:
    """The message's content as model blocks (already converted on the typed path).

    The list is the draft's own from here on (a merged response extends it): every node is
    built at most once, and nodes are dropped after the read.
    """
    blocks = message.blocks
    if blocks is None:
        return parse_blocks(message.content, sink, node.line)
    return blocks


def _usage(raw: _Usage | None) -> Usage | None:
    if raw is None:
        return None
    created = raw.cache_creation_input_tokens
    read = raw.cache_read_input_tokens
    split = raw.cache_creation
    one_hour = 0 if split is None else split.ephemeral_1h_input_tokens
    created = created if created > 0 else 0
    output = raw.output_tokens if raw.output_tokens > 0 else 0
    usage = make_usage(
        raw.input_tokens if raw.input_tokens > 0 else 0,
        output,
        created,
        read if read > 0 else 0,
        min(one_hour, created) if one_hour > 0 else 0,
    )
    details = raw.output_tokens_details
    if details is not None and details.thinking_tokens > 0:
        # 2.1: the thinking part of the output (already in output_tokens)
        usage = replace(usage, reasoning_tokens=min(details.thinking_tokens, output))
    return usage
