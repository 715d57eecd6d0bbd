"""The memo of exact counts: a warm pack whose texts were counted before counts nothing (the
vocabulary is never loaded), and the payload and manifest are those of a pack without a memo."""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxhealth.accounting.tokens as tokens
from ctxhealth.pack import pack
from ctxhealth.pack.cache import cache_path
from ctxhealth.pack.counts import CountMemo, memo_path
from pack_repo import write_repo


def same(manifest: dict[str, object]) -> dict[str, object]:
    """The manifest but its index-cache figures (hits and misses differ between runs by design)."""
    return {k: v for k, v in manifest.items() if k != "candidates"}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    real = tokens.count_batch  # the memo imports the counter only for a text it cannot answer

    def counting(texts: list[str], encoding: str | None = None) -> object:
        seen.append(len(texts))
        return real(texts, encoding)

    monkeypatch.setattr(tokens, "count_batch", counting)
    return seen


def test_a_warm_pack_counts_nothing_and_packs_the_same(tmp_path: Path, calls: list[int]) -> None:
    repo = write_repo(tmp_path / "repo")
    home = tmp_path / "home"
    task = "InvoiceRenderer.render_total() shows the wrong amount"
    first = pack(repo, task, budget=2_000, cache_home=home)
    assert calls  # cold: texts counted with the vocabulary
    assert memo_path(cache_path(home, repo)).is_file()
    calls.clear()
    second = pack(repo, task, budget=2_000, cache_home=home)
    assert calls == []  # warm: every count came from the memo
    plain = pack(repo, task, budget=2_000)  # no cache at all
    assert second.text == first.text == plain.text
    assert same(second.manifest) == same(first.manifest) == same(plain.manifest)


def test_another_task_counts_only_new_texts_and_matches_a_pack_without_memo(
    tmp_path: Path, calls: list[int]
) -> None:
    repo = write_repo(tmp_path / "repo")
    home = tmp_path / "home"
    pack(repo, "InvoiceRenderer.render_total() shows the wrong amount", budget=2_000, cache_home=home)
    cold = len(calls)
    calls.clear()
    other = pack(repo, "refunds are shown twice", budget=3_000, cache_home=home)
    assert 0 < len(calls) < cold + 50
    plain = pack(repo, "refunds are shown twice", budget=3_000)
    assert other.text == plain.text and same(other.manifest) == same(plain.manifest)


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[]", b'{"schema": 1, "encoding": "cl100k_base", "counts": {}}', b'{"schema": 1}'],
)
def test_a_memo_that_cannot_be_used_is_ignored(tmp_path: Path, content: bytes) -> None:
    file = tmp_path / "x.counts.json"
    file.write_bytes(content)
    memo = CountMemo("o200k_base", file)
    assert memo.known == {}
    assert memo("hello world") == 2 and memo.counted == 1
    memo.save()
    again = CountMemo("o200k_base", file)
    assert len(again.known) == 1 and again("hello world") == 2 and again.counted == 0


def test_wrong_values_in_a_memo_are_dropped(tmp_path: Path) -> None:
    file = tmp_path / "x.counts.json"
    file.write_bytes(b'{"schema": 1, "encoding": "o200k_base", "counts": {"a": -1, "b": "3", "c": true}}')
    assert CountMemo("o200k_base", file).known == {}
