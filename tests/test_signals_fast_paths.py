"""The fast paths of the signal layer give exactly what the plain definitions give.

Each check compares the optimised code with a straightforward reference written here: the error
text and signature regexes applied to the whole probe, and the drift window rebuilt from the
concatenated output text.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.model import ToolResult
from ctxhealth.signals import calls
from ctxhealth.signals.calls import error_signature, is_failure

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
    line = found[-1] if found else (probe.strip().splitlines() or [""])[-1]
    return re.sub(r"\d+", "N", line.strip())[:160]


_PIECES = [
    "Error",
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
