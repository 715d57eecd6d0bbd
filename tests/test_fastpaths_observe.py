"""The per-turn fast paths of ``Monitor.observe`` give exactly what the plain definitions give.

Each test compares one optimised piece with a straightforward reference written here: the indicator
and check patterns searched the plain way, sentences found by the plain regex and hashed one by one,
shell commands parsed without skipping verbs, ``repr`` lengths measured on ``repr`` itself, the risk
score from ``RiskModel.score``, the drift window recounted from a flat word list, and signals read
immediately against signals read after later turns (deferred snapshots).
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import PlainDriftWindow
from ctxhealth.model import (
    CompactionSummary,
    ImageBlock,
    Message,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    Usage,
)
from ctxhealth.monitor import _FEATURES, Monitor, _Scorer
from ctxhealth.policy import Action
from ctxhealth.policy.profile import Profile
from ctxhealth.risk.model import RiskModel
from ctxhealth.signals import calls, indicators
from ctxhealth.signals.base import stable_hash
from ctxhealth.signals.drift import DriftDetector, _last_positions
from ctxhealth.signals.events import Event, EventBuilder
from ctxhealth.signals.hedging import count_hedges
from ctxhealth.signals.text import content_words

# --------------------------------------------------------------------------- indicator patterns

_REVERSALS = [
    "Actually, that",
    "actually it",
    "actually the",
    "WAIT.",
    "wait!",
    "On second thought",
    "I was wrong",
    "this is not right",
    "That was incorrect",
    "My earlier analysis is",
    "my previous fix was",
    "Let me undo",
    "reverting this edit",
    "revert my change",
    "scratch that",
    "I made a mistake",
    "I misread",
    "that didn't work",
    "That broke",
    "Could you please share",
    "could you tell",
    "Please paste",
    "I do not see the original",
    "I don't have access",
    "What is the task",
    "what was the original goal",
    "Remind me",
    "I would need more details",
    "I need the context",
    "can you provide",
]
_ODD = ["é", "μ", "🚨", "ſ", "\u212a", "ı", "İ", "’", "_", "x", "1", " ", ",", ".", "\n", "?", "!"]
openings = st.lists(st.sampled_from(_REVERSALS + _ODD) | st.text(max_size=3), max_size=24).map("".join)


@settings(max_examples=600, deadline=None)
@given(openings)
def test_anchored_indicator_match_is_the_case_insensitive_search(opening: str) -> None:
    if opening.isascii():
        plain: str | None = opening.lower()
    else:
        stand_in = indicators._ascii_stand_in(opening)
        plain = None if stand_in is None else stand_in.lower()
    for source in (indicators._CONTRADICTION_SOURCE, indicators._MISSING_SOURCE):
        expected = re.compile(source, re.I).search(opening) is not None
        assert indicators._opens_with(source, opening, plain) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*_REVERSALS, *_ODD, "a long line of plain words"]), max_size=40).map("".join)
)
def test_sentences_and_their_hashes_are_the_plain_ones(text: str) -> None:
    assert indicators.sentences(text) == indicators._SENTENCE.findall(text)
    found = indicators.sentences(text)
    assert indicators.sentence_hashes(found) == [stable_hash(" ".join(s.split())) for s in found]


@pytest.mark.parametrize(
    "found",
    [["9_ \x00 ", "9_ "], ["a \x00 b", "c d"], ["x\t\x00\x0b", " \x00 y", "z"]],
)
def test_python_sentence_hashes_with_a_nul_between_spaces(found: list[str]) -> None:
    # the Python definition (no C extension) cut glued sentences apart at a sentence's own " \x00 "
    assert indicators.sentence_hashes_py(found) == [stable_hash(" ".join(s.split())) for s in found]


def test_sentence_hashes_keep_lone_surrogates() -> None:
    found = ["a sentence with a lone \ud800 surrogate in the middle of it", "plain"]
    assert indicators.sentence_hashes(found) == [stable_hash(" ".join(s.split())) for s in found]


# --------------------------------------------------------------------------- shell commands

_SHELL = [
    "pytest -q",
    "python -m pytest",
    "python3 repro_bug.py",
    "make test",
    "cargo test",
    "go vet ./...",
    "npm run lint",
    "ruff check",
    "mypy src",
    "tox",
    "algo run",
    "echo 'x'",
    "cat a.py",
    "sed -i 's/a/b/' f.py",
    "rm old.py",
    "tee out.txt",
    "git apply p.diff",
    "ls -la",
    "grep -r foo .",
    "printf '%s' x > out.log",
    "int main() {",
    "perl -pi -e 's/x/y/' z.c",
    "nl f.py",
    "X=1 cat b.py",
    "./build.sh",
    "bin/run.py --fast",
    "python3.11 t.py",
    "node app.js",
    "/usr/bin/python a.py",
    "X=1 python r.py",
    "Y=2 git checkout f.py",
    "git status",
    "patch -p1",
    "// note.py",
    "--opt=1 rm a.py",
    "pythonista t.py",
    "a/b=1 cat c.py",
    " && ",
    " | ",
    "; ",
    "\n",
    " ",
    "_",
    "x",
]
commands = st.lists(st.sampled_from(_SHELL) | st.text(max_size=3), max_size=80).map("".join)


@settings(max_examples=400, deadline=None)
@given(commands)
def test_verify_check_finds_what_a_search_finds(command: str) -> None:
    for probe in (command, command * 4):
        assert calls._verifies(probe) == (calls._VERIFY.search(probe) is not None)


def _reference_words(segment: str) -> list[str]:
    """A segment's words after its leading ``NAME=value`` assignments (every segment split)."""
    words = segment.split()
    while words and ("=" in words[0] and not words[0].startswith("-")):
        words = words[1:]
    return words


