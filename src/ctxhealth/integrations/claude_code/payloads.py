"""Lenient parsers for the JSON Claude Code pipes to status-line and hook commands, and hook output.

Claude Code gives a status-line command one JSON object on stdin (``session_id``, ``transcript_path``,
``model {id, display_name}``, ``cost {total_cost_usd, ...}`` and, in newer versions,
``context_window {context_window_size, used_percentage, current_usage {...}}``), and a hook command one
JSON object with the common keys ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` plus
per-event keys (``trigger`` for PreCompact, ``source`` for SessionStart, ``prompt`` for
UserPromptSubmit, ``tool_name`` / ``tool_input`` / ``tool_response`` / ``tool_use_id`` for PostToolUse,
``error`` for PostToolUseFailure, ``stop_hook_active`` for Stop).

Parsing is lenient: a missing or mistyped key becomes ``None`` (or a neutral default) and the problem
is collected in ``warnings``; only input that is not a JSON object at all raises :class:`InputError`.
Versions differ, so unknown keys are ignored and renamed keys are accepted under both names.

These are small slotted value classes rather than dataclasses on purpose: this module is imported by
every hook and status-line process, and ``dataclasses`` alone costs about as much import time as
Python's own start-up.
"""

from __future__ import annotations

import json
from enum import StrEnum

from ctxhealth.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CompactTrigger",
    "ContextWindow",
    "HookEvent",
    "HookPayload",
    "SessionSource",
    "StatusPayload",
    "find_event",
    "hook_output",
    "parse_hook_payload",
    "parse_status_payload",
]


class HookEvent(StrEnum):
    """The Claude Code hook events ctxhealth handles (names exactly as Claude Code spells them)."""

    PRE_COMPACT = "PreCompact"
    SESSION_START = "SessionStart"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"
    STOP = "Stop"
    SESSION_END = "SessionEnd"
    POST_COMPACT = "PostCompact"
    SUBAGENT_STOP = "SubagentStop"


def find_event(name: str) -> HookEvent | None:
    """The event for ``name``, case- and separator-insensitive (``pre-compact`` works); else None."""
    wanted = name.replace("-", "").replace("_", "").lower()
    for event in HookEvent:
        if event.value.lower() == wanted:
            return event
    return None


class SessionSource(StrEnum):
    """Why a session started (SessionStart ``source``)."""

    STARTUP = "startup"
    RESUME = "resume"
    CLEAR = "clear"
    COMPACT = "compact"
    FORK = "fork"
    UNKNOWN = "unknown"


class CompactTrigger(StrEnum):
    """What started a compaction (PreCompact ``trigger``)."""

    MANUAL = "manual"
    AUTO = "auto"
    UNKNOWN = "unknown"


class _Value:
    """Base of the payload classes: immutable after ``__init__``, compared and shown by their slots."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def _names(self) -> tuple[str, ...]:
        names: tuple[str, ...] = self.__slots__
        return names

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._names())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Value) and type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *(repr(v) for v in self._fields())))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names())
        return f"{type(self).__name__}({inner})"


class _Reader:
    """Typed, lenient access to one JSON object; records what it had to step over."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.data = data
        self.where = where
        self.warnings: list[str] = []

    def _bad(self, key: str, expected: str, value: object) -> None:
        self.warnings.append(f"{self.where}.{key}: expected {expected}, got {type(value).__name__}")

    def text(self, *keys: str) -> str | None:
        for key in keys:
            value = self.data.get(key)
            if value is None:
                continue
            if isinstance(value, str):
                return value
            self._bad(key, "a string", value)
        return None

    def number(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._bad(key, "a number", value)
            return None
        return float(value)

    def integer(self, key: str) -> int | None:
        value = self.number(key)
        return None if value is None else int(value)

    def flag(self, key: str) -> bool:
        value = self.data.get(key)
        if value is None:
            return False
        if isinstance(value, bool):
            return value
        self._bad(key, "true or false", value)
        return False

    def obj(self, key: str) -> _Reader | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, dict):
            child = _Reader(value, f"{self.where}.{key}")
            child.warnings = self.warnings
            return child
        self._bad(key, "an object", value)
        return None


