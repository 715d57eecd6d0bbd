"""The C text kernels (``ctxhealth._native``) against their Python definitions: any text under
hypothesis (any Unicode, lone surrogates, the characters whose lower case is special, many kinds of
whitespace, huge texts) and every assistant text of the real sessions; and the switch that picks them.

The tests skip when the C kernels are not in use (the extension not built, or ``CTXHEALTH_NATIVE=0``);
with ``CTXHEALTH_NATIVE=require`` (CI) a missing extension is an error already at import.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxhealth import native
from ctxhealth.model import Message, Role, TextBlock, ToolCall
from ctxhealth.signals import base, calls, drift, hedging, indicators, text
from ctxhealth.signals.base import stable_hash
from ctxhealth.signals.events import Event

if native.KERNELS is None:
    pytest.skip(
        "the C text kernels are not in use (not built, or CTXHEALTH_NATIVE=0)", allow_module_level=True
    )
_native = native.KERNELS

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"

# Characters that exercise every branch: ASCII word and separator characters, the two whose lower
# case is ASCII (İ, Kelvin sign), final-sigma, dotless i and long s (fold case-insensitively to ASCII),
# every kind of Unicode whitespace, NUL, lone surrogates, letters and digits of other scripts, emoji.
_SPECIAL = (
    "İKΣσςıſ"
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u205f\u3000"
    "\x00\ud800\udfff\udc00"
    "éßÆ中文٣४\u0301\u0307😀𝔘_.!?\"'`,;:-"
)
_chars = st.one_of(
    st.characters(codec=None, exclude_categories=()),
    st.sampled_from(_SPECIAL),
    st.characters(min_codepoint=32, max_codepoint=126),
)
_words = st.sampled_from(
    [
        "the",
        "tests",
        "testing",
        "Still",
        "BUT",
        "maybe",
        "hmm",
        "hmmm",
        "not sure",
        "actually, that",
        "wait,",
        "I was wrong",
        "could you provide",
        "don't have",
        "_x9_parser",
        "seem",
        "seems",
        "İs",
        "Kelvin",
        "fooİbar",
        "ações",
        "   ",
        "\n\n",
        "```",
    ]
)
texts = st.lists(st.one_of(_words, st.text(_chars, max_size=12)), max_size=60).map("".join)


def _event(value: str) -> Event:
    return Event(0, Message(Role.ASSISTANT, (TextBlock(value),)), 1, 0, text=value)


def _assert_kernels_agree(value: str) -> None:
    folded = text.fold_py(value)
    assert _native.fold(value) == folded
    assert text._folded_stems_native(folded) == text.folded_stems_py(folded)
    assert text._folded_stems_native(folded[-2000:]) == text.folded_stems_py(folded[-2000:])
    if value:
        assert hedging._count_event_native(_event(value)) == hedging.count_event_py(_event(value))
    low = value.lower()
    assert indicators._hinted_native(low) == indicators.hinted_py(low)
    found = indicators.sentences(low)
    assert _native.sentence_hashes(found) == indicators.sentence_hashes_py(found)
    assert _native.text_sentence_hashes(low, indicators.SENTENCE_MIN) == indicators.text_sentence_hashes_py(
        low
    )
    assert _native.text_sentence_hashes(value, 3) == indicators.sentence_hashes_py(
        [p for p in value.replace("!", ".").replace("?", ".").replace("\n", ".").split(".") if len(p) >= 3]
    )
    assert indicators.lowered_sentence_hashes(value) == indicators.lowered_sentence_hashes_py(value)
    assert _native.text_sentence_hashes(value, 3, False) == _native.text_sentence_hashes(value, 3)
    assert _native.ascii_stand_in(value) == indicators._ascii_stand_in_py(value)
    assert _native.sentence_hashes(indicators.sentences(value)) == indicators.sentence_hashes_py(
        indicators.sentences(value)
    )
    _assert_anchor_search_agrees(value)


_ANCHOR_SETS = [*indicators._ANCHORS.values(), calls._VERIFY_ANCHORS, calls._VERIFY_HINTS]


def _assert_anchor_search_agrees(value: str) -> None:
    """The anchors found in one pass are every anchor's occurrences; the anchored match is the
    search (the verify check and the indicators' openings); the hint gate is the hint pattern."""
    for anchors in _ANCHOR_SETS:
        assert _native.anchor_positions(value, anchors) == base.anchor_positions_py(value, anchors)
    verify = calls._re("_VERIFY")
    assert base._matches_at_anchors_native(verify.match, value, calls._VERIFY_ANCHORS) == (
        verify.search(value) is not None
    )
    assert calls._hinted(value) == calls._hinted_py(value)
    low = value.lower()
    for source, anchors in indicators._ANCHORS.items():
        pattern = indicators._pattern(source, True)
        assert base._matches_at_anchors_native(pattern.match, low, anchors) == base.matches_at_anchors_py(
            pattern.match, low, anchors
        )


@settings(max_examples=400, deadline=None)
@given(texts)
def test_every_kernel_is_its_python_definition(value: str) -> None:
    _assert_kernels_agree(value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(_chars, max_size=80), max_size=12))