def _reference_segments(head: str) -> tuple[set[calls.CallKind], list[str], list[str], list[str]]:
    """The per-segment classification of every segment, every verb's arguments parsed."""
    kinds: set[calls.CallKind] = set()
    reads: list[str] = []
    edits: list[str] = []
    deletes: list[str] = []
    for segment in calls._segments(head):
        words = _reference_words(segment)
        if not words:
            continue
        verb = words[0].rsplit("/", 1)[-1]
        args = [w.strip("'\"") for w in words[1:] if not w.startswith("-")]
        paths = [a for a in args if "." in a and calls._PATH.fullmatch(a)]
        in_place = any(w.startswith(("-i", "-pi")) for w in words[1:])
        if (verb == "sed" and any(w.startswith("-i") for w in words[1:])) or (verb == "perl" and in_place):
            edits.extend(paths)
        elif verb == "sed" or (verb in calls._READ_VERBS and ">" not in segment):
            reads.extend(paths)
        elif verb == "tee":
            edits.extend(paths)
        elif verb == "rm":
            deletes.extend(args)
        elif verb == "patch" or (verb == "git" and len(words) > 1 and words[1] in {"apply", "checkout"}):
            kinds.add(calls.CallKind.EDIT)
        elif verb in calls._SEARCH_VERBS:
            kinds.add(calls.CallKind.SEARCH)
    return kinds, reads, edits, deletes


def _reference_runs(head: str) -> list[str]:
    """The files the segments run (:attr:`CallInfo.runs`), every segment split into words: an
    executed script, else the first path argument of an interpreter or test runner."""
    runs: list[str] = []
    for segment in calls._segments(head):
        words = _reference_words(segment)
        if not words:
            continue
        verb = words[0].rsplit("/", 1)[-1]
        if verb in calls._PATH_VERBS or verb in calls._SEARCH_VERBS or verb == "patch":
            continue
        if "/" in words[0] and "." in verb and calls._PATH.fullmatch(words[0]):
            runs.append(words[0])
        elif verb in calls._RUNNERS or (verb.startswith("python") and verb[6:].replace(".", "").isdigit()):
            for word in words[1:]:
                arg = word.strip("'\"")
                if not word.startswith("-") and "." in arg and calls._PATH.fullmatch(arg):
                    runs.append(arg)
                    break
    return runs


