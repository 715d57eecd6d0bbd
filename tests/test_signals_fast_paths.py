"""The fast paths of the signal layer give exactly what the plain definitions give.

Each check compares the optimised code with a straightforward reference written here: the error
text and signature regexes applied to the whole probe, the shell splitting and redirection patterns
as plain regexes, and the drift window kept as one tail string recounted the plain way.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import PlainDriftWindow
from ctxhealth.failures import is_failure
from ctxhealth.model import Message, Role, TextBlock, ToolResult
from ctxhealth.policy.profile import Profile
from ctxhealth.signals import calls
from ctxhealth.signals.calls import error_signature
from ctxhealth.signals.drift import DriftDetector
from ctxhealth.signals.events import EventBuilder
from ctxhealth.signals.text import content_words

_ERROR_TEXT = re.compile(
    r"Traceback \(most recent call last\)|<tool_use_error>|command not found|No such file or directory|"
    r"^(?:Error|ERROR|error)[:\s]|^\w*(?:Error|Exception): ",
    re.M,
)
_SIGNATURE = re.compile(
    r"^\s*(\w*(?:Error|Exception)\b.*|error: .*|.*command not found.*|.*No such file.*)$", re.M
)


def reference_is_failure(text: str) -> bool:
    probe = text if len(text) <= 2400 else text[:1200] + "\n" + text[-1200:]
    return _ERROR_TEXT.search(probe) is not None


def reference_signature(text: str) -> str:
    probe = text if len(text) <= 4000 else text[:1000] + "\n" + text[-3000:]
    found = _SIGNATURE.findall(probe)
    return re.sub(r"\d+", "N", found[-1].strip())[:160] if found else ""


_PIECES = [
    "Error",
    "Errors",
    "xException\n",
    "\u2028",
    "\x85",
    "error: ",
    "ERROR ",
    "ValueError: bad",
    "Exception",
    " command not found",
    "No such file or directory",
    "Traceback (most recent call last):",
    "<tool_use_error>",
    "\n",
    "\n\n",
    "  ",
    "\t",
    "\r",
    "ok",
    "x1",
    "42",
    ":",
    "é",
    "_",
    "KeyError",
    "line",
]
texts = st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_error_text_fast_path_matches_the_plain_regex(text: str) -> None:
    result = ToolResult("c", text)
    assert is_failure(result) == reference_is_failure(text)
    assert error_signature(result) == reference_signature(text)


def test_the_failure_fast_path_tries_every_alternative_of_the_pattern() -> None:
    """text_looks_failed tests the pattern's alternatives one by one: they must be all of it."""
    from ctxhealth import failures

    alternatives = failures.ERROR_TEXT.split("|")
    assert [a.replace("\\", "") for a in alternatives[:4]] == list(failures._PHRASES)
    assert "|".join(alternatives[4:]) == f"{failures._AT_LINE_START}|{failures._NAMED_ERROR}"


def test_the_failure_hints_let_every_kind_of_error_text_through() -> None:
    """The substring gate before the pattern passes one example of each alternative (and of each
    spelling the line-start alternatives allow)."""
    examples = [
        "Traceback (most recent call last)",
        "<tool_use_error>",
        "sh: foo: command not found",
        "cat: x: No such file or directory",
        "Error: x",
        "ERROR x",
        "error\tx",
        "KeyError: 'k'",
        "ValueException: bad",
        "ok\nMyException: e",
    ]
    for text in examples:
        assert is_failure(ToolResult("c", text)) and reference_is_failure(text), text


_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.mark.skipif(not _DATA.is_dir(), reason="the real sessions are not here")
def test_error_signature_is_the_plain_regex_on_every_real_tool_result() -> None:
    """The signature line found from the hints backwards is the regex's last line on every output
    of the real sessions (errors on several lines, hints on lines that do not match)."""
    from conftest import real_tool_outputs

    outputs = real_tool_outputs()
    assert len(outputs) > 1_000
    signed = 0
    for text in outputs:
        found = error_signature(ToolResult("c", text))
        assert found == reference_signature(text)
        signed += bool(found)
    assert signed > 50


def test_error_signature_long_output_keeps_the_last_error_line() -> None:
    text = "ValueError: first 1\n" + "x" * 5000 + "\n  KeyError: 'k' at 12\nok\n"
    assert error_signature(ToolResult("c", text)) == reference_signature(text) == "KeyError: 'k' at N"


_SEGMENT = re.compile(r"\s*(?:&&|\|\||;|\|(?!\|)|\n)\s*")
_REDIRECT = re.compile(r"(?<![0-9&<])>{1,2}\s*([^\s;&|<>]+)")
_SHELL_PIECES = [
    "&&",
    "&",
    "||",
    "|",
    ";",
    "\n",
    " ",
    "\t",
    ">",
    ">>",
    "2>",
    "&>",
    "<",
    "cat",
    "f.py",
    "x",
    "1",
]
commands = st.lists(st.sampled_from(_SHELL_PIECES) | st.text(max_size=3), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(commands)
def test_shell_splitting_matches_the_regex_split(command: str) -> None:
    expected = [w for w in (s.split() for s in _SEGMENT.split(command)) if w]
    got = [w for w in (s.split() for s in calls._segments(command)) if w]
    assert got == expected
    assert calls._REDIRECT.findall(command) == _REDIRECT.findall(command)


_VERIFY_WORDS = [
    "pytest",
    "py.test",
    "make test",
    "npm run lint",
    "go vet",
    "python3 -m pytest",
    "python t_check.py",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*_VERIFY_WORDS, " ", "x", "_", "-", "\n"]) | st.text(max_size=4), max_size=12)
)
def test_verify_pattern_finds_what_the_plain_pattern_finds(parts: list[str]) -> None:
    probe = "".join(parts)
    plain = re.compile(calls._VERIFY.pattern.replace("(?=[cefgjmnprtuvy])", "", 1))
    assert (calls._VERIFY.search(probe) is None) == (plain.search(probe) is None)