def test_sentence_hashes_are_the_definition_on_any_strings(found: list[str]) -> None:
    assert _native.sentence_hashes(found) == indicators.sentence_hashes_py(found)
    assert _native.sentence_hashes(found) == [stable_hash(" ".join(s.split())) for s in found]


@settings(max_examples=200, deadline=None)
@given(
    st.text(_chars, max_size=40), st.lists(st.text(st.characters(max_codepoint=127), min_size=1), max_size=8)
)
def test_substring_search_is_the_in_operator(value: str, needles: list[str]) -> None:
    assert _native.any_in(value, tuple(needles)) == any(n in value for n in needles)


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.one_of(_chars, st.sampled_from("abtes")), max_size=60),
    st.lists(
        st.text(st.sampled_from("abtes"), min_size=1, max_size=3)
        | st.text(st.characters(max_codepoint=127), min_size=1),
        max_size=8,
    ),
)
def test_anchor_positions_are_every_occurrence_of_every_anchor(value: str, needles: list[str]) -> None:
    """Overlapping and repeated anchors (``aa`` in ``aaa``, one anchor the prefix of another) each
    position once, ascending."""
    assert _native.anchor_positions(value, tuple(needles)) == base.anchor_positions_py(value, tuple(needles))


@settings(max_examples=300, deadline=None)
@given(st.text(_chars, max_size=8), st.text(_chars, max_size=300))
def test_spaced_hash_is_the_hash_of_the_respaced_text(prefix: str, value: str) -> None:
    assert _native.spaced_hash(prefix, value) == base.spaced_hash_py(prefix, value)
    assert base.spaced_hash_py(prefix, value) == stable_hash(prefix + " ".join(value.split()))


@pytest.mark.parametrize(
    ("value", "needles"),
    [
        ("xa", ("a",)),
        ("a", ("a",)),
        ("aé", ("a",)),
        ("a😀b", ("a", "ab")),
        ("ab", ("ab", "b")),
        ("a", ("ab",)),
        ("a\x00b", ("a\x00", "\x00b")),
        ("\x7f\x7f", ("\x7f\x7f",)),
        ("abab", ("ba", "bab", "abab")),
        ("zzz", ()),
    ],
)
def test_the_pair_filter_lets_every_start_through(value: str, needles: tuple[str, ...]) -> None:
    """A position is passed over only when no needle starts with its two characters: one-character
    needles, a needle at the last position, a non-ASCII character after a first letter."""
    assert _native.any_in(value, needles) == any(n in value for n in needles)
    assert _native.anchor_positions(value, needles) == base.anchor_positions_py(value, needles)


def test_anchor_positions_refuse_what_they_cannot_search() -> None:
    with pytest.raises(ValueError):
        _native.anchor_positions("x", ("",))
    with pytest.raises(ValueError):
        _native.anchor_positions("x", ("é",))
    with pytest.raises(TypeError):
        _native.anchor_positions("x", ["x"])
    with pytest.raises(TypeError):
        _native.anchor_positions(b"x", ("x",))


