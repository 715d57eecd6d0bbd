"""The agents' own context management on the wire: which agent sent a request, which session it
belongs to by the agent's own word, and whether the request is the agent compacting itself.

An agent that compacts its own history sends a request for it, and the guard must leave it alone
(a rewrite or a note there fights the harness: Codex's remote compaction fails when its trigger
item is dropped, and a replaced summarisation prompt becomes the agent's stored summary). Found in
the requests the real CLIs send:

* Codex CLI, default OpenAI provider: the ``input`` ends with an item ``{"type":
  "compaction_trigger"}`` (remote compaction); with a custom provider, the last user item is its
  summarisation prompt, which opens with "You are performing a CONTEXT CHECKPOINT COMPACTION".
* Claude Code: the last user message asks "Your task is to create a detailed summary of the
  conversation so far".
* Gemini CLI: the last user part asks to "generate the <state_snapshot>" (its compression prompt
  is the system instruction, which names ``<state_snapshot>``).

Sessions by the agent's own word, first match wins: ``x-claude-code-session-id`` (Claude Code since
2.1.86), ``session-id`` / ``session_id`` and ``thread-id`` (Codex CLI), then the body's
``prompt_cache_key`` (Codex sets it to its conversation id), then Gemini CLI's environment text (it
sends no session id with an API key: the first part of its first turn, ``<session_context>`` with the
date, the platform and the project's folders, stays the same across its compressions, while the
directory listing after it may change).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from ctxhealth.sources.gemini_cli import ENVIRONMENT


class Agent(StrEnum):
    """The agents that manage their own context (compact themselves)."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI_CLI = "gemini-cli"


class HarnessRequest(StrEnum):
    """An agent's own context-management request."""

    CODEX_COMPACTION = "codex-compaction"
    CLAUDE_CODE_COMPACTION = "claude-code-compaction"
    GEMINI_SNAPSHOT = "gemini-state-snapshot"


COMPACTION_TRIGGER = "compaction_trigger"
_PROMPTS: tuple[tuple[str, HarnessRequest], ...] = (
    ("context checkpoint compaction", HarnessRequest.CODEX_COMPACTION),
    (
        "your task is to create a detailed summary of the conversation so far",
        HarnessRequest.CLAUDE_CODE_COMPACTION,
    ),
    ("generate the <state_snapshot>", HarnessRequest.GEMINI_SNAPSHOT),
)
_HEAD_MARKS: tuple[tuple[str, HarnessRequest], ...] = (("<state_snapshot>", HarnessRequest.GEMINI_SNAPSHOT),)
SESSION_HEADERS = ("x-claude-code-session-id", "session-id", "session_id", "thread-id")
"""Headers that carry the agent's own session id, in the order they are trusted."""
MAX_ID = 200
_GEMINI_LISTING = "- **Directory Structure:**"


def _text(value: Any) -> str:
    """The text of an item, a content list or a part (every ``text`` field, shallow)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, dict):
        parts = [value[k] for k in ("text", "content", "parts") if k in value]
        return "\n".join(_text(p) for p in parts)
    return ""


def _is_user(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("role") in ("user", None)
        and item.get("type") in (None, "message")
    )


def prompt_at(items: list[Any]) -> tuple[int, HarnessRequest] | None:
    """Where the agent's summarisation prompt is among the last items (others, such as a model
    notice, may follow it), and which it is."""
    for i in range(len(items) - 1, max(-1, len(items) - 4), -1):
        item = items[i]
        if isinstance(item, dict) and item.get("type") == COMPACTION_TRIGGER:
            return i, HarnessRequest.CODEX_COMPACTION
        if _is_user(item):
            text = _text(item).lower()
            for mark, kind in _PROMPTS:
                if mark in text:
                    return i, kind
    return None


def find_harness_request(items: list[Any], head: Any = None) -> HarnessRequest | None:
    """The agent's own context-management request these items end with, or None."""
    found = prompt_at(items)
    if found is not None:
        return found[1]
    if head is not None:
        head_text = _text(head)
        for mark, kind in _HEAD_MARKS:
            if mark in head_text:
                return kind
    return None


def agent_of(headers: Mapping[str, str]) -> Agent | None:
    """The self-compacting agent a request comes from, by its headers (None: another client)."""
    if headers.get("x-claude-code-session-id"):
        return Agent.CLAUDE_CODE
    agent = (headers.get("user-agent") or "").lower()
    originator = (headers.get("originator") or "").lower()
    if agent.startswith("claude-cli") or agent.startswith("claude-code"):
        return Agent.CLAUDE_CODE
    if originator.startswith("codex") or agent.startswith("codex"):
        return Agent.CODEX
    if "geminicli" in agent or "gemini-cli" in agent:
        return Agent.GEMINI_CLI
    return None


def gemini_utility(path: str, headers: Mapping[str, str], items: list[Any], head: Any) -> bool:
    """A Gemini CLI side call: a non-streaming ``generateContent`` (its model router, its next-speaker
    and loop checks; its turns stream) that is not its compression. Its contents are not the chat."""
    return (
        path.rstrip("/").endswith(":generateContent")
        and agent_of(headers) is Agent.GEMINI_CLI
        and find_harness_request(items, head) is None
    )


def agent_session_id(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """The session id the agent itself sends (headers first, then ``prompt_cache_key``)."""
    for name in SESSION_HEADERS:
        value = headers.get(name)
        if value and value.strip():
            return f"{name}={value.strip()[:MAX_ID]}"
    key = body.get("prompt_cache_key")
    if isinstance(key, str) and key.strip():
        return f"prompt_cache_key={key.strip()[:MAX_ID]}"
    return _gemini_context(body.get("contents"))


def _gemini_context(contents: Any) -> str | None:
    """A digest of Gemini CLI's ``<session_context>`` (the first part of the first turn, without its
    directory listing), or None when the request does not open with one."""
    if not isinstance(contents, list) or not contents or not isinstance(contents[0], dict):
        return None
    parts = contents[0].get("parts")
    first = parts[0] if isinstance(parts, list) and parts else None
    text = first.get("text") if isinstance(first, dict) else None
    if not isinstance(text, str) or not text.lstrip().startswith(ENVIRONMENT):
        return None
    stable = text.split(_GEMINI_LISTING, 1)[0]
    return "gemini-session-context=" + hashlib.sha256(stable.encode()).hexdigest()[:24]


def with_instructions(items: list[Any], text: str, note: Any) -> list[Any]:
    """``items`` with ``text`` added for the compaction to keep, leaving the request's shape as the
    agent made it: as an input message just before Codex's trigger item (the trigger stays last);
    else inside the item that holds the agent's summarisation prompt, after it; else by ``note``
    (the adapter's ``add_note``)."""
    found = prompt_at(items)
    if found is None:
        out: list[Any] = note(items, text)
        return out
    i, _ = found
    item = items[i]
    if item.get("type") == COMPACTION_TRIGGER:
        extra = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        return [*items[:i], extra, *items[i:]]
    content = item.get("content")
    if isinstance(content, str):
        content = f"{content}\n\n{text}"
    elif isinstance(content, list):
        kinds = [p.get("type") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        content = [*content, {"type": kinds[-1] if kinds else "text", "text": text}]
    else:
        out = note(items, text)
        return out
    return [*items[:i], {**item, "content": content}, *items[i + 1 :]]
