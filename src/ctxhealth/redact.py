"""Secret redaction: the one place that scrubs API keys, tokens and passwords from text.

Everything ctxhealth writes that may carry transcript text (checkpoints, task state,
ledger rows, hook payload summaries) passes through :func:`redact` first. Each rule
is a named pattern; a match is replaced by ``[REDACTED:<kind>]`` so a reader can see
that something was removed and what sort of thing it was.

The rules aim at well-known key formats and at ``name = value`` assignments whose
name says "secret". They deliberately leave ordinary identifiers alone: hex digests,
UUIDs, paths and counters such as ``max_tokens=4096`` pass through unchanged.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

__all__ = ["SecretKind", "find_secrets", "redact", "redact_value"]


class SecretKind(StrEnum):
    PRIVATE_KEY = "private-key"
    ANTHROPIC = "anthropic-key"
    OPENAI = "openai-key"
    AWS = "aws-key"
    GITHUB = "github-token"
    SLACK = "slack-token"
    GOOGLE = "google-key"
    JWT = "jwt"
    BEARER = "bearer"
    URL_CREDENTIALS = "url-credentials"
    ASSIGNMENT = "secret"


def _marker(kind: SecretKind) -> str:
    return f"[REDACTED:{kind.value}]"


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: SecretKind
    # Literals one of which any match contains (lower-case unless ``exact_hints``): a fast
    # test that skips the regex for most text.
    hints: tuple[str, ...]
    # Compiled on first use (:func:`_compiled`): most text never needs most rules.
    source: str
    # Group kept in front of the redaction (``Bearer ``, ``://user:``); 0 = none.
    keep_prefix_group: int = 0
    # Hints are matched against the text as is (case matters), not its lower-case copy.
    exact_hints: bool = False
    flags: int = 0

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.source, self.flags)


@cache
def _compiled(source: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile`` once per pattern, on first use: a hook process seldom needs them all."""
    return re.compile(source, flags)


# A value that is already a marker or an obvious placeholder is not a secret.
_PLACEHOLDER = r"^(?:\[REDACTED|\$\{|\$[A-Z_]|<[^>]*>?$|\*{3,}|x{6,}$|\.\.\.|None$|null$)"

# Names that say "the value is a secret". ``pwd`` and ``credentials`` are left out on purpose:
# their values are usually paths. ``tokens`` (plural) is a count, hence the right boundary.
_SECRET_NAME = (
    r"(?:api[_-]?key|apikey|secret[_-]?key|access[_-]?key(?:[_-]?id)?|private[_-]?key|secret|token|"
    r"password|passwd|passphrase)"
)
# Cheap test before the assignment rule: most text names no secret at all.
_NAME_HINTS = ("key", "secret", "token", "passw", "passphrase")

