"""``pack()``: assemble the context a task needs from a repository under a hard token budget.

The steps, in order: resolve the payload budget (``budget`` tokens, or 80% of a model's usable
window); allocate it over the levels the task type uses (:mod:`.budget`); render L1 rules, L2 specs,
L4 error output and L5 history within their caps; index the repository (cached); score every
candidate source file (:mod:`.relevance`); pack L3 from the top of the ranking into what the other
levels left (:mod:`.select`); order the files by tier, then path; count the whole payload exactly
(o200k) and drop the lowest-ranked file until it fits — the budget is a hard cap. The manifest
(:mod:`.manifest`) says what went in, why, and what stayed out.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxhealth.errors import UsageError
from ctxhealth.pack.budget import MIN_BUDGET, TaskType, allocate, payload_for_model
from ctxhealth.pack.cache import cache_path
from ctxhealth.pack.counts import CountMemo, memo_path
from ctxhealth.pack.imports import import_distances, import_graph
from ctxhealth.pack.index import RepoIndex, build_index
from ctxhealth.pack.levels import (
    discover_rules,
    fit_text_levels,
    label_for,
    read_level_files,
)
from ctxhealth.pack.manifest import Inputs, build_manifest
from ctxhealth.pack.priority import Tier, assign_tiers, rank_candidates, tests_of
from ctxhealth.pack.recency import EditHistory, read_edit_history
from ctxhealth.pack.relevance import (
    Scored,
    Weights,
    import_term,
    score_file,
    size_term,
    weights_for,
)
from ctxhealth.pack.render import OutputFormat, join_document, level_open, render_level
from ctxhealth.pack.select import Ranked, Taken, pack_sources
from ctxhealth.pack.textcache import TextMemo, texts_path

if TYPE_CHECKING:  # the history code (and the transcript model) loads only for a history
    from ctxhealth.pack.history import History

from ctxhealth.pack.similarity import (
    Bm25Index,
    build_bm25,
    corpus_key,
    load_bm25,
    save_bm25,
    similarity_scores,
)

ENCODING = "o200k_base"


@dataclass(frozen=True, slots=True)
class Pack:
    """A packed context: the payload ``text`` and its ``manifest`` (a JSON-ready dict)."""

    text: str
    manifest: dict[str, Any]

    @property
    def tokens(self) -> int:
        return int(self.manifest["tokens"])


def resolve_payload(budget: int | None, model: str | None, registry: Any = None) -> tuple[int, int | None]:
    """The payload budget and the model window (None without a model)."""
    if budget is None and model is None:
        raise UsageError("no budget", hint="give --budget N (tokens) or --model M")
    window: int | None = None
    payload = budget
    if model is not None:
        from ctxhealth.accounting.registry import ModelRegistry

        info = (registry or ModelRegistry.default()).lookup(model)
        window = info.window
        by_model = payload_for_model(info.usable_window)
        payload = by_model if payload is None else min(payload, by_model)
    assert payload is not None
    if payload < MIN_BUDGET:
        raise UsageError(
            f"a budget of {payload} tokens is too small", hint=f"give at least {MIN_BUDGET} tokens"
        )
    return payload, window


def _active_paths(repo: Path, index: RepoIndex, active: Sequence[Path | str]) -> tuple[list[str], list[str]]:
    """Active files as repository paths, and notes about those that are not candidates."""
    found: list[str] = []
    notes: list[str] = []
    for raw in active:
        path = Path(raw)
        label = label_for(repo, path if path.is_absolute() or path.exists() else repo / path)
        if label in index.facts:
            found.append(label)
        else:
            notes.append(f"active file {label} is not a candidate (missing, ignored or blacklisted)")
    return sorted(set(found)), notes


class RepoPacker:
    """One repository prepared for packing: its index, BM25 index, import graph and edit history,
    built on first use and reused by every :meth:`pack` call (a benchmark packs many tasks)."""

    def __init__(self, repo: Path | str, *, cache_home: Path | None = None) -> None:
        self.root = Path(repo)
        self.cache_home = cache_home
        self._index: RepoIndex | None = None
        self._bm25: Bm25Index | None = None
        self._graph: dict[str, list[str]] | None = None
        self._git: EditHistory | bool | None = False
        self._texts: TextMemo | None = None

    @property
    def index(self) -> RepoIndex:
        if self._index is None:
            self._index = build_index(self.root, cache_home=self.cache_home)
        return self._index

    @property
    def bm25(self) -> Bm25Index:
        if self._bm25 is None:
            index = self.index
            key = corpus_key([(p, f.digest) for p, f in index.facts.items()])
            file = index.cache_file.with_suffix(".bm25") if index.cache_file is not None else None
            found = load_bm25(file, key) if file is not None else None
            if found is None:
                found = build_bm25(index.bags())
                if file is not None:
                    save_bm25(file, key, found)
                    with contextlib.suppress(OSError):  # the numpy file of earlier versions
                        file.with_suffix(".bm25.npz").unlink(missing_ok=True)
            self._bm25 = found
        return self._bm25

    @property
    def graph(self) -> dict[str, list[str]]:
        if self._graph is None:
            self._graph = import_graph(self.index.facts, self.index.data)
        return self._graph

    @property
    def git(self) -> EditHistory | None:
        if self._git is False:
            self._git = read_edit_history(self.root)
        assert not isinstance(self._git, bool)
        return self._git

    def score(
        self, task: str, task_type: TaskType, active: list[str], exclude: set[str], history: History | None
    ) -> tuple[list[Scored], dict[str, Tier], dict[str, str], Weights, list[str], dict[str, list[str]]]:
        """Relevance of every candidate but ``exclude``, tiers, skipped tests, weights and notes."""
        index = self.index
        all_paths = list(index.facts)
        all_facts = list(index.facts.values())
        similarity = similarity_scores(task, self.bm25, all_paths, [f.defines for f in all_facts])
        git = self.git
        a_files = sorted(set(active) | ({p for p in git.changed if p in index.facts} if git else set()))
        a_files = [p for p in a_files if p not in exclude]
        weights = weights_for(has_recency=git is not None or bool(active), has_imports=bool(a_files))
        graph = self.graph if a_files else {}
        distances = import_distances(graph, a_files) if a_files else {}
        paths = [p for p in all_paths if p not in exclude]
        decay: dict[str, float] = {}
        if history is not None:
            from ctxhealth.pack.history import decay_factors

            decay = decay_factors(history, paths)
        active_set = set(active)
        scored: list[Scored] = []
        for i, path in enumerate(all_paths):
            if path in exclude:
                continue
            f = all_facts[i]
            # From the size in bytes, never from a cached count: a score must not depend on what
            # earlier runs happened to count.
            tokens = math.ceil(f.size / 4)
            recency: float | None = None
            if "recency" in weights.values:
                recency = 1.0 if path in active_set else (git.scores.get(path, 0.0) if git else 0.0)
            components: dict[str, float | None] = {
                "recency": None if recency is None else round(recency, 6),
                "imports": round(import_term(distances.get(path)), 6)
                if "imports" in weights.values
                else None,
                "similarity": round(float(similarity[i]), 6),
                "size": round(size_term(tokens), 6),
            }
            scored.append(score_file(path, components, weights, decay.get(path, 1.0)))
        tiers = assign_tiers(paths, a_files, graph)
        skip: dict[str, str] = {}
        if task_type is not TaskType.DEBUG:
            for path in tests_of(paths, a_files):
                skip[path] = "test of an active file: tests are packed only for debugging"
        notes = []
        if weights.renormalised:
            notes.append(
                f"weights re-normalised over the terms present (missing: {', '.join(weights.missing)})"
            )
        return scored, tiers, skip, weights, notes, graph

    def pack(
        self,
        task: str,
        *,
        budget: int | None = None,
        model: str | None = None,
        task_type: TaskType | str = TaskType.CODE,
        active: Sequence[Path | str] = (),
        errors: str | None = None,
        history: Path | str | None = None,
        rules: Sequence[Path | str] = (),
        specs: Sequence[Path | str] = (),
        output_format: OutputFormat | str = OutputFormat.MARKDOWN,
        registry: Any = None,
    ) -> Pack:
        """Pack what ``task`` needs (see :func:`pack`)."""
        root = self.root
        if not task.strip():
            raise UsageError("the task is empty", hint="describe the task with --task TEXT or --task-file F")
        kind = TaskType(task_type)
        fmt = OutputFormat(output_format)
        payload, window = resolve_payload(budget, model, registry)
        cache = cache_path(self.cache_home, root) if self.cache_home is not None else None
        count = CountMemo(ENCODING, memo_path(cache) if cache is not None else None)
        rule_files = read_level_files(root, rules, "rules")
        rule_files += discover_rules(root, rule_files)
        spec_files = read_level_files(root, specs, "specs")
        past: History | None = None
        if history is not None:
            from ctxhealth.pack.history import read_history

            past = read_history(history)
        alloc = allocate(
            payload,
            kind,
            window=window,
            has_specs=bool(spec_files),
            has_errors=bool(errors and errors.strip()),
            turns=past.turns if past else 0,
        )
        index = self.index
        active_paths, notes = _active_paths(root, index, active)
        level_labels = {f.label for f in (*rule_files, *spec_files)}
        scored, tiers, skip, weights, score_notes, _ = self.score(
            task, kind, active_paths, level_labels, past
        )
        fitted, level_notes = fit_text_levels(kind, alloc, fmt, count, rule_files, spec_files, errors, past)
        notes += level_notes + score_notes
        has_a = any(t is Tier.A for t in tiers.values())
        eligible, excluded = rank_candidates(scored, tiers, skip, has_a, len(scored))
        fixed = [fitted[lv].section if lv in fitted else "" for lv in ("L1", "L2")]
        tail = [fitted[lv].section if lv in fitted else "" for lv in ("L4", "L5")]
        used = count(join_document([*fixed, *tail], fmt)) + count(level_open("L3", fmt)) + 4
        ranked = [
            Ranked(
                s.path,
                tiers[s.path],
                s.score,
                index.facts[s.path].language,
                functools.partial(index.text, s.path),
                index.facts[s.path].signature_lines,
                index.facts[s.path].tokens,
                index.facts[s.path].declarations,
                index.facts[s.path].digest,
            )
            for s in eligible
        ]
        found_lines: dict[str, tuple[int, ...]] = {}
        found_tokens: dict[str, int] = {}
        if self._texts is None:
            self._texts = TextMemo(texts_path(cache) if cache is not None else None)
        texts = self._texts
        taken, left, merged = pack_sources(
            ranked,
            max(0, payload - used),
            fmt=fmt,
            strip_comments=kind is not TaskType.DOCS,
            count=count,
            found_lines=found_lines,
            found_tokens=found_tokens,
            texts=texts,
        )
        texts.save()
        excluded.update(left)
        text, taken, l3 = _fit(taken, fixed, tail, fmt, count, payload, excluded)
        for path, lines in sorted(found_lines.items()):
            index.remember(path, signature_lines=list(lines))
        for path, whole in sorted(found_tokens.items()):
            index.remember(path, tokens=whole)
        index.flush()
        sections = {"L1": fixed[0], "L2": fixed[1], "L3": l3, "L4": tail[0], "L5": tail[1]}
        inputs = Inputs(
            task=task,
            task_type=kind,
            payload=payload,
            window=window,
            model=model,
            fmt=fmt,
            active=tuple(active_paths),
            rules=tuple(rule_files),
            specs=tuple(spec_files),
            errors=errors,
            history=past,
        )
        manifest = build_manifest(
            inputs=inputs,
            alloc=alloc,
            index=index,
            text=text,
            sections=sections,
            fitted=fitted,
            taken=taken,
            scored={s.path: s for s in scored},
            tiers=tiers,
            excluded=excluded,
            weights=weights,
            merged=merged,
            notes=notes,
            count=count,
        )
        count.save()
        return Pack(text, manifest)


def pack(
    repo: Path | str,
    task: str,
    *,
    budget: int | None = None,
    model: str | None = None,
    task_type: TaskType | str = TaskType.CODE,
    active: Sequence[Path | str] = (),
    errors: str | None = None,
    history: Path | str | None = None,
    rules: Sequence[Path | str] = (),
    specs: Sequence[Path | str] = (),
    output_format: OutputFormat | str = OutputFormat.MARKDOWN,
    cache_home: Path | None = None,
    registry: Any = None,
) -> Pack:
    """Pack what ``task`` needs from ``repo`` within ``budget`` tokens (or 80% of a model's usable window).

    ``active`` files count as just edited; ``errors`` is error output text (L4); ``history`` a
    transcript (L5 and decay); ``rules`` / ``specs`` files for L1 / L2. With ``cache_home`` the index
    is cached under ``cache_home/pack-index/``.
    """
    return RepoPacker(repo, cache_home=cache_home).pack(
        task,
        budget=budget,
        model=model,
        task_type=task_type,
        active=active,
        errors=errors,
        history=history,
        rules=rules,
        specs=specs,
        output_format=output_format,
        registry=registry,
    )


def _fit(
    taken: list[Taken],
    fixed: list[str],
    tail: list[str],
    fmt: OutputFormat,
    count: Any,
    payload: int,
    excluded: dict[str, str],
) -> tuple[str, list[Taken], str]:
    """Order L3 by tier then path, and drop the lowest-ranked file until the whole payload fits."""
    kept = list(taken)
    while True:
        ordered = sorted(kept, key=lambda t: (t.ranked.tier.rank, t.ranked.path))
        l3 = render_level("L3", [t.rendered for t in ordered], fmt)
        text = join_document([*fixed, l3, *tail], fmt)
        if count(text) <= payload:
            return text, ordered, l3
        if not kept:
            raise UsageError(
                f"the rules, specs, error output and history alone exceed the budget of {payload:,} tokens",
                hint="raise --budget",
            )
        worst = max(kept, key=lambda t: t.rank)
        kept.remove(worst)
        excluded[worst.ranked.path] = "dropped to keep the payload within the budget"


__all__ = ["ENCODING", "Pack", "RepoPacker", "pack", "resolve_payload"]