@settings(max_examples=400, deadline=None)
@given(commands)
def test_shell_parse_splits_only_segments_whose_words_matter(command: str) -> None:
    """The shell parse splits a segment into words only when its first word makes the others matter
    (a path verb, ``git``, a runner): the kinds, paths and runs are those of splitting every one."""
    if "<<" in command or ">" in command or len(command) > calls.SHELL_HEAD:
        command = command.replace("<", " ").replace(">", " ")[: calls.SHELL_HEAD]
    runs: list[str] = []
    kinds, reads, edits, deletes, _ = calls._parse_shell(command, runs)
    ref_kinds, ref_reads, ref_edits, ref_deletes = _reference_segments(command)
    assert (reads, edits, deletes, runs) == (ref_reads, ref_edits, ref_deletes, _reference_runs(command))
    assert kinds - {calls.CallKind.VERIFY} == ref_kinds


@settings(max_examples=400, deadline=None)
@given(commands)
def test_shell_parse_skips_only_verbs_whose_arguments_do_not_matter(command: str) -> None:
    if "<<" in command or ">" in command or len(command) > calls.SHELL_HEAD:
        command = command.replace("<", " ").replace(">", " ")[: calls.SHELL_HEAD]
    kinds, reads, edits, deletes, _ = calls._parse_shell(command)
    ref_kinds, ref_reads, ref_edits, ref_deletes = _reference_segments(command)
    assert (reads, edits, deletes) == (ref_reads, ref_edits, ref_deletes)
    assert kinds - {calls.CallKind.VERIFY} == ref_kinds


# --------------------------------------------------------------------------- token estimate

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | st.lists(
        st.sampled_from(["'", '"', "\\", "\n", "\t", "\r", "é", "🚀", "\x00", "\x7f", "a" * 300]), max_size=8
    ).map("".join),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


# --------------------------------------------------------------------------- risk score

_NAMES = sorted(_FEATURES)


@st.composite
def risk_models(draw: st.DrawFn) -> RiskModel:
    names = draw(st.lists(st.sampled_from([*_NAMES, "not_a_feature"]), min_size=1, max_size=8, unique=True))
    phased = draw(st.booleans())
    if phased and "turns" not in names:
        names.append("turns")
    n = len(names)
    finite = st.floats(-5, 5, allow_nan=False)
    return RiskModel(
        features=tuple(names),
        weights=tuple(draw(st.lists(finite | st.just(0.0), min_size=n, max_size=n))),
        bias=draw(finite),
        mean=tuple(draw(st.lists(finite, min_size=n, max_size=n))),
        scale=tuple(draw(st.lists(st.floats(0.1, 5), min_size=n, max_size=n))),
        log_features=frozenset(draw(st.lists(st.sampled_from(names), max_size=n))),
        phase_in=draw(st.sampled_from([0.0, 5.0])) if phased else 0.0,
        anchor=draw(st.sampled_from(["", *names])),
    )


def reference_score(model: RiskModel, values: dict[str, float]) -> float:
    """The documented formula, written out: phased, standardised, log1p for counts, then a sigmoid."""
    turns = values.get("turns")
    phase = 1.0 if model.phase_in <= 0 or turns is None else min(1.0, max(turns, 0.0) / model.phase_in)
    z = model.bias
    for name, w, mu, sd in zip(model.features, model.weights, model.mean, model.scale, strict=True):
        if name not in values:
            continue
        x = math.log1p(max(values[name], 0.0)) if name in model.log_features else values[name]
        z += (1.0 if name == model.anchor else phase) * w * (x - mu) / sd
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@settings(max_examples=300, deadline=None)
@given(risk_models(), st.lists(st.floats(-50, 1e6, allow_nan=False), min_size=10, max_size=10))
def test_bound_risk_score_is_the_models_formula(model: RiskModel, values: list[float]) -> None:
    monitor = Monitor("claude-sonnet-4-5")
    names = model.features
    vals = dict(zip(names, values, strict=False))
    for i, name in enumerate(names):
        vals.setdefault(name, float(i))
    bound = _Scorer(model)
    bound.fns = tuple((lambda m, v=vals[n]: v) for n in names)
    features, score = bound(monitor)
    assert features == {n: vals[n] for n in names}
    assert score == model.score(vals)
    assert math.isclose(score, reference_score(model, vals), rel_tol=1e-9, abs_tol=1e-12)


_feature_values = st.one_of(
    st.none(), st.sampled_from([0.0, -0.0, 1.0, 2.5]), st.floats(-50, 1e6, allow_nan=False)
)