_RULES: tuple[_Rule, ...] = (
    _Rule(
        SecretKind.PRIVATE_KEY,
        ("private key",),
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)",
    ),
    _Rule(SecretKind.ANTHROPIC, ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
    _Rule(
        SecretKind.OPENAI,
        ("sk-",),
        r"\bsk-(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}",
    ),
    _Rule(
        SecretKind.AWS,
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA"),
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b",
        exact_hints=True,
    ),
    _Rule(
        SecretKind.GITHUB,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    _Rule(SecretKind.SLACK, ("xox",), r"\bxox[abposrce]-[A-Za-z0-9-]{10,}"),
    _Rule(SecretKind.GOOGLE, ("aiza",), r"\bAIza[0-9A-Za-z_-]{30,}"),
    _Rule(
        SecretKind.JWT,
        ("eyj",),
        r"\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}",
    ),
    _Rule(
        SecretKind.URL_CREDENTIALS,
        ("://",),
        # Anchored on the literal ``://`` so the regex engine can skip ahead to candidates.
        r"(://[^\s:/@\"'\[\]]+:)(?!\[REDACTED)[^\s/@\"']+(?=@)",
        keep_prefix_group=1,
    ),
    _Rule(
        SecretKind.BEARER,
        ("bearer", "authorization"),
        r"((?:\bauthorization\b[\"']?\s*[:=]\s*[\"']?\s*(?:bearer|token|basic)?|\bbearer)\s+)"
        r"(?!\[REDACTED)[A-Za-z0-9._~+/=-]{8,}",
        keep_prefix_group=1,
        flags=re.I,
    ),
)

# ``NAME = value``, ``"name": "value"``, ``NAME: value``; only the value is replaced. The name is
# matched by its secret-saying end (``OPENAI_API_KEY`` ends in ``api_key``). The pattern is
# matched case-sensitively against a lower-cased copy of the text: several times faster than
# ``re.IGNORECASE``, and the copy has the same length, so its spans index the original.
_ASSIGNMENT = (
    r"(?P<head>" + _SECRET_NAME + r"(?![a-z0-9])[\"']?\s*(?::=|=>|:|=)\s*[\"']?)"
    r"(?P<value>[^\s\"',;&)}\]\\]+)"
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _same_length_lower(text: str) -> str:
    lowered = text.lower()
    # A few characters lower-case to two (U+0130); then fold ASCII letters only.
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def _is_secret_value(value: str) -> bool:
    if len(value) < 4 or _compiled(_PLACEHOLDER, re.I).match(value):
        return False
    # Numbers and booleans are settings, not secrets (``token: 3``, ``password_required=true``).
    return not (value.isdigit() or value.lower() in {"true", "false", "none", "null", "yes", "no"})


# An unquoted value that reads as code (``self.secret``, ``conn.get(``, ``data[``) is not a literal.
# So does a bare lower-case name without digits (``password = raw_password``); a real secret
# written unquoted nearly always carries digits or capitals.
_CODE_VALUE = r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|^[a-z_]+$|[(\[]"
_NAME_WORDS = frozenset({"password", "passwd", "passphrase", "secret", "token", "key", "api_key"})


def _is_code(value: str) -> bool:
    return bool(_compiled(_CODE_VALUE).search(value)) or value.lower() in _NAME_WORDS


def _assignment_is_secret(head: str, value: str) -> bool:
    quoted = head[-1:] in ("'", '"')
    return _is_secret_value(value) and (quoted or not _is_code(value))


def _redact_assignments(text: str, found: list[SecretKind] | None) -> str:
    pieces: list[str] = []
    position = 0
    for match in _compiled(_ASSIGNMENT).finditer(_same_length_lower(text)):
        start, end = match.span("value")
        if not _assignment_is_secret(match.group("head"), text[start:end]):
            continue
        pieces += [text[position:start], _marker(SecretKind.ASSIGNMENT)]
        position = end
        if found is not None:
            found.append(SecretKind.ASSIGNMENT)
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


def _replacer(rule: _Rule, found: list[SecretKind] | None) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        if found is not None:
            found.append(rule.kind)
        prefix = match.group(rule.keep_prefix_group) if rule.keep_prefix_group else ""
        return f"{prefix}{_marker(rule.kind)}"

    return replace


# Every hint of every rule, lower-cased, and the assignment rule's: text containing none of them
# (most text) is returned as is after one pass of substring tests.
_ALL_HINTS = tuple(dict.fromkeys([h.lower() for rule in _RULES for h in rule.hints] + list(_NAME_HINTS)))


def _run(text: str, found: list[SecretKind] | None) -> str:
    lowered = text.lower()
    for hint in _ALL_HINTS:
        if hint in lowered:
            break
    else:
        return text
    for rule in _RULES:
        haystack = text if rule.exact_hints else lowered
        if any(hint in haystack for hint in rule.hints):
            text = rule.pattern.sub(_replacer(rule, found), text)

    if not any(hint in lowered for hint in _NAME_HINTS):
        return text
    return _redact_assignments(text, found)


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not text:
        return text
    return _run(text, None)


def find_secrets(text: str) -> list[SecretKind]:
    """The kinds of secret :func:`redact` would remove from ``text``, in rule order."""
    found: list[SecretKind] = []
    _run(text, found)
    return found


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dicts, lists, tuples); keys are kept.

    A dict entry whose key itself names a secret (``{"api_key": "..."}``) has its string
    value replaced whole, whatever it looks like.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if (
                isinstance(key, str)
                and isinstance(item, str)
                and _is_secret_key(key)
                and _is_secret_value(item)
            ):
                out[key] = _marker(SecretKind.ASSIGNMENT)
            else:
                out[key] = redact_value(item)
        return out
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value


_SECRET_KEY = r"^[A-Za-z0-9_.-]*?" + _SECRET_NAME + r"$"


def _is_secret_key(key: str) -> bool:
    return bool(_compiled(_SECRET_KEY, re.I).match(key))
