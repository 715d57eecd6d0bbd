"""The content sniffers of the formats whose parsers are imported only when used.

Detection (:func:`ctxhealth.sources.reader.detect_format`) asks every format in turn whether a
head of bytes is one of its transcripts, so a directory walk that meets one file no reader
recognises asks them all. The sniffers live here, apart from their parsers, so that asking costs
this small module and not the import of every reader (Codex, Gemini CLI, mini-swe-agent,
SWE-agent, tau-bench, OpenHands): a format's module is imported when a file of it is read. Each
function here is that format's one definition of "looks like mine"; its reader module has none.
"""

from __future__ import annotations

from ctxhealth.lazy import pattern
from ctxhealth.sources.lines import get_str, head_objects

CODEX_LINE_TYPES = frozenset(
    {
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        "token_usage_record",
        "world_state",
    }
)
"""The ``type`` of every Codex rollout line (the reader steps over a line of another type)."""
# compiled on first use (``pattern``): a walk of Claude Code sessions asks only the Claude Code sniffer
_CODEX_CUT_LINE = rb'"type"\s*:\s*"(?:session_meta|turn_context|response_item|event_msg)"\s*,\s*"payload"'
GEMINI_HEADER_KEYS = ("sessionId", "projectHash")
"""The string keys of a Gemini CLI conversation header."""
_MINI_SWE_AGENT_HEAD = rb'^\s*\{\s*"info"\s*:\s*\{\s*"exit_status"'
_SWE_AGENT_HEAD = rb'\s*\{\s*"(?:environment|trajectory|history|info|replay_config)"\s*:'
_TAU_BENCH_RUN_KEYS = (b'"traj"', b'"task_id"')
_OPENHANDS_COMPLETION_HEAD = rb'\s*\{\s*"messages"\s*:'
_OPENHANDS_OUTPUT_HEAD = rb'\s*\{\s*"instance_id"\s*:'


def codex(head: bytes) -> bool:
    """True when the first complete lines are ``{timestamp, type, payload}`` rollout records."""
    checked = False
    for obj in head_objects(head):
        checked = True
        if isinstance(obj, dict) and get_str(obj, "type") in CODEX_LINE_TYPES and "payload" in obj:
            return True
    if not checked:
        first = head.lstrip()[:1024]
        return first.startswith(b"{") and pattern(_CODEX_CUT_LINE).search(first) is not None
    return False


def _stream_id(head: bytes, kind: str, key: str, *required: str) -> str | None:
    """The ``key`` of an event stream whose first object is ``{"type": kind, key, *required}`` (""
    when it has none), else None."""
    for obj in head_objects(head):
        if isinstance(obj, dict) and get_str(obj, "type") == kind and all(k in obj for k in required):
            return get_str(obj, key) or ""
        return None
    return None


def codex_exec_events(head: bytes) -> str | None:
    """The thread id of a Codex CLI ``exec --json`` event stream (its first object is
    ``{"type": "thread.started", "thread_id"}``), else None. Not a transcript: it holds no prompt
    and one usage per turn, summed over the turn's requests; the session's rollout is named by it."""
    return _stream_id(head, "thread.started", "thread_id")


def gemini_stream_events(head: bytes) -> str | None:
    """The session id of a Gemini CLI ``-p --output-format stream-json`` event stream (its first object
    is ``{"type": "init", "session_id", "model"}``), else None. Not a transcript: its usage is the
    run's total (the ``result`` line's ``stats``); the session's chat is named by it."""
    return _stream_id(head, "init", "session_id", "model")


def gemini_cli(head: bytes) -> bool:
    """True for a chat whose first object is a Gemini CLI conversation header (or whole record)."""
    for obj in head_objects(head):
        return isinstance(obj, dict) and all(isinstance(obj.get(k), str) for k in GEMINI_HEADER_KEYS)
    first = head.lstrip()[:2048]
    return first.startswith(b"{") and b'"projectHash"' in first and b'"sessionId"' in first


def mini_swe_agent(head: bytes) -> bool:
    """True for a JSON object with mini-swe-agent's trajectory keys near its start."""
    stripped = head.lstrip()
    if not stripped.startswith(b"{"):
        return False
    if b'"trajectory_format"' in head or b'"mini_version"' in head:
        return True
    return pattern(_MINI_SWE_AGENT_HEAD).match(stripped) is not None


def swe_agent(head: bytes) -> bool:
    """A JSON object opening with one of a trajectory's top-level keys, holding steps or history."""
    if not _opens_object(head) or pattern(_SWE_AGENT_HEAD).match(head) is None:
        return False
    if b'"trajectory_format"' in head:
        return False
    return b'"observation"' in head or b'"history"' in head or b'"model_stats"' in head


def tau_bench(head: bytes) -> bool:
    """True for a JSON array whose first run has ``task_id`` and ``traj`` keys."""
    stripped = head.lstrip()
    if not stripped.startswith(b"["):
        return False
    opening = stripped[1:].lstrip()[:1]
    return opening == b"{" and all(key in head for key in _TAU_BENCH_RUN_KEYS)


def openhands(head: bytes) -> bool:
    """An OpenHands completion file small enough that its ``response`` is in ``head``, or an
    ``output.jsonl`` line."""
    if openhands_completion(head):
        return b'"response"' in head and b'"choices"' in head
    return openhands_output(head)


def openhands_tail(head: bytes, tail: bytes) -> bool:
    """An OpenHands completion file whose ``messages`` fill the head: its last bytes hold the
    call's ``timestamp`` and ``cost``."""
    return openhands_completion(head) and b'"timestamp"' in tail and b'"cost"' in tail


def openhands_completion(head: bytes) -> bool:
    """True for one OpenHands model call's file (as opposed to an ``output.jsonl``)."""
    return _opens_object(head) and pattern(_OPENHANDS_COMPLETION_HEAD).match(head) is not None


def openhands_output(head: bytes) -> bool:
    """True for an OpenHands evaluation ``output.jsonl`` (one run per line)."""
    return (
        _opens_object(head)
        and pattern(_OPENHANDS_OUTPUT_HEAD).match(head) is not None
        and b'"history"' in head
    )


def _opens_object(head: bytes) -> bool:
    """Whether ``head`` opens a JSON object after whitespace: every match of the ``\\s*\\{`` head
    patterns above starts so (``bytes.lstrip`` strips what ``\\s`` matches in a bytes pattern), so a
    file that does not (a licence, a log) never compiles or runs them."""
    return head[:1] == b"{" or head.lstrip()[:1] == b"{"