@settings(max_examples=200, deadline=None)
@given(
    risk_models(),
    st.lists(st.lists(_feature_values, min_size=10, max_size=10), min_size=1, max_size=8),
    st.data(),
)
def test_a_scorer_that_gives_its_kept_score_again_gives_the_models_score(
    model: RiskModel, turns: list[list[float | None]], data: st.DataObject
) -> None:
    """The scorer keeps the last turn's values, features and score, and gives them again when a
    turn's values are the same: every turn's features and score are still the model's of its own
    values (turns repeat, and flip the sign of a zero, to exercise the kept ones)."""
    monitor = Monitor("claude-sonnet-4-5")
    names = model.features
    bound = _Scorer(model)
    current: list[float | None] = []
    bound.fns = tuple((lambda m, i=i: current[i]) for i in range(len(names)))
    for values in turns:
        for repeat in range(data.draw(st.integers(1, 3))):
            row = list(values[: len(names)])
            if repeat and data.draw(st.booleans()):
                row = [-v if v == 0.0 and v is not None else v for v in row]
            current[:] = row
            features, score = bound(monitor)
            given_values = {n: v for n, v in zip(names, row, strict=False) if v is not None}
            assert features == given_values
            # the sign of a zero too: it is what a feature reads when rendered
            assert [math.copysign(1.0, v) for v in features.values()] == [
                math.copysign(1.0, v) for v in given_values.values()
            ]
            assert score == model.score(given_values)
            features["changed by the caller"] = 1.0  # a caller's change stays its own


# --------------------------------------------------------------------------- drift window


_WORDS = ["parser", "offsets", "tests", "green", "weather", "Lisbon", "the", "a", "x1", "fixing", "rounding"]
replies = st.lists(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=300).map(" ".join), max_size=14)


def _drift_and_plain_window(limit: int) -> tuple[DriftDetector, PlainDriftWindow, EventBuilder]:
    """A drift detector and the flat reference window, both given the same task."""
    detector = DriftDetector(Profile(risk=None, drift_window_chars=limit), sweet_spot=1)
    reference = PlainDriftWindow("", limit)
    detector.set_instruction("Fix the parser offsets and keep the tests green")
    reference.instruction = set(detector.instruction_words)
    return detector, reference, EventBuilder()


@settings(max_examples=150, deadline=None)
@given(replies, st.sampled_from([40, 200, 2_000]), st.integers(0, 14), st.sampled_from(_WORDS))
def test_drift_runs_match_a_flat_window_across_a_new_instruction(
    texts: list[str], limit: int, switch: int, word: str
) -> None:
    detector, reference, events = _drift_and_plain_window(limit)
    for i, text in enumerate(texts, start=1):
        if i == switch:
            detector.set_instruction(f"{word} and rounding of the weather")
            reference.instruction = set(detector.instruction_words)
        detector.update(events.build(i, Message(Role.ASSISTANT, (TextBlock(text),)), i, 0))
        if text:
            reference.add(text)
        assert detector.window_words() == [w for w, _ in reference.window]
        assert detector.similarity == reference.similarity()
        assert detector._chars == sum(c for _, c in reference.window)


@pytest.mark.parametrize("seed", range(6))
def test_drift_tracks_the_first_distinct_words_of_a_long_request(seed: int) -> None:
    """A request of more than INSTRUCTION_WORD_LIMIT distinct words: the first that many distinct
    ones, in the order they first occur (repeats do not count against the limit)."""
    import random

    from ctxhealth.signals.drift import INSTRUCTION_WORD_LIMIT

    rng = random.Random(seed)
    numbers = [rng.randrange(100 + 150 * seed) for _ in range(900)]
    detector = DriftDetector(Profile(risk=None), sweet_spot=1)
    detector.set_instruction(" ".join(f"word{n}x" for n in numbers))
    distinct: list[str] = []
    seen: set[str] = set()
    for w in detector.task.words:
        if w not in seen:
            seen.add(w)
            distinct.append(w)
    assert detector.instruction_words == frozenset(distinct[:INSTRUCTION_WORD_LIMIT])


short_replies = st.lists(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=6).map(" ".join), max_size=40)