_shell_pieces = st.sampled_from(
    [
        *("cat a.py", "X=1 ", "python3 t.py", "pythonista", "/bin/ls", "sed -n 1p f", "  ", "\t", "\u2028"),
        *("\x1c", "\n", "\n\n", "printf('x')", "git", "rm", "é/", "a=b", "pytho", "tee", "\x85"),
        "\u3000rm x",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_shell_pieces | st.text(_chars, max_size=6), max_size=40).map("".join))
def test_the_segments_a_shell_parse_reads_are_its_python_definition(lines: str) -> None:
    assert _native.lead_segments(lines, calls._LEAD_WORDS) == calls._lead_segments_py(
        lines, calls._LEAD_WORDS
    )
    assert _native.lead_segments(lines, frozenset()) == calls._lead_segments_py(lines, frozenset())


_key_strings = st.one_of(
    st.text(_chars, max_size=8),
    texts,
    st.sampled_from(["a b\n" * 300, "é  x\u2028" * 200, "z" * 1000, "z" * 1001, "\ud83d" + "q" * 70]),
)
_tool_inputs = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _key_strings,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(_chars, max_size=4), inner, max_size=4)
    ),
    max_leaves=14,
)


@settings(max_examples=400, deadline=None)
@given(st.text(_chars, max_size=8), _tool_inputs | st.dictionaries(st.integers(), st.integers(), max_size=3))
def test_a_call_key_written_in_c_is_the_key_of_its_python_definition(prefix: str, value: object) -> None:
    """A call's key (saved in snapshots): the text the kernel writes is the definition's, and the
    key of every input (those the kernel leaves to Python too) is :func:`base.key_hash_py`'s."""
    data = _native.key_text(prefix, value)
    if data is not None:
        assert data == (prefix + base.normalise_text(value)).encode("utf-8", "surrogatepass")
    assert base._key_hash_native(prefix, value) == base.key_hash_py(prefix, value)


def test_a_call_key_leaves_to_python_what_only_python_reads() -> None:
    class Text(str):
        pass

    for value in ({1: "a"}, {"a": object()}, Text("x"), [[[[]]]] * 2, {"k": Text("v")}, b"raw"):
        assert _native.key_text("T:", value) is None or isinstance(value, list)
    deep: object = "x"
    for _ in range(200):
        deep = [deep]
    assert _native.key_text("T:", deep) is None
    assert base._key_hash_native("T:", deep) == base.key_hash_py("T:", deep)


def test_lowering_while_hashing_is_str_lower_on_every_code_point() -> None:
    """The lowered sentence hashes lower each character on its own (its simple lower case): that is
    ``str.lower()`` on every code point but the two the kernel refuses (None), checked on all of them."""
    refused = {0x130, 0x3A3}
    chars = [chr(c) for c in range(0x110000) if c not in refused]
    for at in range(0, len(chars), 40 * 4096):
        chunk = "".join(chars[at : at + 40 * 4096])
        low = chunk.lower()
        # sentences of every length from 1: each character is hashed as a part of one
        pieces = low.replace("!", ".").replace("?", ".").replace("\n", ".").split(".")
        assert _native.text_sentence_hashes(chunk, 1, True) == indicators.sentence_hashes_py(
            [p for p in pieces if p]
        )
    for c in refused:
        assert _native.text_sentence_hashes("x" * 50 + chr(c), 40, True) is None
        assert indicators.lowered_sentence_hashes_py("x" * 50 + chr(c)) is None


