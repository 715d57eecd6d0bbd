"""``ctxhealth.lazy``: the literals every match of a pattern holds, read without the regex parser,
and the search that skips a text without them. Checked against the regex parser's own reading
and against ``re.search``."""

from __future__ import annotations

import re
import string
from re import _constants, _parser  # type: ignore[attr-defined]

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth import lazy


def _parser_runs(source: str, flags: int) -> list[str] | None:
    """The top-level runs of LITERAL items the regex parser reads: every match holds each (None for a
    pattern that is case-insensitive, where no literal stands for itself)."""
    parsed = _parser.parse(source, flags)
    if parsed.state.flags & (re.I | re.X):
        return None
    runs, run = [], ""
    for op, argument in parsed:
        if op is _constants.LITERAL:
            run += chr(argument)
        else:  # anything else ends a run (a branch too: the parser reads ``ab|ac`` as ``a`` + a branch)
            runs.append(run)
            run = ""
    return [*runs, run]


def _sound(source: str, flags: int = 0) -> None:
    ours = lazy.required_literals(source, flags)
    runs = _parser_runs(source, flags)
    if runs is None:
        assert ours == (), source
    for literal in ours:
        assert runs is not None and any(literal in run for run in runs), (source, literal, runs)


def _known_patterns() -> list[tuple[str, int]]:
    from ctxhealth.accounting.registry import FAMILIES
    from ctxhealth.redact import _RULES

    return [(f.pattern, 0) for f in FAMILIES] + [(rule.source, rule.flags) for rule in _RULES]


def test_the_literals_of_every_family_and_rule_are_what_the_parser_reads() -> None:
    for source, flags in _known_patterns():
        _sound(source, flags)
    # and they are not empty where the parser reads a run: the gate does skip texts
    from ctxhealth.accounting.registry import FAMILIES

    assert all(lazy.required_literals(f.pattern) for f in FAMILIES)
    assert lazy.required_literals(r"(?<![a-z0-9])claude[-._ ]?3[-._ ]?opus(?![a-z])") == (
        "claude",
        "3",
        "opus",
    )


_PIECES = [
    "a", "b", "ab", "-", "3", "x}", "\\.", "\\d", "\\b", "\\1", "[ab]", "[]a]", "[^]b]", "[a\\]]",
    "(a|b)", "(?:ab)", "(?<![a-z])", "(?=c)", "(?P<n>a)", "*", "+", "?", "*?", "{2}", "{1,3}", "{x}", "{,2}",
    "|", "^", "$", ".", "(?i)", "(?i:a)", "(?#c)", "\\x41", "\\u0062", "\\N{LATIN SMALL LETTER A}",
    "\\101", "\\0", "\\12", "\\A", "\\Z",
]  # fmt: skip


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    source = "".join(draw(st.lists(st.sampled_from(_PIECES), max_size=8)))
    try:
        re.compile(source)
    except re.error:
        return "a"
    return source


@settings(max_examples=800, deadline=None)
@given(_patterns())
def test_the_literals_are_sound_for_any_pattern(source: str) -> None:
    _sound(source)


@settings(max_examples=800, deadline=None)
@given(_patterns(), st.text(alphabet="ab3c-x}.{", max_size=12))
def test_search_finds_what_re_finds(source: str, text: str) -> None:
    found, expected = lazy.search(source, text), re.search(source, text)
    assert (found and found.span()) == (expected and expected.span())


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_known_patterns()[:32]),
    st.lists(
        st.sampled_from(["claude", "opus", "sonnet", "haiku", "3", "5", "-", ".", "gpt", "4o", "mini", "o1"])
        | st.text(alphabet=string.ascii_lowercase + string.digits + "-._", max_size=4),
        max_size=6,
    ).map("".join),
)
def test_search_of_a_family_finds_what_re_finds(known: tuple[str, int], key: str) -> None:
    source, flags = known
    assert bool(lazy.search(source, key, flags)) == bool(re.search(source, key, flags))
