"""Redaction: a canary set of common key formats never survives; ordinary text is left alone.

Canaries are assembled at run time (prefix + body) so no key-shaped literal sits in the repository.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.redact import SecretKind, find_secrets, redact, redact_value

BODY = "Zq7X" + "r2Lm9Tb4Kw8Np3Vd6Hs1Jc5Fg0"  # 28 mixed chars


def _canaries() -> dict[str, tuple[str, str]]:
    """name -> (text containing the secret, the secret itself)."""
    anthropic = "sk-" + "ant-api03-" + BODY + "_-" + BODY
    openai_proj = "sk-" + "proj-" + BODY + BODY
    openai_legacy = "sk-" + BODY + "T3Blbk" + "FJ" + BODY[:12]
    aws = "AKIA" + "Q3EXAMPLE7Z2WX4Y"
    github_classic = "ghp" + "_" + BODY + "abcdEFGH"
    github_fine = "github" + "_pat_" + "11ABCDEFG0" + BODY + "_" + BODY
    slack = "xox" + "b-" + "1234567890-0987654321-" + BODY
    google = "AI" + "za" + "Sy" + BODY + "12345"
    jwt = "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0." + BODY
    bearer = "Bearer9" + BODY
    pem_body = "MIIEpAIBAAKCAQEA" + BODY + "\n" + BODY + "==\n"
    pem = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + pem_body + "-----END RSA PRIVATE KEY-----"
    return {
        "anthropic": (f"export ANTHROPIC_KEY_VALUE {anthropic} now", anthropic),
        "openai-proj": (f"client = OpenAI(key='{openai_proj}')", openai_proj),
        "openai-legacy": (f"using {openai_legacy} for the call", openai_legacy),
        "aws": (f"AWS id {aws} in config", aws),
        "github-classic": (f"git clone https://{github_classic}@github.com/x/y", github_classic),
        "github-fine": (f"token is {github_fine}.", github_fine),
        "slack": (f"slack: {slack}", slack),
        "google": (f"maps?key={google}&q=1", google),
        "jwt": (f"cookie session={jwt}; path=/", jwt),
        "bearer-header": (f"Authorization: Bearer {bearer}", bearer),
        "bearer-curl": (f'curl -H "authorization: bearer {bearer}" https://api', bearer),
        "pem": (f"key file:\n{pem}\nend", pem_body.strip()),
        "api_key": ("api_key=" + "q8w7e6r5t4y3", "q8w7e6r5t4y3"),
        "password": ("db password = " + "hunter2!x", "hunter2!x"),
        "json-secret": ('{"client_secret": "' + "zzSecretValue99" + '"}', "zzSecretValue99"),
        "env-token": ("export GITHUB_TOKEN=" + "abc123def456", "abc123def456"),
        "url-credentials": ("postgres://admin:" + "Pa55word9" + "@db:5432/app", "Pa55word9"),
    }


CANARIES = _canaries()


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_canary_is_redacted(name: str) -> None:
    text, secret = CANARIES[name]
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    assert find_secrets(text), name


def test_all_canaries_in_one_document() -> None:
    doc = "\n".join(text for text, _ in CANARIES.values())
    out = redact(doc)
    for name, (_, secret) in CANARIES.items():
        assert secret not in out, name


def test_kinds_are_reported() -> None:
    kinds = find_secrets(CANARIES["anthropic"][0] + " " + CANARIES["aws"][0])
    assert SecretKind.ANTHROPIC in kinds and SecretKind.AWS in kinds


ORDINARY = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "session 123e4567-e89b-12d3-a456-426614174000 resumed",
    "/home/user/projects/sk-learn-experiments/model_tokenizer.py:42",
    "max_tokens=4096 input_tokens: 1200 token_count=55 password_required=true",
    "the token budget is 500 and the key insight is caching",
    "password: ${DB_PASSWORD} api_key=<your-key> token=***",
    "Authorization header missing; set a bearer token",
    "import os; x = dict(a=1, b=2)",
    "ghp is a prefix and AKIA is too, but these are words",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text
    assert find_secrets(text) == []


def test_redact_value_walks_structures_and_secret_keys() -> None:
    value = {
        "messages": [{"text": CANARIES["slack"][0]}, ("x", CANARIES["aws"][0])],
        "api_key": "plainlooking",
        "tokens": 12,
        "path": "/a/b.py",
    }
    out = redact_value(value)
    flat = repr(out)
    assert CANARIES["slack"][1] not in flat and CANARIES["aws"][1] not in flat
    assert out["api_key"] == "[REDACTED:secret]"
    assert out["tokens"] == 12 and out["path"] == "/a/b.py"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.printable, max_size=300))
def test_redact_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=100, deadline=None)
@given(
    prefix=st.text(alphabet=string.ascii_letters + " \n.,:;()", max_size=80),
    suffix=st.text(alphabet=string.ascii_letters + " \n.,:;()", max_size=80),
    name=st.sampled_from(sorted(CANARIES)),
)
def test_canary_never_survives_any_surrounding_text(prefix: str, suffix: str, name: str) -> None:
    text, secret = CANARIES[name]
    assert secret not in redact(f"{prefix} {text} {suffix}")


def test_markers_are_never_nested() -> None:
    token = "ghp" + "_" + BODY + "abcdEFGH"
    assert redact(f"https://{token}@github.com/x") == "https://[REDACTED:github-token]@github.com/x"
    assert redact(f"https://user:{token}@github.com/x") == "https://user:[REDACTED:github-token]@github.com/x"
    for text, _ in CANARIES.values():
        assert "[REDACTED:[REDACTED" not in redact(text)


@pytest.mark.parametrize(
    "code",
    [
        "password = password",
        "secret = self.secret",
        "token = generator.make_token(user)",
        "passwd = conn_params.get('passwd')",
        "password = self.cleaned_data['password']",
        "password = raw_password",
        'print("password = None\\n")',
        "password = models.CharField(max_length=100)",
    ],
)
def test_code_that_names_secrets_is_not_redacted(code: str) -> None:
    assert redact(code) == code


def test_quoted_literal_assigned_to_a_secret_name_is_redacted() -> None:
    assert redact("SECRET_KEY = 'django-insecure-abc'") == "SECRET_KEY = '[REDACTED:secret]'"
    assert redact('"password": "Tr0ub4dor"') == '"password": "[REDACTED:secret]"'


_IDS = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{40}\b|\b[0-9a-f]{64}\b"
    r"|\b(?:msg|toolu|req|call)_[A-Za-z0-9]{10,}\b"
)


def test_real_transcripts_keep_their_ids_and_hashes(claude_code_data: Path) -> None:
    files = sorted(claude_code_data.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    budget, seen = 3_000_000, 0
    checked = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        if seen + len(text) > budget:
            break
        seen += len(text)
        out = redact(text)
        ids = set(_IDS.findall(text))
        assert ids <= set(_IDS.findall(out)), path.name
        checked += len(ids)
    assert checked > 100  # the sample really holds session ids, message uuids and hashes


def test_every_canary_format_is_redacted_in_text_and_in_serialised_json() -> None:
    import json

    from canaries import canaries
    from ctxhealth.redact import scrub

    found = canaries()
    assert len(found) >= 30
    for name, (text, secret) in found.items():
        assert secret not in redact(text), name
        for document in ({"x": text}, {"x": [text, {"y": text}]}):
            clean = scrub(json.dumps(document).encode())
            assert secret.encode() not in clean, name
            json.loads(clean)  # still valid JSON


@pytest.mark.parametrize(
    "text",
    [
        "the token is valid and the password was changed.",
        "if secret is None:\n    secret = make()",
        "curl -v --digest --user user:passwd http://example.com/",
        "AUTH_USER_MODEL=auth.User MAX_TOKENS=4096 SSL_KEY=/etc/ssl/key.pem TOKEN=$T",
        "SENSITIVE_CREDENTIALS = _lazy_re_compile('api|token')",
        '{"api_key": 12.5e3, "token": null, "password": true}',
    ],
)
def test_ordinary_text_near_secret_words_is_untouched(text: str) -> None:
    assert redact(text) == text


def test_each_rules_leading_literal_is_what_the_regex_parser_reads() -> None:
    """A rule is skipped for text without its literal: the literal must be exactly the LITERAL
    characters the pattern starts with (never a branch of a top-level alternation, never a character
    a quantifier makes optional)."""
    from re import _constants, _parser  # type: ignore[attr-defined]

    from ctxhealth.redact import _RULES

    for rule in _RULES:
        parsed = list(_parser.parse(rule.source, rule.flags))
        expected = ""
        if not rule.flags & re.I:
            for op, argument in parsed:
                if op is not _constants.LITERAL:
                    break
                expected += chr(argument)
        assert rule.literal == expected, rule.source


def test_every_match_holds_its_rules_literal_and_a_hint() -> None:
    """The literal and the hints are tests a text must pass before its rule's regex runs: every
    match of a rule in the canaries (one per format) holds them."""
    from canaries import canaries
    from ctxhealth.redact import _RULES

    texts = [text for text, _ in canaries().values()] + [text for text, _ in CANARIES.values()]
    matched = set()
    for rule in _RULES:
        for text in texts:
            for match in rule.pattern.finditer(text):
                matched.add(rule.source)
                assert match.group(0).startswith(rule.literal), rule.source
                if rule.hints:
                    window = text[max(0, match.start() - 64) : match.end()].lower()
                    assert any(hint in window for hint in rule.hints), (rule.source, text)
    assert len(matched) >= 30  # the canaries exercise the rules


def test_redacting_text_without_candidates_compiles_no_rule() -> None:
    """Patterns compile only for text that holds their literal or a hint: ``check`` redacts short
    report strings, and compiling all of them cost a process ~10 ms."""
    import subprocess
    import sys

    probe = (
        "from ctxhealth import redact as r\n"
        "assert r.redact_value({'model': 'claude-sonnet-4-5', 'fill': 0.5, 'zone': 'green'})"
        " == {'model': 'claude-sonnet-4-5', 'fill': 0.5, 'zone': 'green'}\n"
        "print(sum(rule._pattern is not None for rule in r._RULES))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"
