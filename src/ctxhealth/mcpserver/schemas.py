"""The JSON schemas of the MCP tools: what each takes (``inputSchema``) and what its structured
result holds (``outputSchema``), with the descriptions a model reads to decide when to call it.

Plain data, no MCP import: the server hands these to the SDK, tests validate results against them.
"""

from __future__ import annotations

from typing import Any

from ctxhealth.mcpserver.tools import RECOVERY_STRATEGIES, TASK_STATE_ACTIONS

__all__ = ["TOOLS", "ToolSpec"]

ToolSpec = dict[str, Any]

_SESSION_ARGS: dict[str, Any] = {
    "path": {
        "type": "string",
        "description": "A transcript file to assess instead of your own session (absolute, or relative "
        "to your working directory).",
    },
    "session_id": {
        "type": "string",
        "description": "A session id to assess instead of your own session (Claude Code, Codex or "
        "Gemini CLI).",
    },
}

_NUMBER = {"type": ["number", "null"]}
_STRING = {"type": ["string", "null"]}
_OBJECT: dict[str, Any] = {"type": "object"}


def _input(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {**properties, **_SESSION_ARGS}, "additionalProperties": False}


def _output(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


TOOLS: dict[str, ToolSpec] = {
    "context_health": {
        "title": "Context health",
        "description": (
            "Assess your own context window now: zone (green/yellow/orange/red/critical), fill of "
            "the usable window, pressure 0..1, task drift, failure spiral, early-warning indicators "
            "and the recommended action with its reasons (continue, warn, reanchor, "
            "clear_tool_results, compress_history, truncate, restart, halt). Call it every few tool "
            "calls on long or multi-step work, and before any large read or edit."
        ),
        "input": _input({}),
        "output": _output(
            {
                "schema_version": {"type": "integer"},
                "path": {"type": "string"},
                "session_id": _STRING,
                "model": {"type": "string"},
                "turns": {"type": "integer"},
                "window": {"type": "integer"},
                "usable_window": {"type": "integer"},
                "fill": _OBJECT,
                "compactions": {"type": "array"},
                "tool_calls": {"type": "integer"},
                "tool_errors": {"type": "integer"},
                "healthy": {"type": "boolean"},
                "zone": {"type": "string"},
                "pressure": {"type": "number"},
                "risk": _NUMBER,
                "action": {"type": "string"},
                "reasons": {"type": "array", "items": {"type": "string"}},
                "signals": _OBJECT,
            },
            ["schema_version", "path", "fill", "healthy", "zone", "pressure", "action", "reasons"],
        ),
    },
    "checkpoint": {
        "title": "Write a checkpoint",
        "description": (
            "Write a durable checkpoint of your session now (original task, tools used, key findings, "
            "last progress; secrets redacted) as JSON and markdown under the task-state root, and "
            "return its paths and text. Call it before a compaction or restart, when the zone turns "
            "orange or worse, and after finishing a major step."
        ),
        "input": _input(
            {
                "budget_tokens": {
                    "type": "integer",
                    "minimum": 50,
                    "default": 500,
                    "description": "Token budget of the checkpoint.",
                }
            }
        ),
        "output": _output(
            {
                "schema_version": {"type": "integer"},
                "json_path": {"type": "string"},
                "markdown_path": {"type": "string"},
                "session_id": _STRING,
                "tokens": {"type": "integer"},
                "budget_tokens": {"type": "integer"},
                "over_budget": {"type": "boolean"},
                "markdown": {"type": "string"},
            },
            ["json_path", "markdown_path", "tokens", "budget_tokens", "markdown"],
        ),
    },
    "task_state": {
        "title": "Durable task state",
        "description": (
            "Read or write your durable task state (goal, current_phase, next_action, last_action, "
            "constraints, decisions, completed steps, failed attempts, blockers, artifacts). "
            "action=status reads it; action=ensure starts it (with goal) or repairs its summary; "
            "action=update passes the pressure gate before a major action: it applies `update`, "
            "checkpoints and summarises when needed, and at critical pressure halts. The result's "
            "`signal` is STATUS:OK / INITIALISED (go on), STATUS:COMPLETE (the task is done: "
            "next_action DONE), STATUS:HALT_CONTEXT_LIMIT (stop, tell the user, wait for an explicit "
            "override), STATUS:MISSING_STATE / INVALID_STATE / FOREIGN_STATE (fix the state first)."
        ),
        "input": _input(
            {
                "action": {"type": "string", "enum": list(TASK_STATE_ACTIONS), "default": "status"},
                "goal": {"type": "string", "description": "With action=ensure: the goal of a new task."},
                "update": {
                    "type": "object",
                    "description": "With action=update: state fields to change, e.g. "
                    '{"current_phase": "tests", "next_action": "run pytest", '
                    '"last_action": {"summary": "fixed parser", "outcome": "success"}}.',
                },
                "pressure": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "With action=update: context pressure 0..1 (default: your session's).",
                },
                "turn": {"type": "integer", "minimum": 1, "description": "1-based turn number."},
                "action_changed_state": {
                    "type": "boolean",
                    "description": "The last action changed files or state: checkpoint now.",
                },
                "phase_or_goal_changed": {
                    "type": "boolean",
                    "description": "The phase or goal changed: write a fresh summary.",
                },
            }
        ),
        "output": _output(
            {
                "schema_version": {"type": "integer"},
                "status": {"type": "string"},
                "signal": {"type": "string"},
                "may_continue": {"type": "boolean"},
                "root": {"type": "string"},
                "detail": {"type": "string"},
                "hint": {"type": "string"},
                "state": {"type": ["object", "null"]},
                "zone": {"type": "string"},
                "pressure": _NUMBER,
                "halted": {"type": "boolean"},
                "reasons": {"type": "array", "items": {"type": "string"}},
                "checkpoint": _STRING,
                "summary": _STRING,
            },
            ["schema_version", "status", "signal", "may_continue", "root", "detail"],
        ),
    },
    "recovery_plan": {
        "title": "Recovery plan",
        "description": (
            "What a recovery would keep of your live context, within a token budget and your model's "
            "usable window: for truncate (system prompt, original request, a checkpoint, the last "
            "exchanges) and restart (request + checkpoint), also reanchor and clear if asked, the "
            "tokens and messages before and after and the opening of each kept message, plus the "
            "strategy your assessment recommends. Nothing is changed: you decide whether to "
            "restart, compact or go on."
        ),
        "input": _input(
            {
                "budget_tokens": {"type": "integer", "minimum": 1, "description": "Hard token budget."},
                "strategies": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(RECOVERY_STRATEGIES)},
                    "description": "Strategies to plan (default: truncate and restart).",
                },
            }
        ),
        "output": _output(
            {
                "schema_version": {"type": "integer"},
                "path": {"type": "string"},
                "session_id": _STRING,
                "usable_window": {"type": "integer"},
                "budget_tokens": {"type": ["integer", "null"]},
                "decision": _OBJECT,
                "recommended": _STRING,
                "plans": {"type": "array", "items": _OBJECT},
            },
            ["schema_version", "path", "decision", "plans"],
        ),
    },
}
"""Tool name -> title, description, input schema, output schema."""
