"""The pack manifest: one JSON-ready document saying what the payload holds, why, and what stayed out.

Keys: ``schema_version`` (1), ``kind`` (``ctxhealth/pack-manifest``), ``budget``, ``tokens`` (the
whole payload, exact o200k), ``levels`` (tokens per level present), ``files`` (exactly what is in
the payload, in payload order: path, level, priority, form, tokens, score, components, reason),
``excluded`` (path, score, reason), ``threshold``, ``weights`` (and whether they were re-normalised),
``level_digests`` (SHA-256 of each present level's bytes), ``input_digest`` (SHA-256 of the task,
type, budget, options and the content hashes of the candidate files), ``errors_given``, ``window``,
plus the allocation, candidate and cache figures, dedup count, history and notes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ctxhealth.pack.budget import LEVELS, Allocation, TaskType
from ctxhealth.pack.index import RepoIndex
from ctxhealth.pack.levels import FittedLevel, LevelFile
from ctxhealth.pack.priority import Tier
from ctxhealth.pack.relevance import THRESHOLD, Scored, Weights
from ctxhealth.pack.render import OutputFormat
from ctxhealth.pack.select import Taken

if TYPE_CHECKING:  # the history code (and the transcript model) loads only for a history
    from ctxhealth.pack.history import History

SCHEMA_VERSION = 1
KIND = "ctxhealth/pack-manifest"


@dataclass(frozen=True, slots=True)
class Inputs:
    """Everything the caller asked for (what the input digest covers, with the candidates' hashes)."""

    task: str
    task_type: TaskType
    payload: int
    window: int | None
    model: str | None
    fmt: OutputFormat
    active: tuple[str, ...]
    rules: tuple[LevelFile, ...]
    specs: tuple[LevelFile, ...]
    errors: str | None
    history: History | None


def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def input_digest(inputs: Inputs, index: RepoIndex) -> str:
    """SHA-256 of the canonical JSON of the request and the content hashes of the candidate files."""
    doc = {
        "task": inputs.task,
        "type": inputs.task_type.value,
        "budget": inputs.payload,
        "options": {
            "window": inputs.window,
            "model": inputs.model,
            "format": inputs.fmt.value,
            "active": list(inputs.active),
            "rules": [[f.label, _sha(f.text)] for f in inputs.rules],
            "specs": [[f.label, _sha(f.text)] for f in inputs.specs],
            "errors": _sha(inputs.errors) if inputs.errors is not None else None,
            "history": _sha(inputs.history.text) if inputs.history is not None else None,
        },
        "files": [[p, index.facts[p].digest] for p in sorted(index.facts)],
    }
    return _sha(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS))


def _reason(tier: Tier, form_reason: str, score: Scored) -> str:
    why = {
        Tier.A: "active or changed file",
        Tier.B: "direct dependency of an active file",
        Tier.C: "same package as an active file",
        Tier.OTHER: f"relevance {score.score:.2f}",
    }[tier]
    decay = f", decay x{score.decay:g}" if score.decay != 1.0 else ""
    return f"{why}{decay}; {form_reason}"


def build_manifest(
    *,
    inputs: Inputs,
    alloc: Allocation,
    index: RepoIndex,
    text: str,
    sections: Mapping[str, str],
    fitted: Mapping[str, FittedLevel],
    taken: list[Taken],
    scored: Mapping[str, Scored],
    tiers: Mapping[str, Tier],
    excluded: Mapping[str, str],
    weights: Weights,
    merged: int,
    notes: list[str],
    count: Callable[[str], int],
) -> dict[str, Any]:
    """The manifest document (see the module docstring)."""
    files: list[dict[str, Any]] = []
    for level in ("L1", "L2"):
        if level in fitted:
            for piece in fitted[level].pieces:
                files.append(
                    {
                        "path": piece.path,
                        "level": level,
                        "priority": None,
                        "form": piece.form,
                        "tokens": count(piece.text),
                        "score": None,
                        "components": None,
                        "reason": "rules file" if level == "L1" else "specs file",
                    }
                )
    for t in taken:
        s = scored[t.ranked.path]
        files.append(
            {
                "path": t.ranked.path,
                "level": "L3",
                "priority": t.ranked.tier.value,
                "form": t.piece.form,
                "tokens": t.tokens,
                "score": s.score,
                "components": dict(s.components),
                "reason": _reason(t.ranked.tier, t.reason, s)
                + (f"; {t.deduped} duplicate paragraph(s) merged" if t.deduped else ""),
            }
        )
    out_rows: list[dict[str, Any]] = []
    for path, reason in excluded.items():
        found = scored.get(path)
        out_rows.append({"path": path, "score": found.score if found else None, "reason": reason})
    for path, reason in index.excluded:
        out_rows.append({"path": path, "score": None, "reason": reason})
    for level in ("L1", "L2"):
        if level in fitted:
            for path in fitted[level].left_out:
                out_rows.append({"path": path, "score": None, "reason": f"{level} budget spent"})
    out_rows.sort(key=lambda r: (r["score"] is None, -(r["score"] or 0.0), r["path"]))
    present = [lv for lv in LEVELS if sections.get(lv)]
    history = inputs.history
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "task_type": inputs.task_type.value,
        "format": inputs.fmt.value,
        "budget": inputs.payload,
        "window": inputs.window,
        "model": inputs.model,
        "tokens": count(text),
        "token_source": "exact",
        "encoding": "o200k_base",
        "levels": {lv: count(sections[lv]) for lv in present},
        "level_caps": {lv: cap for lv, cap in alloc.caps.items() if lv != "L3"},
        "allocation": {"tree": alloc.tree, "levels": list(alloc.levels), "shares": alloc.shares},
        "level_digests": {lv: _sha(sections[lv]) for lv in present},
        "input_digest": input_digest(inputs, index),
        "errors_given": bool(inputs.errors and inputs.errors.strip()),
        "threshold": THRESHOLD,
        "weights": weights.values,
        "weights_renormalised": weights.renormalised,
        "missing_terms": list(weights.missing),
        "candidates": {
            "source": index.source,
            "files": len(index.facts),
            "cache_hits": index.cache_hits,
            "cache_misses": index.cache_misses,
        },
        "dedup": {"paragraphs_merged": merged},
        "history": None
        if history is None
        else {"path": history.path, "turns": history.turns, "compression": history.level},
        "files": files,
        "excluded": out_rows,
        "notes": notes,
    }