@pytest.mark.parametrize(
    "value",
    [
        "",
        " " * 100_000,
        "x",
        "İ" * 5_000 + "KELVIN" + "\u212a" * 3,
        "word " * 200_000,
        "a" * 1_000_000,
        "Still testing, but maybe not sure. " * 20_000,
        ("é" * 60 + ".") * 2_000,
        "\ud800" * 1_000 + " but " + "\udfff" * 1_000,
        "😀 however 😀. " * 5_000,
    ],
    ids=[
        "empty",
        "spaces",
        "one",
        "dotted-i",
        "many-words",
        "one-huge-run",
        "hedges",
        "latin",
        "surrogates",
        "emoji",
    ],
)
def test_kernels_agree_on_extreme_texts(value: str) -> None:
    _assert_kernels_agree(value)


def test_the_stem_cache_follows_the_table_it_is_given() -> None:
    """The C cache holds the values of one table: another table (or a learn() that itself calls
    the kernel) never gets the first table's values."""
    folded = text.fold_py("alpha beta gamma alpha")
    first = _native.stems(folded, {b"alpha": "A", b"beta": "", b"gamma": "G"}, lambda run: "?")
    assert first == ["A", "G", "A"]
    other = _native.stems(folded, {}, lambda run: run.decode().upper())
    assert other == ["ALPHA", "BETA", "GAMMA", "ALPHA"]
    seen: list[bytes] = []

    def learn(run: bytes) -> str:
        seen.append(run)
        # re-entrant: the kernel run again from inside learn, on the same table
        assert _native.stems(b"beta", table, learn) == ["b"]
        table[run] = run.decode()[:1]
        return table[run]

    table: dict[bytes, str] = {b"beta": "b"}
    assert _native.stems(folded, table, learn) == ["a", "b", "g", "a"]
    assert seen == [b"alpha", b"gamma"]
    with pytest.raises(ZeroDivisionError):
        _native.stems(b"new", {}, lambda run: 1 // 0)
    with pytest.raises(TypeError):
        _native.stems("not bytes", {}, str)  # type: ignore[arg-type]
    _native.clear_cache()
    assert text._folded_stems_native(folded) == text.folded_stems_py(folded)


def test_the_stem_cache_survives_more_runs_than_it_holds() -> None:
    """Past its limit the cache (and the table) are emptied and refilled: the stems stay the same."""
    value = " ".join(f"word{i}x tested{i}ing" for i in range(20_000))
    folded = text.fold_py(value)
    assert text._folded_stems_native(folded) == text.folded_stems_py(folded)
    assert text._folded_stems_native(folded) == text.folded_stems_py(folded)


def _real_texts() -> list[str]:
    from ctxhealth.sources import read_sessions

    out: list[str] = []
    for session in read_sessions([str(DATA)]):
        for message in session.messages:
            value = "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))
            if value:
                out.append(value)
    return out


def _real_commands() -> list[str]:
    from ctxhealth.sources import read_sessions

    out: list[str] = []
    for session in read_sessions([str(DATA)]):
        for message in session.messages:
            for block in message.blocks:
                if isinstance(block, ToolCall) and block.name.lower() in calls._SHELL_TOOLS:
                    out.append(calls._command_text(block.input))
    return out


@pytest.mark.skipif(not DATA.is_dir(), reason="the real sessions are not here")
def test_anchor_search_agrees_on_every_shell_command_of_the_real_sessions() -> None:
    found = _real_commands()
    assert len(found) > 1_000
    for command in found:
        assert _native.spaced_hash("Bash:", command) == base.spaced_hash_py("Bash:", command)
        probe = command if len(command) <= 800 else f"{command[:600]}\n{command[-200:]}"
        _assert_anchor_search_agrees(probe)


@pytest.mark.skipif(not DATA.is_dir(), reason="the real sessions are not here")
def test_kernels_agree_on_every_text_of_the_real_sessions() -> None:
    found = _real_texts()
    assert len(found) > 1_000
    for value in found:
        _assert_kernels_agree(value)


def test_the_switch_picks_the_python_definitions() -> None:
    """``CTXHEALTH_NATIVE=0`` binds every kernel to its Python definition; by default the C ones."""
    probe = (
        "from ctxhealth import native; from ctxhealth.signals import base, calls, hedging, indicators, text;"
        "print(native.KERNELS is None, text.fold is text.fold_py, text.folded_stems is text.folded_stems_py,"
        " hedging.count_event is hedging.count_event_py, indicators.hinted is indicators.hinted_py,"
        " indicators.sentence_hashes is indicators.sentence_hashes_py,"
        " base.matches_at_anchors is base.matches_at_anchors_py, calls._hinted is calls._hinted_py,"
        " base.spaced_hash is base.spaced_hash_py,"
        " __import__('ctxhealth.sources.claude_code.typed', fromlist=['x'])._object_lines"
        " is __import__('ctxhealth.sources.claude_code.typed', fromlist=['x'])._object_lines_py)"
    )
    env = {k: v for k, v in os.environ.items() if k != native.SWITCH}
    off = subprocess.run(
        [sys.executable, "-c", probe],
        env={**env, native.SWITCH: "0"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert off.stdout.split() == ["True"] * 10
    on = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert on.stdout.split() == ["False"] * 10


def test_the_extension_is_loaded_when_required() -> None:
    """CI sets ``CTXHEALTH_NATIVE=require``: then the C kernels must be the ones in use (a build that
    silently fell back to Python fails here, and already at import)."""
    if os.environ.get(native.SWITCH, "").strip().lower() != "require":
        pytest.skip(f"{native.SWITCH}=require is not set")
    assert native.KERNELS is not None
    assert text.fold is native.KERNELS.fold
    assert indicators.sentence_hashes is native.KERNELS.sentence_hashes


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["test", "pars", "offset", "x", "İ", "\ud800", "中", ""]), max_size=60),
    st.frozensets(st.sampled_from(["test", "pars", "offset", "zzz", "中", "", "\ud800"]), max_size=7),
    st.integers(min_value=0, max_value=10**12),
    st.integers(min_value=-3, max_value=70),
)
def test_task_word_search_is_its_python_definition(
    stems: list[str], words: frozenset[str], base: int, start: int
) -> None:
    """The same positions, in the same order (the drift state is saved in that order)."""
    expected = drift._last_positions_py(stems, words, base, max(start, 0))
    got = _native.last_positions(stems, words, base, start)
    assert got == expected
    assert list(got.items()) == list(expected.items())