@settings(max_examples=300, deadline=None)
@given(short_replies, st.sampled_from([60, 120, 400]))
def test_drift_tracks_exactly_the_task_words_in_the_window_as_it_moves(texts: list[str], limit: int) -> None:
    """Short replies are appended word by word and the window's front moves through them (cutting a
    reply's run in two): after each, the task words tracked are those in the window, each at its last
    position there, and the similarity is the flat window's."""
    detector, reference, events = _drift_and_plain_window(limit)
    for i, text in enumerate(texts, start=1):
        detector.update(events.build(i, Message(Role.ASSISTANT, (TextBlock(text),)), i, 0))
        if text:
            reference.add(text)
        window = detector.window_words()
        start = detector._next - len(window)
        expected = {w: start + max(k for k, x in enumerate(window) if x == w) for w in set(window)}
        expected = {w: pos for w, pos in expected.items() if w in detector.instruction_words}
        assert dict(detector._last) == expected
        assert detector.similarity == reference.similarity()


# --------------------------------------------------------------------------- deferred signals


def _session(turns: int) -> list[Message]:
    msgs = [Message(Role.USER, (TextBlock("Fix the parser so offsets round-trip; keep the tests green."),))]
    for t in range(turns):
        text = ["Actually, that was wrong. I misread the parser.", f"Running the tests for case {t}.", ""][
            t % 3
        ]
        command = ["cat src/p.py", "python -m pytest -q", f"sed -i 's/a{t}/b/' src/p.py", "rm src/old.py"][
            t % 4
        ]
        msgs.append(
            Message(
                Role.ASSISTANT,
                (TextBlock(text), ToolCall(f"c{t}", "bash", {"command": command})),
                usage=Usage(input_tokens=20_000 + 9_000 * t, output_tokens=50, cache_read_tokens=1_000),
            )
        )
        msgs.append(
            Message(Role.USER, (ToolResult(f"c{t}", "Error: boom" if t % 3 else "ok", exit_code=t % 3),))
        )
    return msgs


def _reading(signals: Any) -> dict[str, Any]:
    return {name: s.to_dict() for name, s in signals.items()}


def test_signals_read_later_show_the_turn_they_were_assessed_at() -> None:
    msgs = _session(24)
    now = Monitor("claude-sonnet-4")
    later = Monitor("claude-sonnet-4")
    immediate, kept = [], []
    for i, msg in enumerate(msgs):
        a = now.observe(msg)
        immediate.append((a.to_dict(), _reading(a.signals)))
        kept.append(later.observe(msg))
        for m in (now, later):
            if i == 10:
                m.set_instruction("keep the weather tests green")
            if m.last is not None and m.last.action in (Action.RESTART, Action.TRUNCATE):
                m.record_recovery(m.last.action)
    assert [(a.to_dict(), _reading(a.signals)) for a in kept] == immediate


def test_an_assessment_dropped_by_its_caller_costs_no_snapshot() -> None:
    m = Monitor("claude-sonnet-4")
    msgs = _session(3)
    m.observe(msgs[0])
    ref = m._pending
    assert ref is not None and ref() is not None  # still held as ``m.last``
    m.observe(msgs[1])  # drops ``m.last`` first: nobody holds the previous reading
    assert ref() is None
    held = m.observe(msgs[2])
    m.observe(msgs[3])
    assert held.signals._parts is not None  # frozen before the detectors changed


_PLAIN_HEDGE = re.compile(
    r"\b(?:but|however|hm{2,}|still|seems?|wait|actually|maybe|might|perhaps|probably|not sure)\b"
)


def test_hedges_counted_from_the_shared_word_runs_match_the_plain_count() -> None:
    texts = [
        "But maybe it still fails, hmm.",
        "Ébut not sure — 🚀 wait",
        "\u212aBUT however",
        "x_but but2 but",
    ]
    m = Monitor("claude-sonnet-4", track_hedges=True)
    for text in texts:
        m.observe(Message(Role.ASSISTANT, (TextBlock(text),)))
    assert m.hedges == sum(count_hedges(t) for t in texts)
    assert m.hedges == sum(len(_PLAIN_HEDGE.findall(t.lower())) for t in texts)