_WORDS = ["parser", "offsets", "tests", "green", "weather", "Lisbon", "the", "a", "x1", "fixing", "é"]
replies = st.lists(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=400).map(" ".join), min_size=1, max_size=12
)


@settings(max_examples=150, deadline=None)
@given(replies, st.sampled_from([60, 200, 2_000]))
def test_drift_window_matches_the_plain_definition(texts: list[str], limit: int) -> None:
    instruction = "Fix the parser so offsets round-trip and the tests stay green."
    profile = Profile(risk=None, drift_window_chars=limit)
    detector = DriftDetector(profile, sweet_spot=1)
    reference = PlainDriftWindow(instruction, limit)
    events = EventBuilder()
    detector.update(events.build(0, Message(Role.USER, (TextBlock(instruction),)), 0, 0))
    for i, text in enumerate(texts, start=1):
        detector.update(events.build(i, Message(Role.ASSISTANT, (TextBlock(text),)), i, 0))
        reference.add(text)
        assert detector.tail == reference.tail == "\n".join(texts[:i])[-limit:]
        assert detector.similarity == reference.similarity()


_HEDGE_PLAIN = re.compile(
    r"\b(?:but|however|hm{2,}|still|seems?|wait|actually|maybe|might|perhaps|probably|not sure)\b"
)
_HEDGE_PIECES = [
    "but",
    "But",
    "however",
    "hmm",
    "hmmmm",
    "hm",
    "still",
    "seems",
    "seem",
    "wait",
    "actually",
    "maybe",
    "might",
    "perhaps",
    "probably",
    "not sure",
    "not  sure",
    " ",
    "x",
    "_",
    "é",
    "2",
    "🚀",
    ".",
    "\n",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_HEDGE_PIECES) | st.text(max_size=3), max_size=30).map("".join))
def test_hedge_pattern_counts_what_the_plain_pattern_counts(text: str) -> None:
    from ctxhealth.signals.hedging import count_hedges

    assert count_hedges(text) == len(_HEDGE_PLAIN.findall(text.lower()))


def _reference_content_words(text: str) -> list[str]:
    from ctxhealth.signals.text import STOP_WORDS, WORD, stem

    return [stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS]


_WORD_PIECES = [
    "Testing",
    "the",
    "parser",
    "OFFSETS",
    "x1",
    "é",
    "🚀",
    "İstanbul",
    "\u212aelvin",
    "ΣΑΣ",
    "µs",
    "_a",
    " ",
    "\n",
    "?",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_WORD_PIECES) | st.text(max_size=4), max_size=40).map("".join))
def test_content_words_fast_path_matches_the_plain_definition(text: str) -> None:
    assert content_words(text) == _reference_content_words(text)


def test_content_words_stem_table_stays_bounded() -> None:
    from ctxhealth.signals import text as text_mod

    for i in range(text_mod.STEM_TABLE_LIMIT + 50):
        assert content_words(f"word{i} testing") == [f"word{i}", "test"]
    assert len(text_mod._STEMS) <= text_mod.STEM_TABLE_LIMIT + 2


_SENTENCE_PIECES = [
    "The parser keeps the offsets of every timestamp it reads",
    "THE PARSER KEEPS THE OFFSETS OF EVERY TIMESTAMP IT READS",
    "İstanbul offsets are parsed the same way as every other zone",
    "ΣΟΦΙΑ ΟΔΟΣ is a Greek street name that ends in a final sigma letter",
    "🚀 Results: the benchmark keeps every offset round-tripping now",
    ". ",
    "! ",
    "\n",
    "  ",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_SENTENCE_PIECES) | st.text(max_size=5), min_size=1, max_size=12))
def test_over_explanation_hashes_the_same_sentences_as_the_plain_way(parts: list[str]) -> None:
    from ctxhealth.signals.base import stable_hash
    from ctxhealth.signals.indicators import _SENTENCE, TEXT_LIMIT, IndicatorDetector

    text = "".join(parts)
    detector = IndicatorDetector(Profile(risk=None))
    detector._text(text, 1, 7)
    prose = text[:TEXT_LIMIT].split("```", 1)[0]
    expected = {stable_hash(" ".join(s.lower().split())) for s in _SENTENCE.findall(prose)}
    assert set(detector.sentences) == expected


_REVERSAL_PIECES = [
    "Actually, that",
    "actually it",
    "WAIT.",
    "wait,",
    "On second thought",
    "I was wrong",
    "İ was wrong",
    "ı made a mistake",
    "that was incorrect",
    "My previous fix was",
    "let me revert",
    "reverting the change",
    "scratch that",
    "I misread",
    "that didn't work",
    "That broke",
    "could you please provide",
    "Please share",
    "I don't have access",
    "what was the original task",
    "remind me",
    "I would need more context",
    "can you paste",
    "ſcratch that",
    " ",
    "é",
    "x",
    ".",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_REVERSAL_PIECES) | st.text(max_size=3), max_size=20).map("".join))
def test_indicator_patterns_match_where_the_plain_patterns_match(text: str) -> None:
    from ctxhealth.signals import indicators

    for fast, lookahead in (
        (indicators._CONTRADICTION, "(?=[awoitmlrs])"),
        (indicators._MISSING, "(?=[cpiwr])"),
    ):
        assert fast.pattern.startswith(lookahead)
        plain = re.compile(fast.pattern[len(lookahead) :], fast.flags)
        found, expected = fast.search(text), plain.search(text)
        assert (found and found.span()) == (expected and expected.span())
