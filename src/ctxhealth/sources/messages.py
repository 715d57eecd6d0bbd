"""Reading OpenAI / Anthropic message lists held in memory: :func:`read_messages`.

An agent keeps its conversation as a list of message dicts (or the SDK's response objects); this
reads that list straight into a :class:`~ctxhealth.model.Session` through the same readers as
files, with no JSON encoding on the way. SDK objects (pydantic models: anything with a
``model_dump`` method), mappings and tuples anywhere in the list are turned into plain dicts and
lists first; nothing passed in is modified.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msgspec.structs import replace

from ctxhealth.errors import UsageError
from ctxhealth.model import Format, Session
from ctxhealth.sources import anthropic_messages, openai_chat
from ctxhealth.sources.reader import check_strict

_FORMATS: dict[str, Format] = {
    "openai": Format.OPENAI_CHAT,
    Format.OPENAI_CHAT.value: Format.OPENAI_CHAT,
    "anthropic": Format.ANTHROPIC_MESSAGES,
    Format.ANTHROPIC_MESSAGES.value: Format.ANTHROPIC_MESSAGES,
}


def read_messages(
    messages: Iterable[Any],
    *,
    format: Format | str,
    system: Any = None,
    model: str | None = None,
    name: str = "<messages>",
    strict: bool = False,
) -> Session:
    """The :class:`Session` of an in-memory message list.

    ``format`` is ``"openai"`` (Chat Completions) or ``"anthropic"`` (Messages), or the
    :class:`~ctxhealth.model.Format`. ``system`` is the system prompt kept outside the list
    (Anthropic's ``system`` parameter; for OpenAI it becomes a leading system message, line 0); ``model``
    the model id when no message names one; ``name`` stands for the path in warnings, whose line
    numbers are 1-based positions in ``messages``. Lenient like the file readers: a malformed entry
    becomes a warning in ``Session.warnings`` (``strict`` raises :class:`StrictModeError` instead).
    A message nesting dicts or lists more than :data:`MAX_DEPTH` levels deep, or holding itself, is a
    :class:`~ctxhealth.errors.UsageError` (``Monitor.observe`` refuses such a message the same way,
    before its state changes).
    """
    kind = _FORMATS.get(str(format))
    if kind is None:
        raise UsageError(
            f"cannot read an in-memory message list as {str(format)!r}",
            hint="pass format='openai' or format='anthropic'; read files with read_session",
        )
    items = [plain(m) for m in messages]
    if kind is Format.OPENAI_CHAT:
        doc: dict[str, Any] = {"messages": items, "model": model}
        session = openai_chat.parse_document(doc, name)
        if system is not None:
            session = _with_system(session, system)
    else:
        doc = {"messages": items, "model": model}
        if system is not None:
            doc["system"] = plain(system)
        session = anthropic_messages.parse_document(doc, name)
    if strict:
        check_strict(session)
    return session


def _with_system(session: Session, system: Any) -> Session:
    """``session`` with the system prompt as its first message, at line 0 as Anthropic's reader puts
    it, so the other messages keep their positions in the list."""
    prompt = openai_chat.parse_document([{"role": "system", "content": plain(system)}], session.path)
    first = [replace(m, line=0) for m in prompt.messages]
    return replace(
        session,
        messages=(*first, *session.messages),
        warnings=(*prompt.warnings, *session.warnings),
    )


MAX_DEPTH = 250
"""The deepest nesting of dicts and lists a message passed in may have: deeper than any real
message (a tool input nests a few levels), shallow enough for every step after (the JSON encoder
used to size a tool input stops at 255 levels)."""


def plain(value: Any) -> Any:
    """``value`` as JSON-like data: SDK objects dumped, mappings as dicts, tuples as lists. A value
    nested deeper than :data:`MAX_DEPTH` (or holding itself) is a
    :class:`~ctxhealth.errors.UsageError`, raised before anything reads it."""
    return _plain(value, 0)


def _plain(value: Any, depth: int) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        value = dump(exclude_none=True)
    if isinstance(value, Mapping):
        if depth >= MAX_DEPTH:
            raise _too_deep()
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if depth >= MAX_DEPTH:
            raise _too_deep()
        return [_plain(v, depth + 1) for v in value]
    return value


def _too_deep() -> UsageError:
    return UsageError(
        f"a message nests dicts or lists more than {MAX_DEPTH} levels deep (or holds itself)",
        hint="pass JSON-like data as an API would send it: no real message nests this deep",
    )
