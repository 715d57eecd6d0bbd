"""Content detection for Claude Code transcripts: does a file's head look like one."""

from __future__ import annotations

from ctxhealth.sources.lines import get_str, head_objects

#: Top-level ``type`` values Claude Code writes that are not conversation messages (2.1 starts an
#: interactive session with ``mode``, ``permission-mode``, ``atis-latch`` and ``tools-used`` lines,
#: and writes its own bookkeeping between messages).
_NON_MESSAGE_TYPES = frozenset(
    {
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "system",
        "attachment",
        "mode",
        "permission-mode",
        "atis-latch",
        "tools-used",
        "last-prompt",
        "cost-state",
        "api-request",
        "api-request-blob",
        "api-request-shape",
    }
)
_DETECT_TYPES = frozenset({"user", "assistant", *_NON_MESSAGE_TYPES})


def detect(head: bytes) -> bool:
    """True when the first complete JSON lines of ``head`` look like Claude Code records."""
    seen = False
    for obj in head_objects(head):
        seen = True
        if not isinstance(obj, dict) or get_str(obj, "type") not in _DETECT_TYPES:
            continue
        if obj.get("type") == "summary" and "leafUuid" in obj:
            return True
        if "uuid" in obj or "sessionId" in obj or "messageId" in obj:
            return True
    if not seen:
        # The first line is longer than the head: judge its opening keys.
        first = head.lstrip()[:4096]
        return first.startswith(b"{") and b'"sessionId"' in first and b'"parentUuid"' in first
    return False
