"""The model APIs on the wire: what a request body holds and how to rewrite it, per API style.

One adapter per API (:class:`~ctxhealth.integrations.wire.base.WireAdapter`): Anthropic Messages
(``POST /v1/messages``), OpenAI Chat Completions (``POST /v1/chat/completions``), OpenAI Responses
(``POST /v1/responses``) and Gemini (``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent``). An adapter splits a request body into its conversation items (the unit the
prefix hash runs over), turns items into ctxhealth :class:`~ctxhealth.model.Message` values, writes
recovered messages back into a body, adds a note in the API's own shape, and words an API-shaped
error. :mod:`.usage` reads the provider's token usage out of a response, streamed or not.
"""

from __future__ import annotations

from ctxhealth.integrations.wire.anthropic import AnthropicMessages
from ctxhealth.integrations.wire.base import ApiStyle, WireAdapter
from ctxhealth.integrations.wire.gemini import GeminiContents, is_generate_path
from ctxhealth.integrations.wire.openai_chat import OpenAIChat
from ctxhealth.integrations.wire.openai_responses import OpenAIResponses
from ctxhealth.integrations.wire.usage import ResponseFacts, UsageTap

__all__ = [
    "ADAPTERS",
    "ApiStyle",
    "ResponseFacts",
    "UsageTap",
    "WireAdapter",
    "adapter_for_path",
]

ADAPTERS: dict[ApiStyle, WireAdapter] = {
    ApiStyle.ANTHROPIC_MESSAGES: AnthropicMessages(),
    ApiStyle.OPENAI_CHAT: OpenAIChat(),
    ApiStyle.OPENAI_RESPONSES: OpenAIResponses(),
    ApiStyle.GEMINI: GeminiContents(),
}

_PATHS = {
    "/v1/messages": ApiStyle.ANTHROPIC_MESSAGES,
    "/v1/chat/completions": ApiStyle.OPENAI_CHAT,
    "/v1/responses": ApiStyle.OPENAI_RESPONSES,
}


def adapter_for_path(path: str) -> WireAdapter | None:
    """The adapter for a request path (``/v1/messages`` ...; a ``/openai`` or other prefix before
    ``/v1`` is allowed), or None for anything that is forwarded untouched."""
    if is_generate_path(path):
        return ADAPTERS[ApiStyle.GEMINI]
    cut = path.find("/v1/")
    if cut < 0:
        return None
    style = _PATHS.get(path[cut:].rstrip("/"))
    return None if style is None else ADAPTERS[style]
