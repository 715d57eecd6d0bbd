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
from enum import StrEnum

from ctxhealth import lazy

# Every hook imports this module: ``typing``, ``dataclasses`` and ``string`` would cost a hook more
# than the redaction itself, so they are left out (the types are for the type checker only).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    from ctxhealth.model import Message

__all__ = ["SecretKind", "find_secrets", "redact", "redact_message", "redact_value", "scrub"]


class SecretKind(StrEnum):
    PRIVATE_KEY = "private-key"
    ANTHROPIC = "anthropic-key"
    OPENAI = "openai-key"
    AWS = "aws-key"
    GITHUB = "github-token"
    GITLAB = "gitlab-token"
    SLACK = "slack-token"
    STRIPE = "stripe-key"
    GOOGLE = "google-key"
    NPM = "npm-token"
    HUGGING_FACE = "hf-token"
    SENDGRID = "sendgrid-key"
    TWILIO = "twilio-key"
    DISCORD = "discord-token"
    PYPI = "pypi-token"
    DOCKER = "docker-token"
    DIGITALOCEAN = "digitalocean-token"
    VAULT = "vault-token"
    AGE = "age-key"
    MAILGUN = "mailgun-key"
    SHOPIFY = "shopify-token"
    DATABRICKS = "databricks-token"
    TELEGRAM = "telegram-token"
    SENTRY = "sentry-dsn"
    MAILCHIMP = "mailchimp-key"
    SQUARE = "square-token"
    ARTIFACTORY = "artifactory-token"
    SOFTLAYER = "softlayer-key"
    AZURE_SAS = "azure-sas"
    COOKIE = "cookie"
    JWT = "jwt"
    BEARER = "bearer"
    URL_CREDENTIALS = "url-credentials"
    COMMAND_LINE = "cli-password"
    ASSIGNMENT = "secret"
    HIGH_ENTROPY = "high-entropy"


def _marker(kind: SecretKind) -> str:
    return f"[REDACTED:{kind.value}]"


class _Rule:
    """One named pattern.

    ``hints``: lower-case literals one of which any match contains (in the lower-cased text), a
    test that skips the regex for most text; only for patterns that do not start with a literal
    (the regex engine skips ahead to a leading literal faster than a few substring tests do);
    empty: the rule always runs. ``source`` is compiled on first use (:func:`ctxhealth.lazy.pattern`).
    ``keep_prefix_group``: the group kept in front of the redaction (``Bearer ``, ``://user:``);
    0 = none. ``literal``: the text every match starts with (:func:`_leading_literal`); a text
    without it is not searched, and the pattern is compiled only when some text has it (most
    processes redact only a few short strings, and compiling every rule costs more than that).
    ``word_start``: the pattern checks that the literal starts a word (:func:`_word`); a text where it
    starts none is not searched either (:func:`_starts_a_word`). Nor is a text without one of the
    literals every match holds (:func:`ctxhealth.lazy.required_literals`, read on first need, for
    a text that passed the tests before: ``_v1_`` of a DigitalOcean token after its ``do``).
    """

    __slots__ = (
        "_pattern",
        "flags",
        "hints",
        "keep_prefix_group",
        "kind",
        "literal",
        "required",
        "source",
        "word_start",
    )

    def __init__(
        self,
        kind: SecretKind,
        hints: tuple[str, ...],
        source: str,
        keep_prefix_group: int = 0,
        flags: int = 0,
    ) -> None:
        self.kind = kind
        self.hints = hints
        self.source = source
        self.keep_prefix_group = keep_prefix_group
        self.flags = flags
        self.literal, at = _leading_literal(source, flags)
        # ``literal(?<![A-Za-z0-9_]literal)`` (:func:`_word`): a match starts where the literal
        # starts a word, so a text holding the literal only inside words (``task_id``) is not searched
        escaped = source[:at].lstrip("(")
        self.word_start = bool(self.literal) and source.startswith(_word_guard(escaped), at)
        self._pattern: re.Pattern[str] | None = None
        self.required: tuple[str, ...] | None = None

    def holds_required(self, text: str) -> bool:
        """Whether ``text`` holds each literal every match of the rule holds."""
        required = self.required
        if required is None:
            required = self.required = lazy.required_literals(self.source, self.flags)
        return all(map(text.__contains__, required))

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = lazy.pattern(self.source, self.flags)
        return self._pattern


