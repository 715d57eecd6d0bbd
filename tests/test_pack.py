"""ctxhealth.pack on a small repository written by the tests: candidates, index cache, import graph,
relevance, tiers, levels, compression, dedup, rendering and the manifest."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxhealth.accounting.tokens import count_batch
from ctxhealth.errors import InputError, UsageError
from ctxhealth.pack import Pack, pack
from ctxhealth.pack.budget import TaskType, allocate
from ctxhealth.pack.candidates import _Resolver, list_candidates, outside_reason
from ctxhealth.pack.compress import compress_text
from ctxhealth.pack.dedup import ParagraphDeduper
from ctxhealth.pack.errors_output import fit_error_output, select_error_lines
from ctxhealth.pack.ignore import IgnoreRules
from ctxhealth.pack.imports import import_graph
from ctxhealth.pack.index import build_index
from ctxhealth.pack.relevance import weights_for
from ctxhealth.pack.signatures import render_signatures
from ctxhealth.pack.similarity import build_bm25, load_bm25, save_bm25
from ctxhealth.pack.words import named_identifiers, split_identifier
from pack_repo import write_repo


def tokens(text: str) -> int:
    return int(count_batch([text], "o200k_base")[0][0])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo")


def packed_paths(result: Pack) -> list[str]:
    return re.findall(r"^### (\S+) \(", result.text, re.M)


# --- candidates -----------------------------------------------------------------------------


def test_walk_honours_gitignore_and_the_blacklist(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\nsecret/\n!keep.log\n")
    (repo / "debug.log").write_text("x")
    (repo / "keep.log").write_text("x")
    (repo / "secret").mkdir()
    (repo / "secret" / "key.py").write_text("KEY = 1\n")
    (repo / "node_modules" / "lib").mkdir(parents=True)
    (repo / "node_modules" / "lib" / "index.js").write_text("x")
    found = list_candidates(repo)
    assert found.source == "walk"
    assert "keep.log" in found.paths and "debug.log" not in found.paths
    assert not any(p.startswith(("secret/", "node_modules/", "build/")) for p in found.paths)
    reasons = dict(found.excluded)
    assert reasons["package-lock.json"] == "lockfile"
    assert reasons["static/app.min.js"] == "minified bundle"
    assert "billing/invoice.py" in found.paths


def test_the_listing_resolves_every_path_as_outside_reason_does(tmp_path: Path) -> None:
    # The listing resolves folders once and files with one lstat; each answer must be the full
    # realpath check's (links in folders, chains, loops, links out, to folders, FIFOs, broken links).
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "x.py").write_text("X = 1\n")
    repo = tmp_path / "repo"
    (repo / "pkg" / "sub").mkdir(parents=True)
    (repo / "pkg" / "sub" / "a.py").write_text("A = 1\n")
    (repo / "pkg" / "in_link.py").symlink_to(repo / "pkg" / "sub" / "a.py")
    (repo / "pkg" / "chain.py").symlink_to("in_link.py")
    (repo / "pkg" / "out.py").symlink_to(outside / "deep" / "x.py")
    (repo / "pkg" / "broken.py").symlink_to(repo / "nowhere.py")
    (repo / "pkg" / "loop.py").symlink_to("loop.py")
    (repo / "alias").symlink_to(repo / "pkg")  # a folder link inside
    (repo / "away").symlink_to(outside / "deep")  # a folder link out
    os.mkfifo(repo / "pkg" / "pipe.py")
    names = [
        "pkg/sub/a.py", "pkg/in_link.py", "pkg/chain.py", "pkg/out.py", "pkg/broken.py", "pkg/loop.py",
        "pkg/pipe.py", "alias/sub/a.py", "alias/out.py", "away/x.py", "alias", "away", "pkg/missing.py",
    ]  # fmt: skip
    top = str(repo)
    resolver = _Resolver(top)
    for name in names:
        full = os.path.join(top, name)
        expected = outside_reason(top, os.path.realpath(top), name) if os.path.lexists(full) else False
        assert resolver.reason(name) == expected, name
    assert resolver.reason("away/x.py") == "link leaving the repository (not read)"


def test_ignore_rules_anchor_negate_and_match_directories_only() -> None:
    rules = IgnoreRules().with_file("", "/top.txt\ndist/\n*.tmp\n!important.tmp\nsrc/**/gen_*.py\n")
    assert rules.ignored("top.txt", is_dir=False)
    assert not rules.ignored("sub/top.txt", is_dir=False)
    assert rules.ignored("a/dist", is_dir=True) and not rules.ignored("a/dist", is_dir=False)
    assert rules.ignored("x/y.tmp", is_dir=False) and not rules.ignored("x/important.tmp", is_dir=False)
    assert rules.ignored("src/a/b/gen_x.py", is_dir=False) and not rules.ignored("src/a/x.py", is_dir=False)
    nested = rules.with_file("pkg", "local.py\n")
    assert nested.ignored("pkg/deep/local.py", is_dir=False) and not nested.ignored("local.py", is_dir=False)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_git_checkout_uses_what_git_tracks(repo: Path) -> None:
    (repo / ".gitignore").write_text("ignored.py\n")
    (repo / "ignored.py").write_text("X = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@e", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    (repo / "billing" / "refunds.py").write_text("def refund(invoice):\n    return 0\n")
    found = list_candidates(repo)
    assert found.source == "git"
    assert "ignored.py" not in found.paths and "billing/tax.py" in found.paths
    result = pack(repo, "refund an invoice", budget=4_000)
    refunds = next(f for f in result.manifest["files"] if f["path"] == "billing/refunds.py")
    assert refunds["priority"] == "A"  # uncommitted change: in the git diff
    assert refunds["components"]["recency"] == 1.0


def test_binary_and_minified_content_is_excluded(repo: Path) -> None:
    (repo / "blob.dat2").write_bytes(b"\x00\x01binary")
    (repo / "gen.js").write_text("x" * 9_000)
    index = build_index(repo)
    reasons = dict(index.excluded)
    assert reasons["blob.dat2"] == "binary file"
    assert reasons["gen.js"].startswith("minified")


# --- index cache ----------------------------------------------------------------------------


def test_the_cache_is_reused_and_invalidated_per_file(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = build_index(repo, cache_home=home)
    assert first.cache_misses == len(first.facts) and first.cache_hits == 0
    second = build_index(repo, cache_home=home)
    assert second.cache_hits == len(first.facts) and second.cache_misses == 0
    (repo / "billing" / "tax.py").write_text("RATE = 0.3\n")
    third = build_index(repo, cache_home=home)
    assert third.cache_misses == 1
    assert third.facts["billing/tax.py"].digest != first.facts["billing/tax.py"].digest
    cache_file = next((home / "pack-index").glob("*.json"))
    cache_file.write_text("{not json")
    fourth = build_index(repo, cache_home=home)
    assert fourth.cache_misses == len(fourth.facts)  # unreadable cache: rebuilt, not trusted


# --- facts, imports, signatures -------------------------------------------------------------


def test_identifier_splitting_and_named_identifiers() -> None:
    assert split_identifier("RenameContentType") == ("rename", "content", "type", "renamecontenttype")
    assert split_identifier("update_fields") == ("update", "fields", "update_fields")
    named = named_identifiers("RenameContentType._rename() does not save; see `update_fields` in django.db")
    assert {"RenameContentType", "_rename", "update_fields", "django", "db"} <= set(named)


def test_imports_resolve_in_every_language(repo: Path) -> None:
    index = build_index(repo)
    graph = import_graph(index.facts, index.data)
    assert set(graph["billing/invoice.py"]) == {"billing/tax.py", "billing/currency.py"}
    assert graph["web/app.ts"] == ["web/lib/total.ts"]
    assert graph["server/main.go"] == ["server/store/store.go"]
    assert graph["engine/src/lib.rs"] == ["engine/src/parser.rs"]
    assert graph["jvm/src/com/shop/App.java"] == ["jvm/src/com/shop/util/Money.java"]


def test_python_signatures_keep_declarations_and_drop_bodies() -> None:
    text = (
        '"""Module doc."""\nimport os\n\n\n@decorator\ndef f(a,\n      b):\n    """Doc of f."""\n'
        "    x = 1\n    return x\n\n\nclass C(Base):\n    def m(self):\n        return os.sep\n"
    )
    out = render_signatures("python", text)
    assert "@decorator\ndef f(a,\n      b):" in out and '"""Doc of f."""' in out
    assert "class C(Base):" in out and "def m(self):" in out
    assert "return x" not in out and "x = 1" not in out and "..." in out


def test_typescript_signatures_come_from_tree_sitter() -> None:
    text = "import { a } from './a';\n\nexport function total(n: number): number {\n  return n * 2;\n}\n"
    out = render_signatures("typescript", text)
    assert "export function total(n: number): number {" in out and "return n * 2" not in out


# --- compression and dedup ------------------------------------------------------------------


def test_compression_strips_comments_but_not_hashes_in_strings() -> None:
    text = '# header\nURL = "http://x/#frag"  # trailing\n\n\n\nLONG = "' + "y" * 900 + '"\n'
    out = compress_text("m.py", text, strip_comments=True)
    assert "# header" not in out and "# trailing" not in out and '"http://x/#frag"' in out
    assert "...[truncated 800 chars]" in out and "y" * 101 not in out
    assert "\n\n\n" not in out
    kept = compress_text("m.py", text, strip_comments=False)
    assert "# header" in kept and "# trailing" in kept
    js = compress_text(
        "a.js", "// note\nconst a = 1; // keep inline\n/* block */\nf();\n", strip_comments=True
    )
    assert js == "const a = 1; // keep inline\nf();\n"


def test_the_python_scan_finds_what_the_pattern_without_its_lookahead_finds() -> None:
    import random

    from ctxhealth.pack import compress

    lookahead = r"(?=[rRbBuUfF\"'#])"
    assert compress._PY_TOKEN.pattern.startswith(lookahead)
    plain = re.compile(compress._PY_TOKEN.pattern.removeprefix(lookahead))
    rng = random.Random(5)
    alphabet = ["a", "r", "b", "f", "U", "rb", " ", "\n", "#", "'", '"', "'" * 3, '"' * 3, "\\", "x1", "("]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(3000)]
    texts += [p.read_text() for p in sorted(Path(compress.__file__).parents[1].rglob("*.py"))]
    for text in texts:
        ours = [(m.span(), m.group("string"), m.group("comment")) for m in compress._PY_TOKEN.finditer(text)]
        assert ours == [(m.span(), m.group("string"), m.group("comment")) for m in plain.finditer(text)]


def test_near_duplicate_paragraphs_are_merged_only_above_the_jaccard_threshold() -> None:
    para = " ".join(f"word{i}" for i in range(60))
    deduper = ParagraphDeduper()
    first = deduper.dedupe("a.py", f"intro\n\n{para}\n")
    deduper.commit(first)
    near = deduper.dedupe("b.py", f"{para} extra\n\nother text here")
    assert near.replaced == 1 and "see a.py" in near.text and "other text here" in near.text
    different = " ".join(f"term{i}" for i in range(60))
    assert deduper.dedupe("c.py", different).replaced == 0
    uncommitted = ParagraphDeduper()
    uncommitted.dedupe("a.py", para)  # not committed: nothing remembered
    assert uncommitted.dedupe("b.py", para).replaced == 0


# --- error output and allocation ------------------------------------------------------------


def test_error_output_keeps_the_tail_and_the_whole_stack_trace() -> None:
    trace = [
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in <module>',
        "    f()",
        "ValueError: bad",
    ]
    text = "\n".join([*(f"noise {i}" for i in range(30)), *trace, *(f"log {i}" for i in range(60))])
    lines = select_error_lines(text)
    assert lines[: len(trace)] == trace and lines[-1] == "log 59" and "noise 3" not in lines
    assert len(lines) == len(trace) + 1 + 50
    small = fit_error_output(text, 20, tokens)
    assert tokens(small) <= 20 and small.endswith("log 59")
    assert fit_error_output("x" * 5_000, 3, tokens)  # never dropped, even when cut to the bone


def test_allocation_follows_the_tree() -> None:
    small = allocate(8_000, TaskType.CODE, window=None, has_specs=False, has_errors=False)
    assert small.tree == "small" and small.levels == ("L1", "L2", "L3")
    assert small.caps["L1"] == int(8_000 * 0.04 / 0.37)
    large = allocate(8_000, TaskType.DEBUG, window=200_000, has_specs=False, has_errors=True)
    assert large.tree == "large" and large.levels == ("L1", "L3", "L4")
    assert large.shares["L4"] == pytest.approx(0.15) and large.shares["L3"] == pytest.approx(0.25)
    assert large.caps["L4"] == int(8_000 * 0.15)
    long_talk = allocate(8_000, TaskType.EXPLORE, window=None, has_specs=True, has_errors=False, turns=25)
    assert long_talk.levels == ("L1", "L2", "L3", "L4", "L5") and long_talk.shares["L5"] == pytest.approx(
        0.15
    )


def test_weights_are_renormalised_over_the_terms_present() -> None:
    none_active = weights_for(has_recency=False, has_imports=False)
    assert none_active.missing == ("recency", "imports")
    assert none_active.values["similarity"] == pytest.approx(0.25 / 0.35)
    assert sum(none_active.values.values()) == pytest.approx(1.0)
    assert not weights_for(has_recency=True, has_imports=True).renormalised


def test_bm25_prefers_the_document_with_the_rare_term() -> None:
    index = build_bm25([{"invoice": 3, "total": 1}, {"route": 2, "total": 1}, {"total": 5}])
    scores = index.scores({"invoice": 1.0, "total": 1.0})
    assert scores[0] > scores[2] > scores[1] >= 0


# --- pack -----------------------------------------------------------------------------------


def test_pack_finds_the_file_the_task_names_and_stays_within_budget(repo: Path) -> None:
    result = pack(repo, "InvoiceRenderer.render_total() shows the wrong amount", budget=2_000)
    assert tokens(result.text) <= 2_000 and result.manifest["tokens"] == tokens(result.text)
    top = max((f for f in result.manifest["files"] if f["level"] == "L3"), key=lambda f: f["score"])
    assert top["path"] == "billing/invoice.py"
    assert result.manifest["weights_renormalised"] is True
    assert [f["path"] for f in result.manifest["files"] if f["level"] == "L3"] == packed_paths(result)[1:]
    assert result.manifest["files"][0] == {
        "path": "AGENTS.md",
        "level": "L1",
        "priority": None,
        "form": "full",
        "tokens": tokens((repo / "AGENTS.md").read_text()),
        "score": None,
        "components": None,
        "reason": "rules file",
    }


def test_active_files_set_tiers_and_the_import_term(repo: Path) -> None:
    task = "change how totals and refunds are shown"
    result = pack(repo, task, budget=6_000, active=["billing/invoice.py"])
    files = {f["path"]: f for f in result.manifest["files"]}
    assert files["billing/invoice.py"]["priority"] == "A" and files["billing/invoice.py"]["form"] == "full"
    assert files["billing/tax.py"]["priority"] == "B"
    assert files["billing/tax.py"]["components"]["imports"] == 1.0
    assert (
        files["billing/refunds.py"]["priority"] == "C" and files["billing/refunds.py"]["form"] == "signatures"
    )
    excluded = {e["path"]: e["reason"] for e in result.manifest["excluded"]}
    assert "tests are packed only for debugging" in excluded["tests/test_invoice.py"]
    debug = pack(repo, task, budget=6_000, active=["billing/invoice.py"], task_type="debug")
    assert "tests/test_invoice.py" not in {
        e["path"] for e in debug.manifest["excluded"] if "debugging" in e["reason"]
    }


def test_manifest_carries_the_audit_fields(repo: Path) -> None:
    result = pack(
        repo, "render invoices", budget=3_000, errors="Traceback...\nValueError: x\n", specs=["docs/guide.md"]
    )
    m = result.manifest
    assert m["schema_version"] == 1 and m["kind"] == "ctxhealth/pack-manifest"
    assert m["threshold"] == 0.4 and m["errors_given"] is True and m["window"] is None
    assert set(m["level_digests"]) == set(m["levels"]) == {"L1", "L2", "L3", "L4"}
    assert re.fullmatch(r"[0-9a-f]{64}", m["input_digest"])
    again = pack(
        repo, "render invoices", budget=3_000, errors="Traceback...\nValueError: x\n", specs=["docs/guide.md"]
    )
    assert again.manifest["input_digest"] == m["input_digest"] and again.text == result.text
    other = pack(
        repo,
        "render invoices!",
        budget=3_000,
        errors="Traceback...\nValueError: x\n",
        specs=["docs/guide.md"],
    )
    assert other.manifest["input_digest"] != m["input_digest"]
    assert "docs/guide.md" not in [f["path"] for f in m["files"] if f["level"] == "L3"]


def test_model_derives_the_budget_from_the_registry(repo: Path) -> None:
    result = pack(repo, "render invoices", model="claude-sonnet-4-5")
    assert result.manifest["window"] == 200_000
    assert result.manifest["budget"] == int((200_000 - 20_000 - 13_000) * 0.8)  # Claude Code: 167K usable
    assert result.manifest["allocation"]["tree"] == "large"


def test_xml_output(repo: Path) -> None:
    result = pack(repo, "render invoices", budget=3_000, output_format="xml")
    assert result.text.startswith('<context_pack>\n\n<level id="L1" name="rules">')
    assert '<file path="billing/invoice.py" form="full">' in result.text
    assert result.text.rstrip().endswith("</context_pack>")


def test_xml_attributes_are_quoted() -> None:
    from ctxhealth.pack.render import OutputFormat, PackedPiece, render_piece

    piece = PackedPiece(path='a&b/"q".py', form="full", text="x = 1")
    assert render_piece(piece, OutputFormat.XML).startswith('<file path=\'a&amp;b/"q".py\' form="full">')


def test_markdown_pack_does_not_import_the_xml_quoting_module(repo: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from ctxhealth.pack import pack; "
        f"pack(Path({str(repo)!r}), 'render invoices', budget=3_000); "
        "print('xml.sax.saxutils' in sys.modules, 'urllib.request' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_bad_input_gets_clear_errors(repo: Path) -> None:
    with pytest.raises(UsageError, match="no budget"):
        pack(repo, "task")
    with pytest.raises(UsageError, match="empty"):
        pack(repo, "  ", budget=1_000)
    with pytest.raises(UsageError, match="too small"):
        pack(repo, "task", budget=10)
    with pytest.raises(InputError) as info:
        pack(repo, "task", budget=1_000, rules=["missing-rules.md"])
    assert info.value.path == "missing-rules.md" and "--rules" in info.value.hint


def test_history_gives_l5_and_decay(repo: Path, tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "### billing/refunds.py (full)\n```python\n...\n```\nfix totals"}]
    for turn in range(4):
        messages.append(
            {"role": "assistant", "content": f"step {turn}: reading billing/tax.py" if turn == 3 else "ok"}
        )
        messages.append({"role": "user", "content": "continue"})
    transcript = tmp_path / "chat.json"
    transcript.write_text(json.dumps({"messages": messages}))
    result = pack(
        repo, "fix the invoice totals and taxes", budget=6_000, history=transcript, task_type="explore"
    )
    m = result.manifest
    assert "L5" in m["levels"] and m["history"]["turns"] == 4
    assert "step 3: reading billing/tax.py" in result.text
    scored = {f["path"]: f for f in m["files"]} | {e["path"]: e for e in m["excluded"]}
    base = pack(repo, "fix the invoice totals and taxes", budget=6_000, task_type="explore").manifest
    base_scores = {f["path"]: f["score"] for f in base["files"]} | {
        e["path"]: e["score"] for e in base["excluded"]
    }
    assert scored["billing/tax.py"]["score"] == pytest.approx(
        min(1.0, base_scores["billing/tax.py"] * 1.3), abs=1e-5
    )
    assert scored["billing/refunds.py"]["score"] == pytest.approx(
        base_scores["billing/refunds.py"] * 0.5, abs=1e-5
    )


def test_our_bm25_scores_equal_the_bm25s_package() -> None:
    bm25s = pytest.importorskip("bm25s")
    docs = [["invoice", "total", "total", "tax"], ["route", "graph"], ["total"] * 7 + ["cache"], ["tax"]]
    bags = [{w: d.count(w) for w in d} for d in docs]
    reference = bm25s.BM25(k1=1.5, b=0.3, method="lucene", idf_method="lucene")
    reference.index(docs, show_progress=False)
    query = ["total", "tax"]
    ours = build_bm25(bags, b=0.3).scores({w: 1.0 for w in query})
    assert list(ours) == pytest.approx(list(reference.get_scores(query)), rel=1e-5)


def test_a_warm_cache_gives_the_same_pack(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    cold = pack(repo, "InvoiceRenderer totals with tax", budget=2_500, cache_home=home)
    warm = pack(repo, "InvoiceRenderer totals with tax", budget=2_500, cache_home=home)
    assert warm.manifest["candidates"]["cache_hits"] == warm.manifest["candidates"]["files"]
    assert cold.text == warm.text
    strip = ("candidates",)
    assert {k: v for k, v in cold.manifest.items() if k not in strip} == {
        k: v for k, v in warm.manifest.items() if k not in strip
    }
    assert (home / "pack-index").is_dir() and list((home / "pack-index").glob("*.bm25"))


def test_history_from_a_real_claude_code_session(repo: Path, claude_code_data: Path) -> None:
    session = next(claude_code_data.glob("*/f67ab274*.jsonl"))
    result = pack(repo, "render the invoice totals", budget=6_000, history=session, task_type="explore")
    m = result.manifest
    assert m["history"]["turns"] > 20 and m["history"]["compression"] == "aggressive"
    assert m["allocation"]["shares"]["L5"] == pytest.approx(0.15)  # a long conversation reserves more
    assert "L5" in m["levels"] and m["levels"]["L5"] <= m["level_caps"]["L5"]
    assert tokens(result.text) <= 6_000


def test_ranking_caps_b_and_c_and_holds_others_to_0_7() -> None:
    from ctxhealth.pack.priority import Tier, rank_candidates
    from ctxhealth.pack.relevance import Scored

    scored = [Scored("a.py", {}, 1.0, 0.2)]
    scored += [Scored(f"dep{i:02}.py", {}, 1.0, 0.5 + i / 100) for i in range(20)]
    scored += [Scored("other_high.py", {}, 1.0, 0.75), Scored("other_mid.py", {}, 1.0, 0.6)]
    tiers = {s.path: Tier.B for s in scored} | {"a.py": Tier.A, "other_high.py": Tier.OTHER}
    tiers["other_mid.py"] = Tier.OTHER
    eligible, excluded = rank_candidates(scored, tiers, {}, True, 300)
    names = [s.path for s in eligible]
    assert names[0] == "a.py"  # A first, whatever its score
    assert sum(1 for n in names if n.startswith("dep")) == 15  # > 200 candidates: at most 15 B + C
    assert "dep19.py" in names and "dep00.py" not in names  # the best ones are kept
    assert "B + C cap of 15" in excluded["dep00.py"]
    assert "other_high.py" in names and "<= 0.7" in excluded["other_mid.py"]
    few, _ = rank_candidates(scored, tiers, {}, True, 150)
    assert sum(1 for s in few if s.path.startswith("dep")) == 20  # the cap is 25 for small repositories


def test_minhash_estimates_jaccard_like_datasketch() -> None:
    datasketch = pytest.importorskip("datasketch")
    from ctxhealth.pack.dedup import NUM_PERM, estimated_jaccard, minhash, shingle_hash

    base = [f"w{i}".encode() for i in range(200)]
    for overlap in (200, 180, 120, 40):
        first = frozenset(base)
        second = frozenset(base[:overlap] + [f"x{i}".encode() for i in range(200 - overlap)])
        true = len(first & second) / len(first | second)
        reference = []
        for items in (first, second):
            sketch = datasketch.MinHash(num_perm=256, hashfunc=shingle_hash)
            sketch.update_batch(sorted(items))
            reference.append(sketch)
        ours = estimated_jaccard(minhash(first), minhash(second))
        assert abs(ours - true) <= 3.5 * (true * (1 - true) / NUM_PERM) ** 0.5 + 1e-9
        assert abs(reference[0].jaccard(reference[1]) - true) <= 0.15


def test_a_stored_bm25_index_answers_as_the_built_one(tmp_path: Path) -> None:
    bags = [{"alpha": 2, "beta": 1}, {"beta": 3, "gamma": 1, "δέλτα": 2}, {}, {"alpha": 1, "zeta": 4}]
    built = build_bm25(bags)
    save_bm25(tmp_path / "i.bm25", "k", built)
    loaded = load_bm25(tmp_path / "i.bm25", "k")
    assert loaded is not None and load_bm25(tmp_path / "i.bm25", "other") is None
    for word, term in built.vocab.items():
        assert loaded.vocab.get(word) == term == loaded.vocab[word]
    for missing in ("", "alph", "alpha\nbeta", "eta", "omega"):
        assert loaded.vocab.get(missing) is None
    assert dict(loaded.vocab) == dict(built.vocab)
    query = {"alpha": 1.0, "δέλτα": 2.0, "zeta": 1.0, "none": 3.0}
    assert loaded.scores(query) == built.scores(query)