_HEDGY = ["but", "But", "still", "seems", "hmm", "not sure", "wait", "maybe", "perhaps"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_HEDGY + _ODD + ["—", "é"]) | st.text(max_size=2), max_size=30).map("".join))
def test_hedge_count_from_word_runs_is_the_regex_count(text: str) -> None:
    assert count_hedges(text) == len(_PLAIN_HEDGE.findall(text.lower()))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet=" \t\r\x0b\x0c\x1c\x1f\x85\xa0\u2003\u3000\x00ab.é\ud800", max_size=50), max_size=12
    )
)
def test_sentence_hashes_normalise_whitespace_as_each_sentence_alone(found: list[str]) -> None:
    """The one-pass normalisation (sentences glued, split, joined, cut apart) gives each sentence's own
    hash, also for whitespace-only sentences, NULs and Unicode whitespace."""
    assert indicators.sentence_hashes(found) == [stable_hash(" ".join(s.split())) for s in found]


# --------------------------------------------------------------------------- long replies' fast paths

_WIDE = [*_ODD, "✅", "×", "\u03a3", "\xa0", "\u2003", "\t", "  ", "\x00", "\ud800", "Word", "but ", "wait"]
wide_texts = st.lists(st.sampled_from(_WIDE) | st.text(max_size=4), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(wide_texts, st.integers(min_value=1, max_value=60))
def test_drift_tail_from_the_folded_text_is_the_tails_words(text: str, limit: int) -> None:
    """A long reply's tail words from its folded text (already folded for the hedge count) are the
    content words of the tail itself, also around ``İ``, the Kelvin sign and final sigma."""
    fresh = Event(0, Message(Role.ASSISTANT, (TextBlock(text),)), 1, 0, text=text)
    assert fresh.tail_stems(limit) == content_words(text[-limit:])
    fresh.folded  # noqa: B018 (a reader folds the whole text first)
    assert fresh.tail_stems(limit) == content_words(text[-limit:])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=" ab.é✅\xa0\t\x00\ud800İ", max_size=60), max_size=10))
def test_sentence_hashes_fast_path_is_the_definition(found: list[str]) -> None:
    """Sentences with single spaces only (stripped at the ends) and the rest give the plain hashes."""
    found = [*found, *(" ".join(s.split()) for s in found), *(f" {s.strip()} " for s in found)]
    assert indicators.sentence_hashes(found) == [stable_hash(" ".join(s.split())) for s in found]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*_REVERSALS, *_ODD, "didn't work", "do not see"]), max_size=12).map("".join))
def test_hints_searched_in_bytes_are_the_substring_test(opening: str) -> None:
    low = opening.lower()
    assert indicators.hinted(low) == (
        any(h in low for h in indicators._CONTRADICTION_HINTS),
        any(h in low for h in indicators._MISSING_HINTS),
    )


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from("abcdefghijkl"), max_size=40),
    st.frozensets(st.sampled_from("abcdefghijklmnop"), max_size=14),
    st.integers(min_value=0, max_value=50),
    st.integers(min_value=0, max_value=45),
)
def test_last_positions_of_a_few_words_are_the_last_occurrences(
    stems: list[str], words: frozenset[str], base: int, start: int
) -> None:
    found = words.intersection(stems[start:])
    expected = {w: base + max(i for i, s in enumerate(stems) if s == w) for w in found}
    got = _last_positions(stems, words, base, start)
    assert got == expected
    assert list(got) == list(expected)


# --------------------------------------------------------------------------- call keys


