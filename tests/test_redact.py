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

from ctxhealth import lazy
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
    """A rule is skipped for text without its literal: the literal must be the LITERAL characters
    the pattern starts with (or the first of them), read into a leading capturing group (never a
    branch of a top-level alternation, never a character a quantifier makes optional). A rule that
    checks its literal starts a word has the look-behind of ``_word`` right after it."""
    from re import _constants, _parser  # type: ignore[attr-defined]

    from ctxhealth.redact import _RULES

    for rule in _RULES:
        parsed = list(_parser.parse(rule.source, rule.flags))
        if parsed and parsed[0][0] is _constants.SUBPATTERN and parsed[0][1][0] is not None:
            parsed = list(parsed[0][1][3])  # a leading capturing group: its own items
        expected, after = "", None
        if not rule.flags & re.I:
            for op, argument in parsed:
                if op is not _constants.LITERAL:
                    after = (op, argument)
                    break
                expected += chr(argument)
        # the parser may read more (``mysql|mariadb`` starts with ``m``): a shorter literal is safe
        assert expected.startswith(rule.literal), rule.source
        if rule.word_start:
            assert rule.literal == expected, rule.source
            assert after is not None and after[0] is _constants.ASSERT_NOT and after[1][0] == -1
            behind = [op for op, _ in after[1][1]]
            assert behind == [_constants.IN] + [_constants.LITERAL] * len(expected), rule.source


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


# ---------------------------------------------------------------- the gates against the plain rules


def _plain_run(text: str, found: list[SecretKind] | None) -> str:
    """The redaction with no gate: every rule's regex run over every text (what ``_run`` must equal;
    its literals, word starts and hints only skip regexes that cannot match)."""
    from ctxhealth import redact as r

    for rule in r._RULES:
        text = rule.pattern.sub(r._replacer(rule, found), text)
    text = r._redact_mailchimp(text, found)
    text = r._redact_env_assignments(text, found)
    text = r._redact_assignments(text, found)
    return r._redact_hinted_assignments(text, found)


def _plain_value(value: object) -> object:
    """``redact_value`` written plainly: every string, keys included, by ``_plain_run``."""
    from ctxhealth import redact as r

    if isinstance(value, str):
        return _plain_run(value, None) if value else value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if (
                isinstance(key, str)
                and isinstance(item, str)
                and r.lazy.pattern(r._SECRET_KEY, re.I).match(key)
                and r._is_secret_value(item)
            ):
                out[key] = "[REDACTED:secret]"
            else:
                out[_plain_value(key) if isinstance(key, str) else key] = _plain_value(item)
        return out
    if isinstance(value, list | tuple):
        return [_plain_value(item) for item in value]
    return value


def _pieces() -> list[str]:
    """Secret shapes and the near misses the gates look at: every canary, cut anywhere later, each
    rule's literal, words that hold a literal inside them (``task_id``, ``undo``), separators."""
    from canaries import canaries
    from ctxhealth.redact import _RULES

    texts = [text for text, _ in canaries().values()] + [text for text, _ in CANARIES.values()]
    literals = sorted({rule.literal for rule in _RULES if rule.literal})
    literals += sorted({lit for rule in _RULES for lit in lazy.required_literals(rule.source, rule.flags)})
    words = ["task_id", "undoing", "risk_model", "xACx", "post_tokens", "MNOP.", "api_key", "https://u:p@h"]
    return texts + literals + words + [" ", "_", "=", ":", "-", ".", "/", "'", '"', "\n", "@", "K", "ſ"]


_PIECES = _pieces()
_SHAPED = st.lists(
    st.one_of(
        st.sampled_from(_PIECES).flatmap(
            lambda p: st.tuples(st.integers(0, len(p)), st.integers(0, len(p))).map(
                lambda ij: p[ij[0] : ij[1] or None]
            )
        ),
        st.text(alphabet=string.ascii_letters + string.digits + "_-.:=/@ ", max_size=12),
    ),
    max_size=8,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(_SHAPED)
def test_the_gated_redaction_equals_every_rule_run_plainly(text: str) -> None:
    from ctxhealth.redact import _run

    found: list[SecretKind] = []
    plain: list[SecretKind] = []
    assert _run(text, found) == _plain_run(text, plain)
    assert found == plain


def test_the_gated_redaction_equals_the_plain_one_on_each_canary() -> None:
    from ctxhealth.redact import _run

    for text in _PIECES:
        assert _run(text, None) == _plain_run(text, None), text


_FOLDS = {"s": "ſ", "k": "\u212a", "i": "ı", "I": "İ"}
"""Letters ``re.I`` folds onto ASCII ones (the long s, the Kelvin sign, the dotted and dotless i)."""


@st.composite
def _keys(draw: st.DrawFn) -> str:
    """Keys around the secret names, some letters swapped for what ``re.I`` folds onto them."""
    name = draw(st.sampled_from(["", "api_key", "token", "PASSWORD", "passphrase", "secret", "tokens"]))
    name = "".join(_FOLDS.get(c, c) if draw(st.booleans()) else c for c in name)
    side = draw(st.text(alphabet="apikeysecrtonwdhgu_-.0" + "".join(_FOLDS.values()), max_size=12))
    return draw(st.sampled_from([side + name, name + side, name]))


@settings(max_examples=500, deadline=None)
@given(_keys())
def test_the_secret_key_test_equals_its_pattern(key: str) -> None:
    from ctxhealth import redact as r

    assert r._is_secret_key(key) == bool(r.lazy.pattern(r._SECRET_KEY, re.I).match(key)), key


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.one_of(_SHAPED, st.integers(), st.floats(allow_nan=False), st.booleans(), st.none()),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(
                st.one_of(_SHAPED, st.sampled_from(["api_key", "token", "x"])), inner, max_size=4
            ),
        ),
        max_leaves=12,
    )
)
def test_redact_value_equals_its_plain_definition(value: object) -> None:
    assert redact_value(value) == _plain_value(value)


def test_every_check_report_of_the_data_redacts_as_the_plain_definition(claude_code_data: Path) -> None:
    """``check``'s reports of the real sessions (every folder of the data), redacted by the gated
    walk and by the plain one: the same objects."""
    import os

    from ctxhealth.config import load_settings
    from ctxhealth.policy.profile import resolve_profile
    from ctxhealth.report.assessed import check_session
    from ctxhealth.sources import read_sessions

    settings_ = load_settings({}, os.environ, Path.cwd())
    registry = settings_.registry()
    profile = resolve_profile(settings_.profile, settings_.profile_overrides)
    checked = 0
    folders = [p for p in claude_code_data.parent.iterdir() if p.is_dir() and p.name != "packing"]
    for folder in sorted(folders):  # packing: tasks for ``pack``, no transcripts
        for session in read_sessions((str(folder),), on_skip=lambda skipped: None):
            report = check_session(session, registry=registry, profile=profile)
            assert redact_value(report) == _plain_value(report), session.path
            checked += 1
    assert checked > 250
