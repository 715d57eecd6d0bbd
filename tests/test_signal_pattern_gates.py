"""The signals' patterns a run compiles only when a text may need them: each gate is checked against
the pattern it stands before (hypothesis texts built of the pattern's own pieces), and the count
that never compiles its definition against that definition."""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth.signals import calls, hedging, requests

_CODEX_PIECES = st.sampled_from(
    [*requests._CODEX_HEADS, "Exit code:", "Output:", "Output:\n", " 0", " 17", "\n", " ", "x", "Chunk", "ID"]
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_CODEX_PIECES, max_size=10).map("".join))
def test_a_codex_header_matches_only_a_text_starting_with_one_of_its_heads(text: str) -> None:
    """``clean_tool_text`` tries the header pattern only for a text starting with one of
    ``_CODEX_HEADS``: any text the pattern matches starts with one, and the cleaned text is the one
    the pattern tried on every text gives (the gate opened with the empty head)."""
    if re.match(requests._CODEX_HEADER, text) is not None:
        assert text.startswith(requests._CODEX_HEADS)
    gated = requests.clean_tool_text(text)
    heads = requests._CODEX_HEADS
    try:
        requests._CODEX_HEADS = ("",)  # every text starts with it: the pattern is always tried
        plain = requests.clean_tool_text(text)
    finally:
        requests._CODEX_HEADS = heads
    assert gated == plain


def test_the_gated_header_still_takes_a_codex_exec_header() -> None:
    text = "Chunk ID: 3\nWall time: 0.1s\nProcess exited with code 2\nOutput:\n"
    text += "boom <system-reminder>x</system-reminder>"
    assert requests.clean_tool_text(text) == "exit code 2\nboom"
    own = "Fix it.\n[CTXHEALTH -- NOTE] a note\nsecond line\n\nKeep going"
    assert requests.clean_user_text(own) == "Fix it.\n\n\nKeep going"


_HEDGE_TEXT = st.lists(
    st.sampled_from(
        [*hedging.HEDGE_WORDS, "Hmmm", "hmm", "HM", "But", "x", "_", "ß", "İ", "é", "-", " ", ".", "\n", "1"]
    ),
    max_size=14,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(_HEDGE_TEXT)
def test_the_hedge_count_is_its_definition(text: str) -> None:
    """The count (set of runs, the rare alternatives compiled on first use) is ``findall`` of the
    definition ``_HEDGE`` over the lower-cased text, which no count compiles."""
    assert hedging.count_hedges(text) == len(re.findall(hedging._HEDGE, text.lower()))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*calls._VERIFY_HINTS, "x", " ", "tes", "-"]), max_size=8).map("".join))
def test_the_verify_hint_gate_is_its_pattern(probe: str) -> None:
    """``_hinted`` (C with the kernels, else the pattern compiled on first use) says what the joined
    hints' pattern says."""
    expected = re.search(calls._VERIFY_HINT, probe) is not None
    assert calls._hinted_py(probe) is expected
    assert calls._hinted(probe) is expected


_HEAD_PIECES = st.sampled_from(
    [
        *(b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x85", b"\xa0", b"{", b"[", b":", b"x"),
        *(b'"messages"', b'"instance_id"', b'"history"', b'"response"', b'"choices"', b'"environment"'),
        *(b'"trajectory_format"', b'"observation"', b'"timestamp"', b'"cost"'),
    ]
)


_SPACE = st.lists(
    st.sampled_from([b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\xa0"]), max_size=3
)
_HEADS = st.tuples(
    _SPACE,
    st.sampled_from([b"{", b"[", b"x", b""]),
    _SPACE,
    _HEAD_PIECES,
    _SPACE,
    st.sampled_from([b":", b""]),
    st.lists(_HEAD_PIECES, max_size=5),
).map(lambda parts: b"".join(b"".join(p) if isinstance(p, list) else p for p in parts))


@settings(max_examples=800, deadline=None)
@given(_HEADS, st.lists(_HEAD_PIECES, max_size=4).map(b"".join))
def test_the_sniffers_head_patterns_run_only_on_a_head_opening_an_object(head: bytes, tail: bytes) -> None:
    """A head that opens no JSON object after whitespace matches none of the ``\\s*\\{`` patterns,
    and every sniffer answers as it does with the patterns tried on every head."""
    from ctxhealth.sources import sniff

    patterns = (sniff._SWE_AGENT_HEAD, sniff._OPENHANDS_COMPLETION_HEAD, sniff._OPENHANDS_OUTPUT_HEAD)
    if not sniff._opens_object(head):
        assert all(re.match(source, head) is None for source in patterns)
    answers = [f(head) for f in _SNIFFERS] + [sniff.openhands_tail(head, tail)]
    gate = sniff._opens_object
    try:
        sniff._opens_object = lambda head: True  # the patterns tried on every head
        plain = [f(head) for f in _SNIFFERS] + [sniff.openhands_tail(head, tail)]
    finally:
        sniff._opens_object = gate
    assert answers == plain


def _sniffers() -> tuple[Callable[[bytes], bool], ...]:
    from ctxhealth.sources import sniff

    return (sniff.swe_agent, sniff.openhands, sniff.openhands_completion, sniff.openhands_output)


_SNIFFERS = _sniffers()