_REGEX_META = frozenset(".^$*+?{}[]|()")


def _leading_literal(source: str, flags: int) -> tuple[str, int]:
    """The literal characters ``source`` starts with, which every match therefore contains ("" when
    it starts with anything else, or is case-insensitive), read through the opening of a leading
    capturing group (``(://)...``); and where in ``source`` they end. A character followed by a
    quantifier is left out. Neither the pattern nor its leading group may be an alternation at its
    top level (a test checks each rule against the regex parser)."""
    if flags & re.I:
        return "", 0
    out: list[str] = []
    at = 1 if source[:1] == "(" and source[1:2] != "?" else 0
    while at < len(source):
        char = source[at]
        if char == "\\":
            if at + 1 >= len(source) or source[at + 1].isalnum():  # a class (``\d``), not an escape
                break
            char, step = source[at + 1], 2
        elif char in _REGEX_META:
            break
        else:
            step = 1
        if source[at + step : at + step + 1] in ("*", "+", "?", "{"):
            break
        out.append(char)
        at += step
    return "".join(out), at


def _word_guard(escaped: str) -> str:
    """The look-behind :func:`_word` puts after a literal (``escaped``, as in the pattern)."""
    return f"(?<![A-Za-z0-9_]{escaped})"


# A value that is already a marker or an obvious placeholder is not a secret.
_PLACEHOLDER = r"^(?:\[REDACTED|\$\{|\$[A-Z_]|<[^>]*>?$|\*{3,}|x{6,}$|\.\.\.|None$|null$)"

# Names that say "the value is a secret". ``pwd`` and ``credentials`` are left out on purpose:
# their values are usually paths. ``tokens`` (plural) is a count, hence the right boundary.
_SECRET_NAME = (
    r"(?:api[_-]?key|apikey|secret[_-]?key|access[_-]?key(?:[_-]?id)?|private[_-]?key|account[_-]?key|"
    r"shared[_-]?access[_-]?key|sharedaccesssignature|secret|token|password|passwd|passphrase)"
)
# Cheap test before the assignment rule: most text names no secret at all.
_NAME_HINTS = ("key", "secret", "token", "passw", "passphrase", "sharedaccesssignature")

# Words that stand for a password in documentation (``curl --user user:passwd``).
_PLACEHOLDER_WORD = r"(?:pass(?:wd|word)?|secret|pwd|x{3,}|\*{3,})(?![^\s\"'])"


def _word(literal: str) -> str:
    """``literal`` at the start of a word. The pattern starts with the literal itself and checks
    the character before it afterwards: a leading ``\b`` would stop the regex engine from skipping
    ahead to the literal, which makes a scan tens of times slower."""
    escaped = re.escape(literal)
    return escaped + _word_guard(escaped)