def test_task_word_search_many_found_and_bad_arguments() -> None:
    stems = [f"w{i % 40}" for i in range(5_000)]
    words = frozenset(f"w{i}" for i in range(0, 80, 3))
    expected = drift._last_positions_py(stems, words, 7, 100)
    assert list(_native.last_positions(stems, words, 7, 100).items()) == list(expected.items())
    with pytest.raises(TypeError):
        _native.last_positions(tuple(stems), words, 0, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _native.last_positions(stems, set(words), 0, 0)  # type: ignore[arg-type]


_RUN_LETTERS = "abcdeilmnostyz0123456789_"
_RUN_PIECES = [
    "ization",
    "ations",
    "ments",
    "ingly",
    "ings",
    "ing",
    "edly",
    "ies",
    "ied",
    "ed",
    "es",
    "ly",
    "s",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(st.text(_RUN_LETTERS, max_size=6), st.sampled_from(_RUN_PIECES)), max_size=5).map(
        "".join
    )
    | st.sampled_from(sorted(text.STOP_WORDS))
    | st.text(st.characters(max_codepoint=127), max_size=12)
)
def test_stemming_a_run_is_its_python_definition(word: str) -> None:
    run = word.encode("ascii")
    assert _native.stem_run(run, text.STOP_WORDS) == text._stem_run_py(run)


def test_stemming_refuses_what_python_refuses() -> None:
    with pytest.raises(ValueError):
        _native.stem_run("testé".encode(), text.STOP_WORDS)
    with pytest.raises(UnicodeDecodeError):
        text._stem_run_py("testé".encode())


