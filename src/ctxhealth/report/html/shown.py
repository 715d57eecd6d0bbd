"""What the report shows of any text: redacted, then HTML-escaped — the one gate every text of the
page passes (the report is a file people share, so redaction is on unless the caller turns it off
with :func:`redacting`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from html import escape

from ctxhealth.redact import redact

_REDACTING: ContextVar[bool] = ContextVar("ctxhealth_report_redacting", default=True)


@contextmanager
def redacting(on: bool) -> Iterator[None]:
    """Within the block, texts are redacted (``on``) or shown as they are."""
    token = _REDACTING.set(on)
    try:
        yield
    finally:
        _REDACTING.reset(token)


def clean(text: str) -> str:
    """``text`` redacted unless redaction is off (call it before cutting a text short: a secret
    cut in half no longer has its shape)."""
    return redact(text) if _REDACTING.get() else text


def shown(value: object, *, quote: bool = True) -> str:
    """``value`` as page text: redacted, then escaped (attribute-safe with ``quote``)."""
    return escape(clean("" if value is None else str(value)), quote=quote)
