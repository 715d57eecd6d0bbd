"""A warm pack runs without numpy: MinHash in Python integers, BM25 summed over the query's posting
lists, the index stored as flat arrays. Each is checked equal to the numpy computation it replaced
(the same values, not approximately), and a warm pack is checked not to import numpy at all (nor the
tokenizer when every count is remembered, nor the transcript model without a history)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ctxhealth.pack import dedup
from ctxhealth.pack.dedup import BANDS, JACCARD_THRESHOLD, MIN_SHINGLES, ROWS, ParagraphDeduper
from ctxhealth.pack.similarity import Bm25Index, build_bm25, load_bm25, save_bm25, similarity_scores
from pack_repo import write_repo

_P = np.uint64((1 << 61) - 1)
_M = np.uint64((1 << 32) - 1)


def _numpy_hash_functions() -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.RandomState(1)
    a = generator.randint(1, (1 << 32) - 1, size=64, dtype=np.uint64)
    b = generator.randint(0, (1 << 32) - 1, size=64, dtype=np.uint64)
    return a, b


def _numpy_minhash(items: frozenset[bytes]) -> list[int]:
    a, b = _numpy_hash_functions()
    hashes = np.fromiter((dedup.shingle_hash(s) for s in sorted(items)), dtype=np.uint64, count=len(items))
    return [int(x) for x in (((np.outer(hashes, a) + b) % _P) & _M).min(axis=0)]


def test_the_hash_functions_are_numpys_seeded_draws() -> None:
    a, b = _numpy_hash_functions()
    assert list(dedup._A) == [int(x) for x in a] and list(dedup._B) == [int(x) for x in b]


def test_minhash_equals_the_numpy_sketch() -> None:
    rng = random.Random(7)
    for size in (1, 8, 40, 300):
        items = frozenset(f"w{rng.randrange(10**9)} x{i}".encode() for i in range(size))
        assert list(dedup.minhash(items)) == _numpy_minhash(items)


class _LshDeduper:
    """The banded LSH lookup as it was: candidates are the kept paragraphs filed in one of the
    sketch's bands, tried in key order; the first with exact Jaccard above the threshold is the twin."""

    def __init__(self) -> None:
        self.buckets: dict[tuple[int, tuple[int, ...]], list[str]] = {}
        self.kept: dict[str, tuple[str, frozenset[bytes]]] = {}

    def twins(self, path: str, text: str) -> tuple[list[str | None], list[tuple[str, frozenset[bytes]]]]:
        out: list[str | None] = []
        pending = []
        for number, paragraph in enumerate(dedup._PARAGRAPHS.split(text)):
            items = dedup.shingles(paragraph)
            if len(items) < MIN_SHINGLES:
                continue
            sketch = _numpy_minhash(items)
            bands = [(i, tuple(sketch[i * ROWS : (i + 1) * ROWS])) for i in range(BANDS)]
            found = sorted({k for band in bands for k in self.buckets.get(band, ())})
            twin = next(
                (
                    self.kept[k][0]
                    for k in found
                    if len(items & self.kept[k][1]) / len(items | self.kept[k][1]) > JACCARD_THRESHOLD
                ),
                None,
            )
            out.append(twin)
            if twin is None:
                pending.append((f"{path}#{number}", items))
                for band in bands:
                    self.buckets.setdefault(band, []).append(f"{path}#{number}")
        return out, pending

    def commit(self, path: str, pending: list[tuple[str, frozenset[bytes]]]) -> None:
        for key, items in pending:
            self.kept[key] = (path, items)


def test_dedup_finds_the_twins_the_lsh_index_found() -> None:
    # Paragraphs of 12 to 40 words from a small vocabulary, with copies that differ in a word or a
    # few: some pairs are just above the threshold, some just below, some collide in no band.
    rng = random.Random(3)
    vocab = [f"v{i}" for i in range(30)]
    base = [" ".join(rng.choice(vocab) for _ in range(rng.randint(12, 40))) for _ in range(40)]
    ours, reference = ParagraphDeduper(), _LshDeduper()
    merged = 0
    for f in range(30):
        paragraphs = []
        for _ in range(4):
            words = rng.choice(base).split()
            for _ in range(rng.choice((0, 0, 1, 2, 4))):
                words[rng.randrange(len(words))] = rng.choice(vocab)
            paragraphs.append(" ".join(words))
        text = "\n\n".join(paragraphs)
        path = f"f{f}.py"
        result = ours.dedupe(path, text)
        twins, pending = reference.twins(path, text)
        # which of the long-enough paragraphs were replaced, and by a pointer to which file
        replaced = dedup._PARAGRAPHS.split(result.text)
        pointers = [line.split("see ")[1].split(" ...")[0] for line in replaced if "near-duplicate" in line]
        assert pointers == [t for t in twins if t is not None]
        assert [k for k, _ in result.pending] == [k for k, _ in pending]
        merged += result.replaced
        ours.commit(result)
        reference.commit(path, pending)
    assert merged > 10  # the case is not vacuous


