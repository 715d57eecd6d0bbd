"""File-name-safe labels for sessions: the one sanitiser every path built from a session id uses.

:func:`session_label` is a readable label (letters, digits, ``-``, ``_``; never empty, never ``.`` or
``..``) for file names that need not be unique (a timestamp follows). :func:`session_folder` is the
name of a folder that belongs to one session only: the readable label plus a digest of the raw id, so
ids that sanitise alike (``../../x`` and ``..-..-x``) or to nothing (``.``, ``..``, ``""``) never
share a folder.
"""

from __future__ import annotations

__all__ = ["session_folder", "session_label"]

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
FOLDER_DIGEST_BYTES = 12


def session_label(raw: str | None, max_chars: int = 80) -> str:
    """``raw`` with every character outside ``[A-Za-z0-9_-]`` turned into ``-`` (runs collapsed),
    trimmed of ``-`` at both ends and cut to ``max_chars``; ``"session"`` when nothing is left."""
    out: list[str] = []
    for c in raw or "":
        safe = c if c in _SAFE else "-"
        if safe == "-" and out and out[-1] == "-":
            continue
        out.append(safe)
    label = "".join(out).strip("-")[:max_chars].rstrip("-")
    return label or "session"


def session_folder(raw: str | None, readable: str | None = None) -> str:
    """A folder name of one session: ``<label>-<24 hex digits of a BLAKE2b digest of raw>``; the
    label is made from ``readable`` when given (e.g. a file's stem when ``raw`` is its path)."""
    from hashlib import blake2b

    digest = blake2b((raw or "").encode("utf-8", errors="surrogatepass"), digest_size=FOLDER_DIGEST_BYTES)
    from ctxhealth.redact import redact

    # The readable part is redacted: a folder name is as visible as a file's content.
    label = session_label(redact((raw if readable is None else readable) or ""), 40)
    return f"{label}-{digest.hexdigest()}"
