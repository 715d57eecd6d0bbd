"""What a warm pack remembers across runs — the walked listing, compressed texts and rendered
signatures, word bags kept out of the index file, each file's declaration count — and the fast
paths of the warm run, each checked against its definition: a change to the tree between packs
(edit, add, delete, rename, a ``.gitignore``) gives the pack a cold run gives."""

from __future__ import annotations

import os
import posixpath
import re
import tempfile
import time
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxhealth.pack.candidates as candidates
from ctxhealth.pack import pack
from ctxhealth.pack.assemble import RepoPacker
from ctxhealth.pack.cache import bags_path, cache_path
from ctxhealth.pack.candidates import list_candidates
from ctxhealth.pack.dedup import shingles, shingles_by_definition
from ctxhealth.pack.facts import read_facts
from ctxhealth.pack.index import build_index
from ctxhealth.pack.priority import IMPORTED_BY_MANY, Tier, assign_tiers
from ctxhealth.pack.render import _BACKTICKS, _fence
from ctxhealth.pack.similarity import (
    Bm25Index,
    StoredVocab,
    load_bm25,
    name_matches,
    name_matches_by_definition,
    save_bm25,
)
from ctxhealth.pack.textcache import TextMemo, text_key, texts_path
from pack_repo import write_repo

TASK = "InvoiceRenderer.render_total() in billing/invoice.py shows the wrong tax amount"
RACY_S = 0.05


def same(manifest: dict[str, object]) -> dict[str, object]:
    """The manifest but its index-cache figures (hits and misses differ between runs by design)."""
    return {k: v for k, v in manifest.items() if k != "candidates"}