_RULES: tuple[_Rule, ...] = (
    _Rule(
        SecretKind.PRIVATE_KEY,
        ("private key",),
        # A block cut short (an excerpt) is redacted up to the end of its string: the next quote
        # that is not escaped, so a JSON document stays valid.
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:(?:[^\"\\]|\\[^\"])*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?:[^\"\\]|\\[^\"])*)",
    ),
    _Rule(SecretKind.ANTHROPIC, (), _word("sk-ant-") + r"[A-Za-z0-9_-]{16,}"),
    _Rule(
        SecretKind.OPENAI,
        (),
        _word("sk-") + r"(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}",
    ),
    _Rule(
        SecretKind.AWS,
        (),
        # The access key id, and the 40-character secret when it follows it (a credentials CSV,
        # ``aws configure`` output): the secret alone has no shape of its own.
        r"A(?:KIA|SIA|GPA|IDA|ROA|NPA)(?<![A-Za-z0-9_]....)[0-9A-Z]{16}\b"
        r"(?:[\s,:;|=\"']{1,8}[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+]))?",
    ),
    _Rule(
        SecretKind.GITHUB,
        (),
        _word("gh") + r"[pousr]_[A-Za-z0-9]{30,}",
    ),
    _Rule(SecretKind.GITHUB, (), _word("github_pat_") + r"[A-Za-z0-9_]{22,}"),
    _Rule(
        SecretKind.GITLAB,
        (),
        _word("gl") + r"(?:pat|dt|rt|ptt|ft|cbt|oas|soat)-[A-Za-z0-9_-]{20,}",
    ),
    _Rule(SecretKind.SLACK, (), _word("xox") + r"[abposrce]-[A-Za-z0-9-]{10,}"),
    _Rule(SecretKind.SLACK, (), _word("xapp-") + r"[A-Za-z0-9-]{10,}"),
    _Rule(
        SecretKind.SLACK,
        (),
        r"(hooks\.slack\.com/services/)[A-Za-z0-9/_-]{16,}",
        keep_prefix_group=1,
    ),
    _Rule(
        SecretKind.STRIPE,
        (),
        _word("sk_") + r"(?:live|test)_[A-Za-z0-9]{16,}",
    ),
    _Rule(
        SecretKind.STRIPE,
        (),
        _word("rk_") + r"(?:live|test)_[A-Za-z0-9]{16,}",
    ),
    _Rule(SecretKind.STRIPE, (), _word("whsec_") + r"[A-Za-z0-9+/=]{24,}"),
    _Rule(SecretKind.GOOGLE, (), _word("AIza") + r"[0-9A-Za-z_-]{30,}"),
    # An OAuth client secret and an OAuth access token.
    _Rule(SecretKind.GOOGLE, (), _word("GOCSPX-") + r"[0-9A-Za-z_-]{20,}"),
    _Rule(SecretKind.GOOGLE, (), _word("ya29.") + r"[0-9A-Za-z_-]{20,}"),
    _Rule(SecretKind.PYPI, (), _word("pypi-Ag") + r"[A-Za-z0-9_-]{50,}"),
    _Rule(SecretKind.DOCKER, (), _word("dckr_pat_") + r"[A-Za-z0-9_-]{20,}"),
    _Rule(SecretKind.DIGITALOCEAN, (), _word("do") + r"[opr]_v1_[a-f0-9]{64}"),
    _Rule(SecretKind.VAULT, (), _word("hv") + r"[sbr]\.[A-Za-z0-9_-]{24,}"),
    _Rule(SecretKind.AGE, (), _word("AGE-SECRET-KEY-1") + r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _Rule(SecretKind.MAILGUN, (), _word("key-") + r"[0-9a-zA-Z]{32}\b"),
    _Rule(SecretKind.MAILGUN, (), _word("pubkey-") + r"[0-9a-f]{32}\b"),
    _Rule(SecretKind.SHOPIFY, (), _word("shp") + r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    _Rule(SecretKind.DATABRICKS, (), _word("dapi") + r"[a-f0-9]{32}(?:-\d)?\b"),
    # A bot token: the bot's numeric id, a colon, 35 characters starting with ``A``.
    _Rule(
        SecretKind.TELEGRAM,
        (":a",),
        r"(?<![A-Za-z0-9_:])[0-9]{5,16}:A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])",
    ),
    # A DSN's public key sits where a URL's user name goes; an auth token has its own prefix.
    _Rule(
        SecretKind.SENTRY,
        (),
        r"(://)[0-9a-f]{32}(?::[0-9a-f]{32})?(?=@)",
        keep_prefix_group=1,
    ),
    _Rule(SecretKind.SENTRY, (), _word("sntry") + r"[su]_[A-Za-z0-9_=+/-]{40,}"),
    # Formats added after comparing with detect-secrets' plugin list (their formats, our patterns):
    # Square OAuth secrets and access tokens, Artifactory API keys (``AKCp``), and a SoftLayer API
    # key in its API endpoint URL (Mailchimp keys: see ``_redact_mailchimp``).
    _Rule(SecretKind.SQUARE, (), _word("sq0") + r"(?:csp|atp)-[0-9A-Za-z_-]{22,}"),
    _Rule(SecretKind.ARTIFACTORY, (), _word("AKCp") + r"(?=[A-Za-z]*[0-9])[A-Za-z0-9]{40,}(?![A-Za-z0-9])"),
    _Rule(
        SecretKind.SOFTLAYER,
        ("softlayer",),
        r"(api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/)[A-Za-z0-9]{64}(?![A-Za-z0-9])",
        keep_prefix_group=1,
        flags=re.I,
    ),
    # An Azure shared access signature's ``sig=`` (in a URL or a connection string).
    _Rule(
        SecretKind.AZURE_SAS,
        ("sig=",),
        r"((?<![A-Za-z0-9_])sig=)(?!\[REDACTED)[A-Za-z0-9%+/=]{16,}",
        keep_prefix_group=1,
    ),
    _Rule(SecretKind.NPM, (), _word("npm_") + r"(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{36}\b"),
    _Rule(SecretKind.HUGGING_FACE, (), _word("hf_") + r"(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{30,}\b"),
    _Rule(
        SecretKind.SENDGRID,
        (),
        _word("SG.") + r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}",
    ),
    # A Twilio API key sid (SK + 32 hex), and the auth token after an account sid (``AC…:token``).
    _Rule(SecretKind.TWILIO, (), _word("SK") + r"[0-9a-fA-F]{32}\b"),
    _Rule(
        SecretKind.TWILIO,
        (),
        r"(AC(?<![A-Za-z0-9_]AC)[0-9a-fA-F]{32}:)[0-9a-fA-F]{32}\b",
        keep_prefix_group=1,
    ),
    _Rule(
        SecretKind.DISCORD,
        (".",),
        # A bot token: the user id in base64, a 6-character timestamp, an HMAC.
        r"[MNO](?<![A-Za-z0-9_-][MNO])[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}"
        r"(?![A-Za-z0-9_-])",
    ),
    _Rule(
        SecretKind.DISCORD,
        (),
        r"(discord(?:app)?\.com/api/webhooks/[0-9]+/)[A-Za-z0-9_-]{40,}",
        keep_prefix_group=1,
    ),
    # A ``Cookie:`` / ``Set-Cookie:`` header's whole value (session ids have no shape of their own).
    _Rule(
        SecretKind.COOKIE,
        ("cookie",),
        r"((?<![A-Za-z0-9_-])(?:set-)?cookie[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED)[^\r\n\"'\\]{6,}",
        keep_prefix_group=1,
        flags=re.I,
    ),
    _Rule(
        SecretKind.JWT,
        (),
        _word("eyJ") + r"[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}",
    ),
    _Rule(
        SecretKind.URL_CREDENTIALS,
        (),
        # Anchored on the literal ``://`` so the regex engine can skip ahead to candidates.
        r"(://[^\s:/@\"'\[\]\\]*:)(?!\[REDACTED)[^\s/@\"'\\]+(?=@)",
        keep_prefix_group=1,
    ),
    _Rule(
        SecretKind.BEARER,
        ("bearer", "authorization"),
        r"((?:\bauthorization\b[\"']?\s*[:=]\s*[\"']?\s*(?:bearer|token|basic|digest)?|\bbearer)\s+)"
        r"(?!\[REDACTED)[A-Za-z0-9._~+/=-]{8,}",
        keep_prefix_group=1,
        flags=re.I,
    ),
    # Passwords on a command line: ``curl -u user:pass`` / ``--user=user:pass``, ``mysql -pX`` (the
    # password glued to -p), ``sshpass -p X``.
    _Rule(
        SecretKind.COMMAND_LINE,
        ("-u",),
        r"(-(?<![^\s\"']-)(?:u|-user)(?:\s+|=)[\"']?[^\s:\"'/@\\]+:)(?!\[REDACTED|" + _PLACEHOLDER_WORD + r")"
        r"[^\s\"'\\]+",
        keep_prefix_group=1,
    ),
    _Rule(
        SecretKind.COMMAND_LINE,
        ("mysql", "mariadb"),
        r"((?:mysql|mariadb)[\w-]*[^\n|;&\"]*?\s-p[\"']?)(?!\[REDACTED)[^\s\"'\\]+",
        keep_prefix_group=1,
    ),
    _Rule(
        SecretKind.COMMAND_LINE,
        (),
        r"(sshpass\s+-p\s*[\"']?)(?!\[REDACTED)[^\s\"'\\]+",
        keep_prefix_group=1,
    ),
)

# ``NAME = value``, ``"name": "value"``, ``NAME: value``; only the value is replaced. The name is
# matched by its secret-saying end (``OPENAI_API_KEY`` ends in ``api_key``). The pattern is
# matched case-sensitively against a lower-cased copy of the text: several times faster than
# ``re.IGNORECASE``, and the copy has the same length, so its spans index the original.
# ``is`` / ``was`` catch secrets in prose (``the password is X``); the value tests below keep
# ``the token is valid`` as it is.
_ASSIGNMENT = (
    r"(?P<head>" + _SECRET_NAME + r"(?![a-z0-9])(?:\\?[\"'])?"
    r"(?:\s*(?::=|=>|:|=|\bis\b|\bwas\b)\s*(?:\\?[\"'])?|(?P<space>[ \t]+)))"
    r"(?P<value>[^\s\"',;&)}\]\\]+)"
)
# ``NAME=value`` with an upper-case (environment) name one of whose ``_``-separated parts says
# "secret" (``SENDGRID_API_KEY``, ``GITHUB_TOKEN_RO``, ``PGPASSWORD``): the value is a literal
# whatever it looks like, quoted values up to their closing quote. Matched case-sensitively. An
# unquoted value counts only in shell / dotenv style, ``=`` without spaces: ``SECRET = make()``
# is a Python constant bound to code.
_ENV_ASSIGNMENT = (
    r"(?P<name>[A-Z](?<![A-Za-z0-9_$.][A-Z])[A-Z0-9_]*)"
    r"(?:\s*=\s*(?:\\?\"(?P<dq>[^\"\n\\]*)\\?\"|'(?P<sq>[^'\n\\]*)')|=(?P<bare>[^\s\"';&|)}\]\\]+))"
)
_ENV_SECRET_PART = (
    r"(?:^|_)(?:[A-Z]*KEY|[A-Z]*TOKEN|[A-Z]*SECRET|[A-Z]*PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?)(?:_|$)"
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _same_length_lower(text: str) -> str:
    lowered = text.lower()
    # A few characters lower-case to two (U+0130); then fold ASCII letters only.
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def _is_secret_value(value: str) -> bool:
    if len(value) < 4 or lazy.pattern(_PLACEHOLDER, re.I).match(value):
        return False
    # Numbers and booleans are settings, not secrets (``token: 3``, ``password_required=true``);
    # leaving a JSON number alone also keeps a redacted JSON document valid.
    if value.lower() in {"true", "false", "none", "null", "yes", "no"}:
        return False
    return not lazy.pattern(_NUMBER).match(value)


_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$"


# An unquoted value that reads as code (``self.secret``, ``conn.get(``, ``data[``) is not a literal.
# So does a bare lower-case name without digits (``password = raw_password``); a real secret
# written unquoted nearly always carries digits or capitals.
_CODE_VALUE = r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|^[a-z_]+$|[(\[]"
_NAME_WORDS = frozenset({"password", "passwd", "passphrase", "secret", "token", "key", "api_key"})


def _is_code(value: str) -> bool:
    return bool(lazy.pattern(_CODE_VALUE).search(value)) or value.lower() in _NAME_WORDS


def _looks_random(value: str) -> bool:
    """A value with no separator before it (``aws_secret wJalr...``) counts only when it looks
    like a key: long, with letters and digits (prose after a name is words)."""
    return len(value) >= 16 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _assignment_is_secret(head: str, value: str, spaced: bool = False) -> bool:
    if spaced:
        return _looks_random(value) and _is_secret_value(value)
    quoted = head[-1:] in ("'", '"')
    if not quoted and head.rstrip().endswith(("is", "was")):
        value = value.rstrip(".,:;!?")  # prose: ``the password was changed.``
    return _is_secret_value(value) and (quoted or not _is_code(value))


def _env_value_is_secret(value: str) -> bool:
    # Paths and variable references are not secrets (``SSL_KEY=/etc/ssl/k.pem``, ``TOKEN=$T``).
    return _is_secret_value(value) and not value.startswith(("/", "./", "../", "~/", "$", "%"))


def _splice(
    text: str, spans: Iterable[tuple[int, int]], kind: SecretKind, found: list[SecretKind] | None
) -> str:
    """``text`` with each of ``spans`` (in order of their starts; one that overlaps a span already
    replaced is skipped) replaced by ``kind``'s marker, each replacement noted in ``found``."""
    pieces: list[str] = []
    position = 0
    for start, end in spans:
        if start < position:
            continue
        pieces += [text[position:start], _marker(kind)]
        position = end
        if found is not None:
            found.append(kind)
    if not pieces:
        return text
    pieces.append(text[position:])
    return "".join(pieces)


def _redact_env_assignments(text: str, found: list[SecretKind] | None) -> str:
    def secret_values() -> Iterator[tuple[int, int]]:
        for match in lazy.pattern(_ENV_ASSIGNMENT).finditer(text):
            group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
            start, end = match.span(group)
            if lazy.pattern(_ENV_SECRET_PART).search(match.group("name")) and _env_value_is_secret(
                text[start:end]
            ):
                yield start, end

    return _splice(text, secret_values(), SecretKind.ASSIGNMENT, found)


def _redact_assignments(text: str, found: list[SecretKind] | None) -> str:
    def secret_values() -> Iterator[tuple[int, int]]:
        for match in lazy.pattern(_ASSIGNMENT).finditer(_same_length_lower(text)):
            start, end = match.span("value")
            if _assignment_is_secret(match.group("head"), text[start:end], match.group("space") is not None):
                yield start, end

    return _splice(text, secret_values(), SecretKind.ASSIGNMENT, found)


def _replacer(rule: _Rule, found: list[SecretKind] | None) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        if found is not None:
            found.append(rule.kind)
        prefix = match.group(rule.keep_prefix_group) if rule.keep_prefix_group else ""
        return f"{prefix}{_marker(rule.kind)}"

    return replace


_ENV_HINTS = ("pass", "pwd", "credential")

# A Mailchimp API key: 32 hex characters, ``-us`` and its data centre's number (a format of
# detect-secrets' list). Found from its tail: a pattern starting with 32 hex digits would be tried
# at every hex digit of a text.
_MAILCHIMP_TAIL = r"-us[0-9]{1,2}(?![0-9A-Za-z])"
_LOWER_HEX = frozenset("0123456789abcdef")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _redact_mailchimp(text: str, found: list[SecretKind] | None) -> str:
    def keys() -> Iterator[tuple[int, int]]:
        for match in lazy.pattern(_MAILCHIMP_TAIL).finditer(text):
            start = match.start() - 32
            if start < 0 or not set(text[start : match.start()]) <= _LOWER_HEX:
                continue
            if start > 0 and text[start - 1] in _WORD_CHARS:
                continue
            yield start, match.end()

    return _splice(text, keys(), SecretKind.MAILCHIMP, found)


# A value assigned to a name that only hints at a secret (``ibm_cloud_key``, ``cl_pw``,
# ``softlayer_pass``, ``auth``): redacted when the value itself looks random, as detect-secrets'
# high-entropy plugins judge a string (Shannon entropy per character: 4.5 bits over the base64
# alphabet, 3.0 over hex). Only such assignments are judged, never any string anywhere: on the real
# transcripts we test on, that is what keeps encrypted payloads, digests and ids of other fields
# out of it. Matched against the lower-cased copy; the entropy is taken on the original.
_HINTED_ASSIGNMENT = (
    r"(?:key|pwd?|pass|auth|credentials?|salt)(?![a-z0-9])(?:\\?[\"'])?\s*(?::=|=>|:|=)\s*(?:\\?[\"'])?"
    r"(?P<value>[a-z0-9+/=_-]{20,256})(?![a-z0-9+/=_.-])"
)
_HINTED_HINTS = ("key", "pw", "pass", "auth", "cred", "salt")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    import math

    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _looks_like_a_key(value: str) -> bool:
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    if set(value) <= _HEX_DIGITS:
        return len(value) >= 32 and _entropy(value) >= 3.0
    return _entropy(value) >= 4.5


def _redact_hinted_assignments(text: str, found: list[SecretKind] | None, lowered: str | None = None) -> str:
    # The pattern is tried only where one of its names occurs (``str.find`` is many times faster
    # than letting the regex engine try every position of a long text).
    if lowered is None or len(lowered) != len(text):
        lowered = _same_length_lower(text)
    pattern = lazy.pattern(_HINTED_ASSIGNMENT)
    spans: list[tuple[int, int]] = []
    for hint in _HINTED_HINTS:
        at = lowered.find(hint)
        while at != -1:
            match = pattern.match(lowered, at)
            if match is not None:
                spans.append(match.span("value"))
            at = lowered.find(hint, at + 1)
    keys = (span for span in sorted(set(spans)) if _looks_like_a_key(text[span[0] : span[1]]))
    return _splice(text, keys, SecretKind.HIGH_ENTROPY, found)


def _starts_a_word(text: str, literal: str) -> bool:
    """Whether ``literal`` is in ``text`` where no letter, digit or ``_`` comes before it (what the
    look-behind of :func:`_word` accepts)."""
    at = text.find(literal)
    while at > 0 and text[at - 1] in _WORD_CHARS:
        at = text.find(literal, at + 1)
    return at != -1


def _run(text: str, found: list[SecretKind] | None) -> str:
    original = text
    lowered = text.lower()
    # Most text: no rule's regex is compiled or run. The tests are written out (a generator or a
    # method call per rule costs more than the substring searches).
    for literal, word_start, hints, rule in _GATES:
        if literal and (literal not in text or (word_start and not _starts_a_word(text, literal))):
            continue
        if hints:
            for hint in hints:
                if hint in lowered:
                    break
            else:
                continue
        if not rule.holds_required(text):
            continue
        pattern = rule.pattern
        if pattern.search(text) is not None:  # most text matches no rule: no replacer to build
            text = pattern.sub(_replacer(rule, found), text)
    if "-us" in lowered:
        text = _redact_mailchimp(text, found)
    for hint in _ASSIGNMENT_HINTS:
        if hint in lowered:
            if "=" in text:
                text = _redact_env_assignments(text, found)
            text = _redact_assignments(text, found)
            break
    for hint in _HINTED_HINTS:
        if hint in lowered:
            text = _redact_hinted_assignments(text, found, lowered if text is original else None)
            break
    return text


_GATES = tuple((rule.literal, rule.word_start, rule.hints, rule) for rule in _RULES)
"""Each rule with the tests a text must pass before its regex runs."""
_ASSIGNMENT_HINTS = (*_NAME_HINTS, *_ENV_HINTS)


_MEMO_MAX_CHARS = 256
_MEMO_ENTRIES = 4096
_memo: dict[str, str] = {}
"""Short strings already redacted, and their redaction (:func:`redact` is a pure function). The
state a hook saves repeats the same short strings (keys, signatures, excerpts) turn after turn,
and a long-lived process (the per-turn helper) redacts them again on every turn. Bounded: cleared
when full."""


def redact(text: str) -> str:
    """Return ``text`` with every recognised secret replaced by ``[REDACTED:<kind>]``."""
    if not text:
        return text
    if len(text) > _MEMO_MAX_CHARS:
        return _run(text, None)
    clean = _memo.get(text)
    if clean is None:
        clean = _run(text, None)
        if len(_memo) >= _MEMO_ENTRIES:
            _memo.clear()
        _memo[text] = clean
    return clean


def find_secrets(text: str) -> list[SecretKind]:
    """The kinds of secret :func:`redact` would remove from ``text``, in rule order."""
    found: list[SecretKind] = []
    _run(text, found)
    return found


def scrub(value: Any) -> Any:
    """The one redaction every writer applies before anything leaves ctxhealth: files under the
    home and the state root, ledger rows, the hooks' cache, hook output and printed checkpoints.

    Takes text, UTF-8 bytes (a serialised document: redacting it leaves valid JSON valid) or a
    JSON-like value (see :func:`redact_value`), and returns the same kind.
    """
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", errors="surrogateescape")
        clean = redact(text)
        return bytes(value) if clean == text else clean.encode("utf-8", errors="surrogateescape")
    return redact_value(value)


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dicts, lists, tuples), string keys included
    (a cache keyed by file names or call signatures carries transcript text in its keys).

    A dict entry whose key itself names a secret (``{"api_key": "..."}``) has its string
    value replaced whole, whatever it looks like.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return _redact_dict(value)
    if isinstance(value, list | tuple):
        return [item if type(item) in _SCALARS else redact_value(item) for item in value]
    return value


def _redact_dict(value: dict[Any, Any]) -> dict[Any, Any]:
    # A report holds the same keys and short strings over and over: the memo is read here directly
    # (a call of ``redact`` per string cost more than the lookup), and a key is judged once.
    memo = _memo
    out: dict[Any, Any] = {}
    for key, item in value.items():
        kind = type(item)
        if isinstance(key, str):
            if kind is str and _is_secret_key(key) and _is_secret_value(item):
                out[key] = _marker(SecretKind.ASSIGNMENT)
                continue
            clean = memo.get(key)
            key = redact(key) if clean is None else clean
        if kind in _SCALARS:  # numbers, booleans and None (most of a report) hold no text
            out[key] = item
        elif kind is str:
            clean = memo.get(item)
            out[key] = redact(item) if clean is None else clean
        else:
            out[key] = redact_value(item)
    return out


_SCALARS = frozenset({int, float, bool, type(None)})
_SECRET_KEY = r"^[A-Za-z0-9_.-]*?" + _SECRET_NAME + r"$"


def _is_secret_key(key: str) -> bool:
    known = _secret_keys.get(key)
    if known is None:
        if len(_secret_keys) >= _MEMO_ENTRIES:
            _secret_keys.clear()
        known = _secret_keys[key] = _judge_key(key)
    return known


_secret_keys: dict[str, bool] = {}
"""Keys already judged by :func:`_judge_key` (a report repeats its keys), bounded as ``_memo``."""


def _judge_key(key: str) -> bool:
    # Each name of ``_SECRET_NAME`` holds one of ``_NAME_HINTS``: most keys need no regex. Only for
    # ASCII keys: ``re.I`` also folds a few other letters onto ASCII ones (the Kelvin sign on ``k``).
    if key.isascii():
        lowered = key.lower()
        if not any(hint in lowered for hint in _NAME_HINTS):
            return False
    return bool(lazy.pattern(_SECRET_KEY, re.I).match(key))


def redact_message(message: Message) -> Message:
    """``message`` with every text, thinking, tool input, tool output and compaction summary redacted
    (the same object when nothing changed).

    Anything that keeps excerpts of messages redacts them with this *before* it normalises them:
    a failure signature with its digits masked (``sk-proj-abcNNN``) no longer looks like a key.
    """
    from msgspec.structs import replace

    from ctxhealth.model import CompactionSummary, TextBlock, ThinkingBlock, ToolCall, ToolResult

    blocks = []
    changed = False
    for block in message.blocks:
        clean: Any = block
        if isinstance(block, TextBlock | ThinkingBlock | ToolResult | CompactionSummary):
            text = redact(block.text)
            if text != block.text:
                clean = replace(block, text=text)
        elif isinstance(block, ToolCall):
            value = redact_value(block.input)
            if value != block.input:
                clean = replace(block, input=value)
        changed = changed or clean is not block
        blocks.append(clean)
    return replace(message, blocks=tuple(blocks)) if changed else message