def test_last_positions_never_reads_past_a_list_an_item_shrinks() -> None:
    """A str subclass whose ``__eq__`` empties the list mid-scan: the kernel raises (or answers), it
    never reads past the list's end (before the bound check this read freed memory)."""
    stems: list[str] = []

    class Shrinking(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            del stems[:]
            return str.__eq__(self, other)

    stems.extend(["a", "b", Shrinking("c"), "c", "d"] * 50)
    try:
        got = _native.last_positions(stems, frozenset({"c", "a"}), 0, 0)
    except RuntimeError:
        return
    assert set(got) <= {"a", "c"}


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=12_000), st.sampled_from([0, 1, 31, 32, 33, 5551, 5552, 5553, 11_104, 40_000]))
def test_adler32_in_lanes_is_zlibs(data: bytes, pad: int) -> None:
    """The kernel's Adler-32 (bytes summed in 32 lanes, reduced every NMAX bytes) is zlib's, at any
    length around the lane and block sizes and with every byte at its largest (the sums' bounds)."""
    for value in (data, data + b"\xff" * pad, b"\xff" * pad + data):
        assert _native.adler32(value) == zlib.adler32(value)


def test_a_long_call_key_is_the_definitions() -> None:
    """A ``Write`` of a 25K-character body (non-ASCII too) hashes to :func:`base.key_hash_py`'s key."""
    body = ("def f(x):\n    return x  # é 中 😀\n" * 800)[:25_000]
    value = {"file_path": "/src/a.py", "content": body}
    assert base._key_hash_native("Write:", value) == base.key_hash_py("Write:", value)


# -- the whole-file test of the Claude Code typed reader ------------------------------------------

_PIECES = [
    *(b"{", b"}", b"\n", b'"a":1', b" ", b"abcdefgh"),
    *(b"\xc3\xa9", b"\xc2\x80", b"\xc1\xbf", b"\xe0\xa0\x80", b"\xe0\x9f\xbf", b"\xed\x9f\xbf"),
    *(b"\xed\xa0\x80", b"\xef\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x8f\xbf\xbf"),
    *(b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\x80", b"\xbf", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98"),
    b"\xff",
]
"""Bytes that reach every branch: the line structure, ASCII, each lead byte class and the edges of its
second byte's range (overlong forms, surrogates, past U+10FFFF), stray and truncated sequences."""


def _object_lines_definition(data: bytes) -> int:
    from ctxhealth.sources.claude_code.typed import _object_lines_py

    return _object_lines_py(data)


def _valid(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _every_line_an_object(data: bytes) -> bool:
    return all(line[:1] == b"{" and line[-1:] == b"}" for line in data[:-1].split(b"\n"))


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40), st.booleans())
def test_the_object_line_test_is_its_python_definition(pieces: list[bytes], framed: bool) -> None:
    # framed: each piece inside a line of its own, so the UTF-8 branches are reached past the line test
    data = b"".join(b"{" + p + b"}\n" for p in pieces) if framed else b"".join(pieces)
    expected = _object_lines_definition(data)
    assert _native.object_lines(data) == expected
    assert _native.object_lines(memoryview(data)) == expected
    assert (expected >= 0) == (data.endswith(b"\n") and _valid(data) and _every_line_an_object(data))


def test_the_object_line_test_agrees_on_every_utf8_sequence_of_two_to_four_bytes() -> None:
    """Every lead byte with every second byte (and valid continuations after), inside a line."""
    for lead in range(0x80, 0x100):
        for second in range(0x100):
            for tail in (b"", b"\x80", b"\x80\x80"):
                data = b"{" + bytes([lead, second]) + tail + b"}\n"
                assert _native.object_lines(data) == _object_lines_definition(data), data


def test_the_object_line_test_agrees_on_every_file_of_the_shared_data() -> None:
    files = [p for p in DATA.glob("**/*") if p.is_file() and p.stat().st_size < 64 * 1024 * 1024]
    if not files:
        pytest.skip("the shared data is not here")
    typed = 0
    for path in files:
        data = path.read_bytes()
        expected = _object_lines_definition(data)
        assert _native.object_lines(data) == expected, path
        typed += expected >= 0
    assert typed > 0
