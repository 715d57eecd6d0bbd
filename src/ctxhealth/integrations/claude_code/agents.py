"""One hook engine for three agents: payload adapters in, output adapters out.

The engine (:mod:`.hooks`) speaks Claude Code's hook events. Codex CLI and Gemini CLI run hook
commands the same way (one JSON object on stdin, one on stdout, exit 0), with their own event names
and output keys; an :class:`AgentHooks` says, per agent:

* which of its events the engine answers, and as which engine event (``events``): Codex uses Claude
  Code's names (SessionStart ``startup|resume|clear|compact``, PreToolUse, PermissionRequest,
  PostToolUse, PreCompact, PostCompact, UserPromptSubmit, SubagentStop, Stop); Gemini's BeforeAgent
  is the per-turn prompt (UserPromptSubmit), AfterTool the finished call (PostToolUse), PreCompress
  the compaction (PreCompact), AfterAgent the end of a turn (Stop), SessionStart / SessionEnd as
  they are;
* which of its events inject ``hookSpecificOutput.additionalContext`` into the model's context
  (``context_events``): Codex on SessionStart, UserPromptSubmit and PostToolUse; Gemini on
  SessionStart, BeforeAgent (appended to the prompt) and AfterTool (appended to the tool result).
  Elsewhere only ``systemMessage`` (shown to the person) is written. Codex rejects keys its schema
  does not name, so nothing else is ever written;
* whether the agent starts a session again after compacting (``restarts_after_compaction``): Claude
  Code and Codex do (SessionStart ``compact``); Gemini does not, so the checkpoint written at
  PreCompress is given back with the next BeforeAgent.

Payload keys are Claude Code's in all three (``session_id``, ``transcript_path``, ``cwd``,
``prompt``, ``tool_name``, ``tool_input``, ``tool_response``, ``trigger``, ``source``, ``reason``);
Gemini's ``tool_response`` has ``llmContent`` / ``returnDisplay`` / ``error``, read by the payload
parser. Imported by every hook process: nothing here imports more than the payload module.
"""

from __future__ import annotations

import json
from enum import StrEnum

from ctxhealth.integrations.claude_code.payloads import HookEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AGENTS", "Agent", "AgentHooks", "adapt_output", "engine_event", "find_agent"]


class Agent(StrEnum):
    """The agents whose hooks ctxhealth answers."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI = "gemini"


class AgentHooks:
    """How one agent names its hook events and where its output goes (see the module docstring)."""

    __slots__ = ("agent", "context_events", "events", "restarts_after_compaction")

    def __init__(
        self,
        agent: Agent,
        events: dict[str, HookEvent],
        context_events: frozenset[str],
        *,
        restarts_after_compaction: bool,
    ) -> None:
        self.agent = agent
        self.events = events
        self.context_events = context_events
        self.restarts_after_compaction = restarts_after_compaction


_SAME = {e.value: e for e in HookEvent}

AGENTS: dict[Agent, AgentHooks] = {
    Agent.CLAUDE_CODE: AgentHooks(
        Agent.CLAUDE_CODE,
        _SAME,
        frozenset({"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure"}),
        restarts_after_compaction=True,
    ),
    Agent.CODEX: AgentHooks(
        Agent.CODEX,
        {
            name: _SAME[name]
            for name in (
                "SessionStart",
                "UserPromptSubmit",
                "PostToolUse",
                "PreCompact",
                "PostCompact",
                "SubagentStop",
                "Stop",
            )
        },
        frozenset({"SessionStart", "UserPromptSubmit", "PostToolUse"}),
        restarts_after_compaction=True,
    ),
    Agent.GEMINI: AgentHooks(
        Agent.GEMINI,
        {
            "SessionStart": HookEvent.SESSION_START,
            "BeforeAgent": HookEvent.USER_PROMPT_SUBMIT,
            "AfterTool": HookEvent.POST_TOOL_USE,
            "PreCompress": HookEvent.PRE_COMPACT,
            "AfterAgent": HookEvent.STOP,
            "SessionEnd": HookEvent.SESSION_END,
        },
        frozenset({"SessionStart", "BeforeAgent", "AfterTool"}),
        restarts_after_compaction=False,
    ),
}


def find_agent(name: str | None) -> Agent | None:
    """The agent for ``name`` (``claude``, ``claude-code``, ``codex``, ``gemini``); None when unknown."""
    wanted = (name or "claude-code").lower().replace("_", "-")
    if wanted == "claude":
        wanted = Agent.CLAUDE_CODE.value
    for agent in Agent:
        if agent.value == wanted:
            return agent
    return None


def engine_event(agent: Agent, name: str) -> HookEvent | None:
    """The engine event that answers ``agent``'s event ``name`` (exact spelling, or Claude Code's
    case- and separator-insensitive matching for Claude Code); None when the engine has none."""
    hooks = AGENTS[agent]
    found = hooks.events.get(name)
    if found is None:
        wanted = name.replace("-", "").replace("_", "").lower()
        for own, event in hooks.events.items():
            if own.lower() == wanted:
                return event
    return found


def _own_name(agent: Agent, event: HookEvent, asked: str | None) -> str:
    hooks = AGENTS[agent]
    if asked and asked in hooks.events:
        return asked
    for own, mapped in hooks.events.items():
        if mapped is event:
            return own
    return event.value


def adapt_output(agent: Agent, stdout: str, *, event: HookEvent, asked: str | None = None) -> str:
    """The engine's output (Claude Code's JSON, or "") as ``agent`` expects it for its event
    ``asked``: ``additionalContext`` only where that agent injects it, its own event name inside
    ``hookSpecificOutput``; ``systemMessage`` kept. Claude Code's output passes unchanged."""
    if agent is Agent.CLAUDE_CODE or not stdout:
        return stdout
    data: dict[str, Any] = json.loads(stdout)
    name = _own_name(agent, event, asked)
    out: dict[str, Any] = {}
    specific = data.get("hookSpecificOutput")
    context = specific.get("additionalContext") if isinstance(specific, dict) else None
    if isinstance(context, str) and context and name in AGENTS[agent].context_events:
        out["hookSpecificOutput"] = {"hookEventName": name, "additionalContext": context}
    message = data.get("systemMessage")
    if isinstance(message, str) and message:
        out["systemMessage"] = message
    return json.dumps(out, ensure_ascii=False) if out else ""