@pytest.fixture
def quick_racy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust folder times older than 50 ms (the tests wait that long after each change)."""
    monkeypatch.setattr(candidates, "RACY_NS", int(RACY_S * 1e9))


def settle() -> None:
    time.sleep(RACY_S + 0.02)


def assert_like_cold(repo: Path, home: Path, tmp_path: Path, **options: object) -> None:
    warm = pack(repo, TASK, budget=3_000, cache_home=home, **options)  # type: ignore[arg-type]
    cold_home = tmp_path / f"cold-{time.monotonic_ns()}"
    cold = pack(repo, TASK, budget=3_000, cache_home=cold_home, **options)  # type: ignore[arg-type]
    assert warm.text == cold.text
    assert same(warm.manifest) == same(cold.manifest)
    assert warm.manifest["candidates"]["files"] == cold.manifest["candidates"]["files"]


@pytest.mark.usefixtures("quick_racy")
def test_edit_add_delete_rename_and_gitignore_between_packs_pack_as_cold(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    home = tmp_path / "home"
    settle()
    memo = cache_path(home, repo).with_suffix(".listing")
    first = pack(repo, TASK, budget=3_000, cache_home=home)
    assert memo.is_file()
    assert list_candidates(repo, memo).remembered  # the next run takes the walk from the memo
    assert list_candidates(repo, memo) == list_candidates(repo)
    assert texts_path(cache_path(home, repo)).is_file()
    assert_like_cold(repo, home, tmp_path)

    # an edit in place changes no folder: the listing is remembered, the index re-reads the file,
    # and its compressed text is derived again (a new content hash)
    invoice = repo / "billing" / "invoice.py"
    invoice.write_text(invoice.read_text().replace("# the total includes tax", "# gross: tax included"))
    assert list_candidates(repo, memo).remembered
    assert_like_cold(repo, home, tmp_path)
    edited = pack(repo, TASK, budget=3_000, cache_home=home)
    assert "gross: tax included" not in edited.text  # comments stripped from the new text
    assert "# the total includes tax" not in invoice.read_text()
    assert edited.text != first.text or same(edited.manifest) != same(first.manifest)
    settle()
    changed: list[bool] = []

    steps = [
        lambda: (repo / "billing" / "discount.py").write_text(
            "def invoice_discount(amount):\n    return amount * 0.9  # InvoiceRenderer tax\n"
        ),
        lambda: (repo / "billing" / "refunds.py").unlink(),
        lambda: (repo / "billing" / "tax.py").rename(repo / "billing" / "rates.py"),
        lambda: (repo / ".gitignore").write_text("shipping/\n"),
        lambda: (repo / ".gitignore").write_text("shipping/\nweb/\n"),  # an edit of an ignore file
        lambda: (repo / "billing" / "sub").mkdir(),  # a new (empty) folder: no new candidate
        lambda: (repo / "billing" / "sub" / "more.py").write_text("TAX = 'InvoiceRenderer'\n"),
    ]
    for step in steps:
        before = list_candidates(repo)
        step()
        assert not list_candidates(repo, memo).remembered  # the change is seen: walked again
        assert list_candidates(repo, memo) == list_candidates(repo)
        assert_like_cold(repo, home, tmp_path)
        settle()
        pack(repo, TASK, budget=3_000, cache_home=home)  # remembers the new walk
        assert list_candidates(repo, memo).remembered
        assert list_candidates(repo, memo) == list_candidates(repo)
        changed.append(list_candidates(repo) != before)
    assert changed == [True, True, True, True, True, False, True]


def test_a_recent_change_is_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(candidates, "RACY_NS", 3_600 * 10**9)  # however slow this machine is
    repo = write_repo(tmp_path / "repo")  # written just now: within RACY_NS of the walk
    memo = tmp_path / "listing"
    list_candidates(repo, memo)
    assert not memo.exists()


@pytest.mark.usefixtures("quick_racy")
def test_a_tree_with_a_link_is_walked_every_time(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    (repo / "linked.py").symlink_to(repo / "billing" / "tax.py")
    settle()
    memo = tmp_path / "listing"
    list_candidates(repo, memo)
    assert not memo.exists()


@pytest.mark.usefixtures("quick_racy")
def test_a_listing_memo_that_does_not_parse_or_lies_is_not_trusted(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    settle()
    memo = tmp_path / "listing"
    truth = list_candidates(repo, memo)
    memo.write_bytes(b"{not json")
    got = list_candidates(repo, memo)
    assert not got.remembered and got == truth
    settle()
    list_candidates(repo, memo)
    text = memo.read_text()
    memo.write_text(text.replace("billing/tax.py", "billing/gone.py"))  # a kept file not there
    got = list_candidates(repo, memo)
    assert not got.remembered and got == truth


def test_the_index_file_holds_no_word_bags_and_the_bags_file_gives_them_back(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    home = tmp_path / "home"
    cold = build_index(repo, cache_home=home)
    cold_bags = cold.bags()
    file = cache_path(home, repo)
    assert b"reconciliation" not in file.read_bytes()  # a docstring's word: in the bags file only
    assert b"reconciliation" in bags_path(file).read_bytes()
    warm = build_index(repo, cache_home=home)
    assert all(f.bag_json is None for f in warm.facts.values())
    assert warm.bags() == cold_bags
    bags_path(file).write_bytes(b"garbage")  # unreadable: each bag is read again from its file
    again = build_index(repo, cache_home=home)
    assert again.bags() == cold_bags
    again.flush()
    assert build_index(repo, cache_home=home).bags() == cold_bags


def test_bm25_rebuilt_after_a_change_from_stored_bags_packs_as_cold(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    home = tmp_path / "home"
    pack(repo, TASK, budget=3_000, cache_home=home)
    (repo / "billing" / "currency.py").write_text("def format_amount(value):\n    return value\n")
    warm = RepoPacker(repo, cache_home=home)
    got = warm.pack(TASK, budget=3_000)
    assert sum(f.bag_json is None for f in warm.index.facts.values()) == 0  # bags loaded to rebuild
    cold = pack(repo, TASK, budget=3_000, cache_home=tmp_path / "cold")
    assert got.text == cold.text and same(got.manifest) == same(cold.manifest)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_the_declaration_count_in_the_index_is_the_packers_count_of_the_text(data: bytes) -> None:
    data = b"\n".join([data, b"def f():", b"class A:", data, b" def g(): pass"])
    facts = read_facts("m.py", data)
    text = data.decode("utf-8", "replace")  # what the packer reads (RepoIndex.text)
    assert facts.declarations == text.count("\ndef ") + text.count("\nclass ")


_SPACES = st.sampled_from(
    [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2003", "\u3000"]
)
_WORDS = st.sampled_from(["a", "def", "x=1", "ünï", "`", "#", "return", "日本", ""])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_SPACES, _WORDS), max_size=60))
def test_shingles_are_the_definitions(parts: list[str]) -> None:
    paragraph = "".join(parts)
    assert shingles(paragraph) == shingles_by_definition(paragraph)


def test_str_split_splits_where_the_regex_sees_whitespace() -> None:
    space = re.compile(r"\s")
    assert all((space.match(chr(c)) is not None) == chr(c).isspace() for c in range(0x110000))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="`a\n ", max_size=40))
def test_the_fence_is_the_definitions(text: str) -> None:
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=2)
    assert _fence(text) == "`" * max(3, longest + 1)


_PATHS = [
    "billing/invoice.py",
    "billing/__init__.py",
    "django/db/models/query.py",
    "django/db/models/__init__.py",
    "query.py",
    "docs/ref/models/querysets.txt",
    "a/b.py",
    "b.py",
]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "billing/invoice.py",
                "models/query.py",
                "query.py",
                "django.db.models",
                "db.models.query",
                "InvoiceRenderer",
                "QuerySet.filter()",
                "b.py",
                "./",
                "fix",
                "the",
                "render_total",
            ]
        ),
        max_size=8,
    ),
    st.lists(
        st.lists(st.sampled_from(["InvoiceRenderer", "QuerySet", "filter", "render_total", "x"])),
        min_size=8,
        max_size=8,
    ),
)
def test_name_matches_are_the_definitions(words: list[str], defines: list[list[str]]) -> None:
    task = " ".join(words)
    assert name_matches(task, _PATHS, defines) == name_matches_by_definition(task, _PATHS, defines)


def test_name_matches_on_the_real_tasks_are_the_definitions() -> None:
    tasks = (
        Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "packing" / "django_dev_tasks.jsonl"
    )
    if not tasks.is_file():
        pytest.skip("the packing tasks are not in ../shared/data")
    import json

    ours = Path(__file__).resolve().parents[1]
    paths = sorted(str(p.relative_to(ours)) for p in (ours / "src").rglob("*.py"))
    paths += [f"django/{p.split('/', 1)[-1]}" for p in paths]
    defines = [read_facts(p, (ours / p).read_bytes()).defines if (ours / p).is_file() else () for p in paths]
    for line in tasks.read_text().splitlines():
        task = json.loads(line)["task"]
        assert name_matches(task, paths, defines) == name_matches_by_definition(task, paths, defines)


_VOCAB_WORDS = st.text(alphabet="abcé\n", max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(_VOCAB_WORDS, unique=True, max_size=30), st.lists(_VOCAB_WORDS, max_size=20))
def test_the_stored_vocabulary_answers_as_the_dict_it_stands_for(vocab: list[str], query: list[str]) -> None:
    vocab = [w for w in vocab if w and "\n" not in w]
    terms = {w: i for i, w in enumerate(vocab)}
    index = Bm25Index(terms, array("q", [0] * (len(vocab) + 1)), array("i"), array("f"), 0)
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "x.bm25"
        save_bm25(file, "key", index)
        stored = load_bm25(file, "key")
    assert stored is not None and isinstance(stored.vocab, StoredVocab)
    plain = StoredVocab("\n".join(vocab).encode())  # no stored order: a search through the bytes
    for word in [*vocab, *query, "zz", "a\nb"]:
        assert stored.vocab.get(word) == plain.get(word) == terms.get(word)
    assert stored.vocab.find_all(query) == {w: terms[w] for w in query if w in terms}
    assert dict(stored.vocab.items()) == terms


def test_the_text_memo_round_trips_and_distrusts_changed_bytes(tmp_path: Path) -> None:
    file = tmp_path / "memo.texts"
    memo = TextMemo(file)
    key = text_key("compressed", "a.py", "d1", "strip")
    other = text_key("compressed", "a.py", "d2", "strip")
    assert (
        key
        != other
        != text_key("compressed", "b.py", "d1", "strip")
        != text_key("compressed", "a.py", "d1", "keep")
    )
    memo.put(key, "print('hé')\n")
    memo.put(other, "x = 1\n")
    memo.save()
    again = TextMemo(file)
    assert again.get(key) == "print('hé')\n" and again.get(other) == "x = 1\n"
    assert again.get(text_key("signatures", "a.py", "d1")) is None
    data = bytearray(file.read_bytes())
    at = data.rfind(b"x = 1")
    data[at] = ord("y")
    file.write_bytes(bytes(data))
    assert TextMemo(file).get(other) is None  # its check hash no longer matches: recomputed
    assert TextMemo(file).get(key) == "print('hé')\n"
    third = TextMemo(file)
    third.put(text_key("signatures", "a.py", "d1"), "def f(): ...\n")
    third.save()  # copies the earlier texts, the changed one with its old check hash
    fourth = TextMemo(file)
    assert fourth.get(other) is None and fourth.get(key) == "print('hé')\n"
    assert fourth.get(text_key("signatures", "a.py", "d1")) == "def f(): ...\n"
    file.write_bytes(b"not a memo")
    assert TextMemo(file).get(key) is None


def test_a_warm_pack_reads_no_file_it_packed_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = write_repo(tmp_path / "repo")
    home = tmp_path / "home"
    cold = pack(repo, TASK, budget=3_000, cache_home=home)
    pack(repo, TASK, budget=3_000, cache_home=home)  # remembers what the first run derived
    read: list[str] = []
    real = candidates.open_inside

    def spy(top: str, real_top: str, path: str, limit: int) -> bytes:
        read.append(path)
        return real(top, real_top, path, limit)

    monkeypatch.setattr("ctxhealth.pack.index.open_inside", spy)
    warm = pack(repo, TASK, budget=3_000, cache_home=home)
    assert read == []
    assert warm.text == cold.text and same(warm.manifest) == same(cold.manifest)
    assert os.path.getsize(texts_path(cache_path(home, repo))) > 0


def _tiers_by_definition(
    paths: list[str], a_files: list[str], graph: dict[str, list[str]]
) -> dict[str, Tier]:
    """:func:`assign_tiers` as the loop over every path it is (for any set of A files)."""
    a_set = set(a_files)
    direct = {t for a in a_set for t in graph.get(a, [])}
    counts: dict[str, int] = {}
    for a in a_set:
        for t in graph.get(a, []):
            counts[t] = counts.get(t, 0) + 1
    packages = {posixpath.dirname(a) for a in a_set}
    out: dict[str, Tier] = {}
    for p in paths:
        if p in a_set:
            out[p] = Tier.A
        elif p in direct or counts.get(p, 0) > IMPORTED_BY_MANY:
            out[p] = Tier.B
        elif posixpath.dirname(p) in packages:
            out[p] = Tier.C
        else:
            out[p] = Tier.OTHER
    return out


_TREE = ["a.py", "pkg/b.py", "pkg/c.py", "pkg/sub/d.py", "e/f.py", "g.py"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(_TREE), max_size=3),
    st.dictionaries(st.sampled_from(_TREE), st.lists(st.sampled_from(_TREE), max_size=3), max_size=4),
)
def test_tiers_are_the_definitions(a_files: list[str], graph: dict[str, list[str]]) -> None:
    assert assign_tiers(_TREE, a_files, graph) == _tiers_by_definition(_TREE, a_files, graph)
    assert [t.rank for t in Tier] == [0, 1, 2, 3]
