"""The failure verdict's text gate in C (``_native.error_gate``) is its Python definition
(``failures._error_gate_py``): on any Unicode (lone surrogates too), with every phrase at every
offset around the head/tail cut, in every case variant, and on every tool result of the real
sessions; and :func:`~ctxhealth.failures.text_looks_failed` through either gate is the one pattern
on the probe.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth import failures
from ctxhealth.native import KERNELS

if KERNELS is None:
    pytest.skip("the C extension is not built (or CTXHEALTH_NATIVE=0)", allow_module_level=True)

_gate = KERNELS.error_gate
_PATTERN = re.compile(failures.ERROR_TEXT, re.M)

_NEEDLES = [
    "rror",
    "RROR",
    "Exception",
    "Exception: ",
    "Error: ",
    "Error",
    "ERROR",
    "error",
    "\nError",
    "\nERROR",
    "\nerror",
    "\nError: x",
    "\nKeyError: x",
    "Traceback (most recent call last)",
    "<tool_use_error>",
    "command not found",
    "No such file or directory",
]
_VARIANTS = [
    v for n in _NEEDLES for v in {n, n.lower(), n.upper(), n.swapcase(), n.title(), n[:-1], n[1:]} if v
]
_PIECES = [*_VARIANTS, "\n", "\r\n", "\u2028", "\x85", " ", "\t", "é", "\ud800", "\udfff", "😀", "_", "x1"]


def _via_python(text: str) -> bool:
    """text_looks_failed with the Python gate."""
    kept = failures._error_gate
    failures._error_gate = failures._error_gate_py
    try:
        return failures.text_looks_failed(text)
    finally:
        failures._error_gate = kept


def _assert_agrees(text: str) -> None:
    assert _gate(text) == failures._error_gate_py(text), repr(text[:80])
    expected = _PATTERN.search(failures._probe(text)) is not None
    assert failures.text_looks_failed(text) == expected
    assert _via_python(text) == expected


_ANY_CHAR = st.characters(exclude_categories=())
"""Any code point, lone surrogates included."""
texts = st.lists(st.sampled_from(_PIECES) | st.text(_ANY_CHAR, max_size=8), max_size=60).map("".join)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_the_gate_is_its_definition_on_any_text(text: str) -> None:
    _assert_agrees(text)


@settings(max_examples=200, deadline=None)
@given(
    st.text(_ANY_CHAR, max_size=30),
    st.integers(min_value=2300, max_value=2600),
    st.sampled_from(["a", "é", "\u4e00", "😀", "\ud800"]),
    st.sampled_from(_VARIANTS),
    st.integers(min_value=0, max_value=2600),
)
def test_the_gate_is_its_definition_on_long_texts(
    head: str, size: int, fill: str, needle: str, at: int
) -> None:
    """Long texts of every string width, a needle anywhere (the cut included)."""
    body = (head + fill * size)[:size]
    at = min(at, len(body))
    _assert_agrees(body[:at] + needle + body[at:])


@pytest.mark.parametrize("fill", ["a", "\u4e00", "😀"])
@pytest.mark.parametrize("needle", _NEEDLES)
def test_every_needle_at_every_offset_around_the_cut(fill: str, needle: str) -> None:
    """Each needle at every offset of a text just short and just long enough to be cut, and across
    both cuts (the head's end, the tail's start) of a long one."""
    half = failures._HALF
    for size in (2 * half - len(needle), 2 * half - len(needle) + 1, 2 * half + 500):
        base = fill * size
        offsets = (
            set(range(0, 40))
            | set(range(half - 40, half + 40))
            | set(range(size - half - 40, size - half + 40))
        )
        offsets |= set(range(size - 40, size + 1))
        for at in sorted(o for o in offsets if 0 <= o <= size):
            _assert_agrees(base[:at] + needle + base[at:])


def test_the_gate_bits_on_examples() -> None:
    """The bits themselves (not only the two sides agreeing): each example finds what it holds."""
    any_, phrase, named, opening = failures._ANY, failures._PHRASE, failures._NAMED, failures._OPENING
    assert _gate("all fine") == 0
    assert _gate("ERRO") == 0
    assert _gate("x rror") == any_
    assert _gate("<tool_use_error>") == any_ | phrase
    assert _gate("cmd: command not found") == any_ | phrase
    assert _gate("KeyError: 'k'") == any_ | named
    assert _gate("Error x") == any_ | opening
    assert _gate("ok\nerror: x") == any_ | opening
    assert _gate("Exception: x") == any_ | named
    long = "a" * 1300 + "Error: x" + "a" * 1300
    assert _gate(long) == 0  # between head and tail: not read
    assert _gate("a" * 1300 + "b" * 1200 + "Error") == any_  # the tail
    assert (
        _gate("a" * 1300 + "Error" + "b" * 1195) == any_ | opening
    )  # the tail starts after the joining "\n"
    assert _gate("a" * 1200 + "\n" + "b" * 1200 + "Error") == any_


def test_the_gate_takes_only_str() -> None:
    with pytest.raises(TypeError):
        _gate(b"Error: x")  # type: ignore[arg-type]


_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.mark.skipif(not _DATA.is_dir(), reason="the real sessions are not here")
def test_the_gate_is_its_definition_on_every_real_tool_result() -> None:
    from conftest import real_tool_outputs

    outputs = real_tool_outputs()
    assert len(outputs) > 1_000
    failed = 0
    for text in outputs:
        _assert_agrees(text)
        failed += failures.text_looks_failed(text)
    assert failed > 50