def _plain_normalise(value: Any) -> str:
    """The canonical form of a tool input, written out: strings re-spaced up to 1,000 characters,
    dict entries sorted by key, every other value by ``str``."""
    if isinstance(value, str):
        return " ".join(value.split()) if len(value) <= 1000 else value
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={_plain_normalise(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_plain_normalise(v) for v in value) + "]"
    return str(value)


@settings(max_examples=400, deadline=None)
@given(json_values | st.dictionaries(st.text(max_size=4), json_values | st.just("a b\n" * 300), max_size=5))
def test_call_key_text_is_the_plain_canonical_form(value: Any) -> None:
    from ctxhealth.signals.base import normalise_text

    assert normalise_text(value) == _plain_normalise(value)


_big = st.lists(st.sampled_from(["x", " ", "\n", "é", "😀", "\ud800", "\udc00", "a" * 997]), max_size=12).map(
    "".join
)


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=6),
    json_values
    | st.dictionaries(st.text(max_size=4), json_values | _big | st.just("b \u2028" * 1500), max_size=5)
    | st.lists(_big | st.just("\ud83d" + "z" * 5000 + "\ude00"), max_size=4),
)
def test_call_key_hashed_by_pieces_is_the_hash_of_the_key_text(prefix: str, value: Any) -> None:
    """Long inputs are hashed piece by piece (lone surrogates split across pieces, non-ASCII, past
    the join limit): the key is the hash of the key text all the same."""
    from ctxhealth.signals.base import key_hash, normalise_text

    assert key_hash(prefix, value) == stable_hash(prefix + _plain_normalise(value))
    assert normalise_text(value) == _plain_normalise(value)


@settings(max_examples=200, deadline=None)
@given(commands, st.sampled_from(["Bash", "shell", "exec_command", "Read", "Write"]))
def test_a_calls_key_is_the_hash_of_its_canonical_text(command: str, tool: str) -> None:
    """The key a call is remembered by (and saved in snapshots): a shell call's is its name and its
    command re-spaced, any other call's its name and its canonical input."""
    info = calls.parse_call(ToolCall("c", tool, {"command": command, "file_path": command[:9]}))
    if tool.lower() in calls._SHELL_TOOLS:
        assert info.key == stable_hash(f"{tool}:{' '.join(command.split())}")
    else:
        assert info.key == stable_hash(
            f"{tool}:{_plain_normalise({'command': command, 'file_path': command[:9]})}"
        )


# --------------------------------------------------------------------------- pressure readings


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(0, 1_200_000), st.sampled_from(["gpt-4.1", "claude-sonnet-4-5", "gpt-4o-mini"])
        ),
        max_size=40,
    )
)
def test_pressure_read_once_per_fill_is_the_reading_recomputed_each_time(
    steps: list[int | str],
) -> None:
    """The tracker skips a message whose fill it has already read (unless the model changed): its
    readings, zone and where the zone began are those of a tracker that recomputes on every one."""
    from ctxhealth.accounting.registry import ModelRegistry
    from ctxhealth.policy.profile import default_profile
    from ctxhealth.signals.pressure import PressureTracker

    registry = ModelRegistry.default()
    profile = default_profile()
    fast = PressureTracker(registry.lookup("gpt-4.1"), profile)
    plain = PressureTracker(registry.lookup("gpt-4.1"), profile)
    message = Message(Role.USER, (TextBlock("x"),))
    fill = 0
    for index, step in enumerate(steps):
        if isinstance(step, str):
            fast.set_model(registry.lookup(step))
            plain.set_model(registry.lookup(step))
        else:
            fill = step if index % 3 else fill  # every third message repeats the fill before it
        for tracker in (fast, plain):
            if tracker is plain:
                tracker._stale = True
            tracker.update(Event(index, message, 1, fill))
        assert fast.serialize() == plain.serialize()
        assert (fast.zone, fast.pressure, fast.signals()) == (plain.zone, plain.pressure, plain.signals())


# --------------------------------------------------------------------------- counted characters


@settings(max_examples=300, deadline=None)
@given(st.lists(json_values | st.dictionaries(st.text(max_size=3), json_values, max_size=4), max_size=3))
def test_counted_characters_are_the_length_of_the_counted_text(inputs: list[Any]) -> None:
    """``message_chars`` measures tool inputs on their JSON bytes when those are ASCII: it is the
    length of ``message_text_for_count`` (non-ASCII text, lone surrogates and odd keys included)."""
    from ctxhealth.accounting.tokens import message_chars, message_text_for_count

    blocks = [ToolCall(f"c{i}", "Edit", value) for i, value in enumerate(inputs)]
    message = Message(Role.ASSISTANT, (TextBlock("é ok"), *blocks, ToolResult("c0", "done")))
    assert message_chars(message) == len(message_text_for_count(message))