def _numpy_scores(index: Bm25Index, query: dict[str, float]) -> list[float]:
    out = np.zeros(index.n_docs, dtype=np.float64)
    starts, docs = np.asarray(index.starts), np.asarray(index.docs)
    weights = np.frombuffer(index.weights.tobytes(), dtype=np.float32)
    for word, weight in query.items():
        term = index.vocab.get(word)
        if term is not None:
            lo, hi = starts[term], starts[term + 1]
            np.add.at(out, docs[lo:hi], weights[lo:hi] * weight)
    return [float(x) for x in out]


def test_bm25_scores_equal_numpys_add_at() -> None:
    rng = random.Random(11)
    words = [f"t{i}" for i in range(60)]
    bags = [{w: rng.randint(1, 9) for w in rng.sample(words, rng.randint(0, 25))} for _ in range(200)]
    index = build_bm25(bags)
    for weights in ((1.0,), (2.0, 3.0), (0.1, 7.0, 1.0)):
        query = {w: rng.choice(weights) for w in rng.sample(words, 12)} | {"absent": 5.0}
        assert index.scores(query) == _numpy_scores(index, query)
    paths = [f"m{i}.py" for i in range(200)]
    blended = similarity_scores("t1 t2 t3 t2 `m7`", index, paths, [()] * 200)
    bm25 = np.asarray(index.scores({"m7": 2.0, "t1": 1.0, "t2": 2.0, "t3": 1.0}))
    assert len(blended) == 200 and all(0.0 <= x <= 1.0 for x in blended)
    assert blended == [float(x) for x in 0.7 * (bm25 / bm25.max()) + 0.3 * np.zeros(200)]


def test_a_stored_index_that_is_cut_or_foreign_is_rebuilt(tmp_path: Path) -> None:
    index = build_bm25([{"alpha": 2}, {"beta": 1, "alpha": 1}])
    file = tmp_path / "i.bm25"
    save_bm25(file, "k", index)
    loaded = load_bm25(file, "k")
    assert loaded is not None and loaded.scores({"alpha": 1.0}) == index.scores({"alpha": 1.0})
    data = file.read_bytes()
    for broken in (data[:-4], data + b"\0", b"PK\x03\x04" + data[4:], b""):
        file.write_bytes(broken)
        assert load_bm25(file, "k") is None


PROBE = """
import atexit, json, os, sys
atexit.register(lambda: json.dump(sorted(sys.modules), open(os.environ["PROBE_OUT"], "w")))
from ctxhealth.cli.main import main
sys.argv = ["ctxhealth", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("dedupe", [False, True])
def test_a_warm_pack_imports_no_numpy_tokenizer_or_transcript_model(tmp_path: Path, dedupe: bool) -> None:
    repo = write_repo(tmp_path / "repo")
    if dedupe:  # the same long paragraph in two files: dedup has work to do
        para = " ".join(f"word{i}" for i in range(60))
        for name in ("one.md", "two.md"):
            (repo / name).write_text(f"# {name}\n\n{para}\n")
    env = {**os.environ, "CTXHEALTH_HOME": str(tmp_path / "home"), "PROBE_OUT": str(tmp_path / "mods.json")}
    cmd = [sys.executable, "-c", PROBE, "pack", str(repo), "--task", "invoice totals word1"]
    cmd += ["--budget", "6000"]
    runs = []
    for _ in range(2):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        runs.append((done.stdout, json.loads((tmp_path / "mods.json").read_text())))
    (cold_out, cold_modules), (warm_out, warm_modules) = runs
    assert "numpy" in cold_modules  # building the index uses it
    assert "numpy" not in warm_modules
    # every count remembered and no history given: neither the tokenizer nor the transcript model
    assert "toktok" in cold_modules and "toktok" not in warm_modules
    assert not {"ctxhealth.accounting.tokens", "ctxhealth.model", "ctxhealth.pack.history"} & set(
        warm_modules
    )
    assert warm_out == cold_out
    if dedupe:
        assert "near-duplicate paragraph" in warm_out


def test_building_an_index_without_numpy_names_the_pack_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxhealth.errors import EnvironmentProblem

    monkeypatch.setitem(sys.modules, "numpy", None)  # importing it now fails, as when not installed
    with pytest.raises(EnvironmentProblem, match="numpy") as caught:
        build_bm25([{"alpha": 1}])
    assert "ctxhealth[pack]" in str(caught.value.hint)