def _load_object(raw: bytes | str, what: str) -> dict[str, Any]:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        raise InputError(
            f"empty {what} on stdin", hint="Claude Code pipes one JSON object; run it from there"
        )
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(
            f"{what} is not valid JSON ({exc})", hint="pipe the JSON object Claude Code sends"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{what} is not a JSON object", hint="pipe the JSON object Claude Code sends")
    return data


class ContextWindow(_Value):
    """The status-line ``context_window`` block (newer Claude Code versions).

    ``used_tokens`` is input + cache creation + cache read of ``current_usage`` (the prompt size of the
    latest response), None when the payload has no ``current_usage`` (no response yet);
    ``cache_read_tokens`` is the part of it read from the prompt cache; ``total_input_tokens`` the
    session's summed input (2.1.x); ``exceeds_200k`` the payload's top-level ``exceeds_200k_tokens``
    (the latest prompt is past 200K: long-context pricing).
    """

    __slots__ = (
        "cache_read_tokens",
        "exceeds_200k",
        "size",
        "total_input_tokens",
        "total_output_tokens",
        "used_percentage",
        "used_tokens",
    )

    size: int | None
    used_percentage: float | None
    used_tokens: int | None
    total_input_tokens: int | None
    total_output_tokens: int | None
    cache_read_tokens: int | None
    exceeds_200k: bool

    def __init__(
        self,
        size: int | None = None,
        used_percentage: float | None = None,
        used_tokens: int | None = None,
        total_input_tokens: int | None = None,
        total_output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        exceeds_200k: bool = False,
    ) -> None:
        self._set("size", size)
        self._set("used_percentage", used_percentage)
        self._set("used_tokens", used_tokens)
        self._set("total_input_tokens", total_input_tokens)
        self._set("total_output_tokens", total_output_tokens)
        self._set("cache_read_tokens", cache_read_tokens)
        self._set("exceeds_200k", exceeds_200k)

    @classmethod
    def _read(cls, r: _Reader, exceeds_200k: bool = False) -> ContextWindow:
        used: int | None = None
        cache_read: int | None = None
        usage = r.obj("current_usage")
        if usage is not None:
            parts = [
                usage.integer(k)
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            ]
            if any(p is not None for p in parts):
                used = sum(p or 0 for p in parts)
                cache_read = parts[2] or 0
        return cls(
            size=r.integer("context_window_size"),
            used_percentage=r.number("used_percentage"),
            used_tokens=used,
            total_input_tokens=r.integer("total_input_tokens"),
            total_output_tokens=r.integer("total_output_tokens"),
            cache_read_tokens=cache_read,
            exceeds_200k=exceeds_200k,
        )


class StatusPayload(_Value):
    """What Claude Code pipes to a status-line command."""

    __slots__ = (
        "context_window",
        "cost_usd",
        "cwd",
        "model_id",
        "model_name",
        "session_id",
        "transcript_path",
        "version",
        "warnings",
    )

    session_id: str | None
    transcript_path: str | None
    cwd: str | None
    model_id: str | None
    model_name: str | None
    cost_usd: float | None
    context_window: ContextWindow | None
    version: str | None
    warnings: tuple[str, ...]

    def __init__(
        self,
        *,
        session_id: str | None = None,
        transcript_path: str | None = None,
        cwd: str | None = None,
        model_id: str | None = None,
        model_name: str | None = None,
        cost_usd: float | None = None,
        context_window: ContextWindow | None = None,
        version: str | None = None,
        warnings: tuple[str, ...] = (),
    ) -> None:
        self._set("session_id", session_id)
        self._set("transcript_path", transcript_path)
        self._set("cwd", cwd)
        self._set("model_id", model_id)
        self._set("model_name", model_name)
        self._set("cost_usd", cost_usd)
        self._set("context_window", context_window)
        self._set("version", version)
        self._set("warnings", warnings)


def parse_status_payload(raw: bytes | str) -> StatusPayload:
    """Parse a status-line payload; raise :class:`InputError` only when it is not a JSON object."""
    r = _Reader(_load_object(raw, "status-line payload"), "payload")
    model_id = model_name = None
    if isinstance(r.data.get("model"), str):  # some versions send the bare id
        model_id = r.data["model"]
    else:
        model = r.obj("model")
        if model is not None:
            model_id = model.text("id")
            model_name = model.text("display_name")
    cost = r.obj("cost")
    window = r.obj("context_window")
    workspace = r.obj("workspace")
    cwd = r.text("cwd") or (workspace.text("current_dir") if workspace is not None else None)
    return StatusPayload(
        session_id=r.text("session_id"),
        transcript_path=r.text("transcript_path"),
        cwd=cwd,
        model_id=model_id,
        model_name=model_name,
        cost_usd=cost.number("total_cost_usd") if cost is not None else None,
        context_window=(
            ContextWindow._read(window, r.flag("exceeds_200k_tokens")) if window is not None else None
        ),
        version=r.text("version"),
        warnings=tuple(r.warnings),
    )


class HookPayload(_Value):
    """What Claude Code pipes to a hook command. Per-event keys are None when absent.

    ``failed`` is True for PostToolUseFailure and for a PostToolUse whose ``tool_response`` says it
    failed (``is_error`` / ``success: false`` / a non-zero exit code), as older versions send those.

    ``response_text`` is the tool response's text (head and tail), so a call is judged failed by the
    one definition (:func:`ctxhealth.failures.is_failure`) whether a hook or the transcript saw it.

    Claude Code 2.1 adds: ``agent_id`` / ``agent_type`` (the hook fired inside a sub-agent: its tool
    calls are not the main session's), ``prompt_id`` (every payload), ``reason`` (SessionEnd),
    ``last_assistant_message`` (Stop, SubagentStop), ``compact_summary`` (PostCompact), and on a
    resumed SessionStart ``seconds_since_last_response`` (``idle_seconds``), ``context_tokens``
    (``resume_tokens``), ``prompt_cache_likely_expired`` (``cache_expired``) and
    ``estimated_cache_write_usd`` (``resume_cache_usd``): what the resume's first request costs.
    """

    __slots__ = (
        "agent_id",
        "agent_type",
        "cache_expired",
        "compact_summary",
        "cwd",
        "error",
        "event",
        "event_name",
        "failed",
        "idle_seconds",
        "last_assistant_message",
        "prompt",
        "prompt_id",
        "reason",
        "response_text",
        "resume_cache_usd",
        "resume_tokens",
        "session_id",
        "source",
        "stop_hook_active",
        "tool_input",
        "tool_name",
        "tool_response",
        "tool_use_id",
        "transcript_path",
        "trigger",
        "warnings",
    )

    event: HookEvent | None
    event_name: str
    session_id: str | None
    transcript_path: str | None
    cwd: str | None
    trigger: CompactTrigger | None
    source: SessionSource | None
    prompt: str | None
    tool_name: str | None
    tool_input: Any
    tool_response: Any
    tool_use_id: str | None
    failed: bool
    error: str | None
    stop_hook_active: bool
    agent_id: str | None
    agent_type: str | None
    prompt_id: str | None
    reason: str | None
    response_text: str
    last_assistant_message: str | None
    compact_summary: str | None
    idle_seconds: float | None
    resume_tokens: int | None
    cache_expired: bool
    resume_cache_usd: float | None
    warnings: tuple[str, ...]

    def __init__(
        self,
        *,
        event: HookEvent | None,
        event_name: str = "",
        session_id: str | None = None,
        transcript_path: str | None = None,
        cwd: str | None = None,
        trigger: CompactTrigger | None = None,
        source: SessionSource | None = None,
        prompt: str | None = None,
        tool_name: str | None = None,
        tool_input: Any = None,
        tool_response: Any = None,
        tool_use_id: str | None = None,
        failed: bool = False,
        error: str | None = None,
        stop_hook_active: bool = False,
        agent_id: str | None = None,
        agent_type: str | None = None,
        prompt_id: str | None = None,
        reason: str | None = None,
        response_text: str = "",
        last_assistant_message: str | None = None,
        compact_summary: str | None = None,
        idle_seconds: float | None = None,
        resume_tokens: int | None = None,
        cache_expired: bool = False,
        resume_cache_usd: float | None = None,
        warnings: tuple[str, ...] = (),
    ) -> None:
        self._set("event", event)
        self._set("event_name", event_name or (event.value if event is not None else ""))
        self._set("session_id", session_id)
        self._set("transcript_path", transcript_path)
        self._set("cwd", cwd)
        self._set("trigger", trigger)
        self._set("source", source)
        self._set("prompt", prompt)
        self._set("tool_name", tool_name)
        self._set("tool_input", tool_input)
        self._set("tool_response", tool_response)
        self._set("tool_use_id", tool_use_id)
        self._set("failed", failed)
        self._set("error", error)
        self._set("stop_hook_active", stop_hook_active)
        self._set("agent_id", agent_id)
        self._set("agent_type", agent_type)
        self._set("prompt_id", prompt_id)
        self._set("reason", reason)
        self._set("response_text", response_text)
        self._set("last_assistant_message", last_assistant_message)
        self._set("compact_summary", compact_summary)
        self._set("idle_seconds", idle_seconds)
        self._set("resume_tokens", resume_tokens)
        self._set("cache_expired", cache_expired)
        self._set("resume_cache_usd", resume_cache_usd)
        self._set("warnings", warnings)


def _response_failed(response: object) -> bool:
    """Whether a PostToolUse ``tool_response`` reports a failure (shapes differ per tool and version)."""
    if not isinstance(response, dict):
        return False
    if response.get("is_error") is True or response.get("isError") is True:
        return True
    if response.get("success") is False:
        return True
    error = response.get("error")  # Gemini CLI: {"message": ..., "type": ...} when the call failed
    if isinstance(error, dict) and error:
        return True
    for key in ("exit_code", "exitCode", "returnCode"):
        code = response.get(key)
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return True
    return False


RESPONSE_CHARS = 2400
"""How much of a tool response is kept (head and tail) to tell whether it reads like an error."""


def _response_text(response: object, error: str | None) -> str:
    """The tool response's text (error, stdout, stderr, output, content), head and tail kept."""
    parts = [error] if error else []
    if isinstance(response, str):
        parts.append(response)
    elif isinstance(response, dict):
        for key in ("stdout", "stderr", "output", "content", "llmContent", "error"):
            value = response.get(key)
            if isinstance(value, dict):  # Gemini's error: {"message": ...}
                value = value.get("message")
            elif isinstance(value, list):  # Gemini's llmContent: parts [{"text": ...}]
                value = "\n".join(
                    p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
            if isinstance(value, str) and value and value != error:
                parts.append(value)
    text = "\n".join(parts)
    half = RESPONSE_CHARS // 2
    return text if len(text) <= RESPONSE_CHARS else text[:half] + "\n" + text[-half:]


def _trigger(text: str | None) -> CompactTrigger | None:
    if text is None:
        return None
    try:
        return CompactTrigger(text.lower())
    except ValueError:
        return CompactTrigger.UNKNOWN


def _source(text: str | None) -> SessionSource | None:
    if text is None:
        return None
    try:
        return SessionSource(text.lower())
    except ValueError:
        return SessionSource.UNKNOWN


def parse_hook_payload(raw: bytes | str, event: HookEvent | None = None) -> HookPayload:
    """Parse a hook payload; ``event`` (from the command line) wins over ``hook_event_name``."""
    r = _Reader(_load_object(raw, "hook payload"), "payload")
    name = r.text("hook_event_name") or ""
    if event is None and name:
        event = find_event(name)
    response = r.data.get("tool_response", r.data.get("tool_output"))
    error = r.text("error", "error_message")
    failed = event is HookEvent.POST_TOOL_USE_FAILURE or _response_failed(response)
    if error is None and failed and isinstance(response, dict):
        text = response.get("error") or response.get("stderr")
        if isinstance(text, dict):
            text = text.get("message")
        error = text if isinstance(text, str) else None
    return HookPayload(
        event=event,
        event_name=name,
        session_id=r.text("session_id"),
        transcript_path=r.text("transcript_path"),
        cwd=r.text("cwd"),
        trigger=_trigger(r.text("trigger")),
        source=_source(r.text("source")),
        prompt=r.text("prompt"),
        tool_name=r.text("tool_name"),
        tool_input=r.data.get("tool_input"),
        tool_response=response,
        tool_use_id=r.text("tool_use_id"),
        failed=failed,
        error=error,
        stop_hook_active=r.flag("stop_hook_active"),
        agent_id=r.text("agent_id"),
        agent_type=r.text("agent_type"),
        prompt_id=r.text("prompt_id"),
        reason=r.text("reason"),
        response_text=_response_text(response, error),
        last_assistant_message=r.text("last_assistant_message"),
        compact_summary=r.text("compact_summary"),
        idle_seconds=r.number("seconds_since_last_response"),
        resume_tokens=r.integer("context_tokens"),
        cache_expired=r.flag("prompt_cache_likely_expired"),
        resume_cache_usd=r.number("estimated_cache_write_usd"),
        warnings=tuple(r.warnings),
    )


# Events whose ``hookSpecificOutput.additionalContext`` Claude Code adds to the model's context.
_CONTEXT_EVENTS = frozenset(
    {
        HookEvent.SESSION_START,
        HookEvent.USER_PROMPT_SUBMIT,
        HookEvent.POST_TOOL_USE,
        HookEvent.POST_TOOL_USE_FAILURE,
    }
)


def hook_output(event: HookEvent, *, context: str = "", user_message: str = "") -> str:
    """The JSON a hook prints on stdout (exit 0), or "" when there is nothing to say.

    ``context`` goes to the model as ``hookSpecificOutput.additionalContext`` (only for events that
    honour it); ``user_message`` is shown to the person as ``systemMessage``. Both are redacted.
    """
    if context or user_message:
        from ctxhealth.redact import scrub

        context, user_message = scrub(context), scrub(user_message)
    out: dict[str, Any] = {}
    if context and event in _CONTEXT_EVENTS:
        out["hookSpecificOutput"] = {"hookEventName": event.value, "additionalContext": context}
    if user_message:
        out["systemMessage"] = user_message
    return json.dumps(out, ensure_ascii=False) if out else ""