@settings(max_examples=300, deadline=None)
@given(
    risk_models(),
    st.lists(
        st.none() | st.sampled_from([-0.0, 0.0, -1.0, math.inf, -math.inf]) | st.floats(-50, 1e6),
        min_size=10,
        max_size=10,
    ),
)
def test_linear_score_is_the_formula_with_max_bit_for_bit(
    model: RiskModel, values: list[float | None]
) -> None:
    """``linear_values`` clamps log inputs at zero without calling ``max``: the same float, bit for
    bit (negative zero and infinities included), as the formula written with ``max``."""
    row = values[: len(model.features)]
    turns = row[model.features.index("turns")] if "turns" in model.features else None
    phase = 1.0 if model.phase_in <= 0 or turns is None else min(1.0, max(turns, 0.0) / model.phase_in)
    z = model.bias
    for i, (name, w, mu, sd) in enumerate(
        zip(model.features, model.weights, model.mean, model.scale, strict=True)
    ):
        raw = row[i]
        if raw is None or w == 0.0:
            continue
        x = math.log1p(max(raw, 0.0)) if name in model.log_features else raw
        z += (1.0 if name == model.anchor else phase) * w * (x - mu) / sd
    got = model.linear_values(row)
    assert (math.isnan(got) and math.isnan(z)) or (
        got == z and math.copysign(1.0, got) == math.copysign(1.0, z)
    )


def test_every_verify_anchor_holds_a_hint() -> None:
    """A long command skips the hint gate and goes to the anchors: that is the same answer only if
    every anchor (where each match of the pattern starts) contains one of the hints."""
    for anchor in calls._VERIFY_ANCHORS:
        assert any(hint in anchor for hint in calls._VERIFY_HINTS), anchor


@settings(max_examples=300, deadline=None)
@given(commands, st.integers(1, 12))
def test_a_command_verifies_where_the_plain_pattern_finds_a_check(command: str, times: int) -> None:
    """The shell parse marks VERIFY where the verify pattern, searched plainly, finds a check in the
    probe it reads (the head and the tail of a long command), at every length."""
    command = (command + "\n") * times
    head, tail = calls.SHELL_HEAD, calls.SHELL_TAIL
    probe = command if len(command) <= head + tail else f"{command[:head]}\n{command[-tail:]}"
    kinds = calls._parse_shell(command)[0]
    assert (calls.CallKind.VERIFY in kinds) == (calls._VERIFY.search(probe) is not None)


blocks = st.lists(
    st.one_of(
        st.text(max_size=6).map(TextBlock),
        st.text(max_size=6).map(ThinkingBlock),
        st.text(max_size=6).map(lambda t: CompactionSummary(t)),
        st.builds(ToolCall, st.text(max_size=2), st.text(max_size=4), json_values),
        st.builds(ToolResult, st.text(max_size=2), st.text(max_size=6)),
        st.just(ImageBlock()),
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(blocks)
def test_size_parts_in_one_pass_are_the_counted_characters_and_the_framing(found: list[Any]) -> None:
    """The running fill's one pass over a message's blocks gives what ``message_chars`` and
    ``message_overhead`` give, block kinds and empty messages included."""
    from ctxhealth.accounting.running import message_size
    from ctxhealth.accounting.tokens import (
        DEFAULT_CHARS_PER_TOKEN,
        message_chars,
        message_overhead,
        message_size_parts,
    )

    message = Message(Role.ASSISTANT, tuple(found))
    assert message_size_parts(message) == (message_chars(message), message_overhead(message))
    assert message_size(message) == message_chars(message) + int(
        message_overhead(message) * DEFAULT_CHARS_PER_TOKEN
    )


@settings(max_examples=200, deadline=None)
@given(commands, st.sampled_from(["bash", "Bash", "shell", "exec_command"]))
def test_a_shell_command_parses_the_same_whatever_input_shape_holds_it(command: str, tool: str) -> None:
    """``{"command": ...}`` is read without the general walk over input shapes: the call is the one
    the walk gives for the same command under another key or as an argv list."""
    fast = calls.parse_call(ToolCall("c", tool, {"command": command}))
    for value in ({"cmd": command}, {"script": command, "x": 1}, ["bash", "-lc", command]):
        assert calls.parse_call(ToolCall("c", tool, value)) == fast
