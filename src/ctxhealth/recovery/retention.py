"""Retention audit: which of the facts an agent needs survive a compaction or a recovery.

Facts are extracted from the session before a point (see :mod:`ctxhealth.recovery.digest`):

========== ============================================================ ==================
kind       what                                                         matched by
========== ============================================================ ==================
instruction first sentence of every user request                        sentence rule
constraint  user sentences with must / never / only / instead / ...     sentence rule
file        files edited or created (edit tools, patches, ``sed -i``)   identifier rule
error       the latest 5 distinct error labels (signature line, with    sentence rule
            tool and target when it is shorter than 4 words)
decision    the latest 5 agent sentences stating a decision / reason    sentence rule
next_step   open todo / plan items (else "next ..." sentences)          sentence rule
identifier  branches, commits, versions, tickets, UUIDs, URLs           identifier rule
========== ============================================================ ==================

Matching is explainable, on normalised text (lower case, typographic quotes folded, every run
of non-alphanumerics one space):

* sentence rule — the normalised fact is a substring of the normalised target, or at least
  70% of its distinct content words (3+ letters, not stop words; the fact needs 3 or more)
  occur as words of the target;
* identifier rule — the normalised identifier occurs in the normalised target bounded by
  spaces; for a path, its full form or its file name; for a version ``v1.2``, also ``1.2``.

Each target (the agent's own compaction summary, our checkpoint, and the output of each
strategy) is the text a model would see: message text, tool names, tool inputs as JSON and
tool-result text. Sizes are ``o200k_base`` tokens for every target alike.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

import orjson

from ctxhealth.model import (
    CompactionSummary,
    Message,
    Session,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
)
from ctxhealth.recovery.budget import DEFAULT_ENCODING, text_tokens
from ctxhealth.recovery.checkpoint import DEFAULT_BUDGET_TOKENS, checkpoint_from_digest, render_text
from ctxhealth.recovery.clear import ClearConfig, ClearTrigger, TriggerKind, clear_tool_results
from ctxhealth.recovery.digest import Digest, digest, sentences
from ctxhealth.recovery.reanchor import reanchor
from ctxhealth.recovery.restart import restart
from ctxhealth.recovery.truncate import truncate

LATEST_ERRORS = 5
LATEST_DECISIONS = 5
COVERAGE = 0.7
MIN_CONTENT_WORDS = 3


class FactKind(StrEnum):
    INSTRUCTION = "instruction"
    CONSTRAINT = "constraint"
    FILE = "file"
    ERROR = "error"
    DECISION = "decision"
    NEXT_STEP = "next_step"
    IDENTIFIER = "identifier"


_IDENTIFIER_KINDS = {FactKind.FILE, FactKind.IDENTIFIER}


@dataclass(frozen=True, slots=True)
class Fact:
    kind: FactKind
    text: str


@dataclass(frozen=True, slots=True)
class Target:
    """One text a fact can survive in: its name, its size in tokens, which facts it keeps."""

    name: str
    tokens: int
    kept: tuple[bool, ...]  # parallel to RetentionReport.facts

    def count(self, facts: tuple[Fact, ...], kind: FactKind) -> int:
        return sum(1 for f, k in zip(facts, self.kept, strict=True) if k and f.kind is kind)

    def all_kept(self, facts: tuple[Fact, ...], kind: FactKind) -> bool:
        return all(k for f, k in zip(facts, self.kept, strict=True) if f.kind is kind)


@dataclass(frozen=True, slots=True)
class RetentionReport:
    path: str
    compaction: int | None  # the K of --before-compaction, when used
    facts: tuple[Fact, ...]
    targets: tuple[Target, ...]

    def total(self, kind: FactKind) -> int:
        return sum(1 for f in self.facts if f.kind is kind)


# --- normalisation and matching -----------------------------------------------------------

_FOLD = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-"})
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "that",
        "this",
        "with",
        "you",
        "your",
        "are",
        "was",
        "were",
        "have",
        "has",
        "had",
        "not",
        "but",
        "can",
        "will",
        "would",
        "should",
        "our",
        "ours",
        "its",
        "from",
        "into",
        "then",
        "than",
        "there",
        "their",
        "them",
        "they",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "how",
        "all",
        "any",
        "some",
        "just",
        "also",
        "lets",
        "let",
        "get",
        "got",
        "make",
        "made",
        "use",
        "used",
        "using",
        "out",
        "about",
        "over",
        "like",
        "only",
        "very",
        "please",
        "need",
        "want",
    ]
)


def normalise(text: str) -> str:
    """Lower case, typographic quotes folded, each run of non-alphanumerics one space, padded."""
    text = unicodedata.normalize("NFKC", text).translate(_FOLD).lower()
    return " " + _NON_ALNUM.sub(" ", text).strip() + " "


def content_words(normalised: str) -> set[str]:
    return {w for w in normalised.split() if len(w) >= 3 and w not in _STOP}


def sentence_survives(fact: str, target_norm: str, target_words: set[str]) -> bool:
    """The sentence rule (see the module docstring)."""
    norm = normalise(fact)
    if norm.strip() and norm in target_norm:
        return True
    words = content_words(norm)
    if len(words) < MIN_CONTENT_WORDS:
        return False
    return len(words & target_words) / len(words) >= COVERAGE


def identifier_survives(identifier: str, target_norm: str) -> bool:
    """The identifier rule (see the module docstring)."""
    forms = [identifier]
    if "/" in identifier.rstrip("/"):
        forms.append(identifier.rstrip("/").rsplit("/", 1)[1])
    if re.fullmatch(r"v\d+(\.\d+)+", identifier):
        forms.append(identifier[1:])
    return any((n := normalise(f)).strip() and n in target_norm for f in forms)


def fact_survives(fact: Fact, target_norm: str, target_words: set[str]) -> bool:
    if fact.kind in _IDENTIFIER_KINDS:
        return identifier_survives(fact.text, target_norm)
    return sentence_survives(fact.text, target_norm, target_words)


# --- extraction ---------------------------------------------------------------------------


def facts_from_digest(d: Digest) -> tuple[Fact, ...]:
    """The facts of a digest, in a stable order (kind, then session order)."""
    facts: list[Fact] = []
    for r in d.requests:
        first = sentences(r)
        facts.append(Fact(FactKind.INSTRUCTION, first[0] if first else " ".join(r.split())[:240]))
    facts += [Fact(FactKind.CONSTRAINT, c) for c in d.constraints]
    facts += [Fact(FactKind.FILE, f) for f in d.files_edited]
    labels: dict[str, None] = {}
    for e in d.errors:
        labels.pop(e.label, None)
        labels[e.label] = None
    # A one-word label ("Error") says nothing an audit could check.
    recent = [label for label in labels if len(label.split()) >= 2][-LATEST_ERRORS:]
    facts += [Fact(FactKind.ERROR, label) for label in recent]
    facts += [Fact(FactKind.DECISION, x.text) for x in d.decisions[-LATEST_DECISIONS:]]
    facts += [Fact(FactKind.NEXT_STEP, s) for s in d.remaining]
    facts += [Fact(FactKind.IDENTIFIER, i) for i in d.identifiers]
    return tuple(dict.fromkeys(facts))


# --- targets ------------------------------------------------------------------------------


def visible_text(messages: tuple[Message, ...]) -> str:
    """What a model sees of ``messages``: text, tool names and inputs, tool results (not thinking)."""
    parts: list[str] = []
    for m in messages:
        for b in m.blocks:
            if isinstance(b, (TextBlock, CompactionSummary)):
                parts.append(b.text)
            elif isinstance(b, ToolCall):
                payload = b.input if isinstance(b.input, str) else orjson.dumps(b.input).decode()
                parts.append(f"{b.name} {payload}")
            elif isinstance(b, ToolResult):
                parts.append(b.text)
            elif isinstance(b, ThinkingBlock):
                continue
    return "\n".join(parts)


def _target(name: str, text: str, facts: tuple[Fact, ...], encoding: str | None) -> Target:
    norm = normalise(text)
    words = set(norm.split())
    return Target(name, text_tokens(text, encoding), tuple(fact_survives(f, norm, words) for f in facts))


def audit(
    session: Session,
    *,
    summary: CompactionSummary | None = None,
    compaction: int | None = None,
    checkpoint_tokens: int = DEFAULT_BUDGET_TOKENS,
    encoding: str | None = DEFAULT_ENCODING,
) -> RetentionReport:
    """Facts of ``session`` and how many survive in ``summary`` (the agent's own, when given),
    our checkpoint, and the output of each strategy."""
    d = digest(session)
    facts = facts_from_digest(d)
    targets: list[Target] = []
    if summary is not None:
        targets.append(_target("agent-summary", summary.text, facts, encoding))
    cp = checkpoint_from_digest(d, budget_tokens=checkpoint_tokens, encoding=encoding)
    targets.append(_target("checkpoint", render_text(cp), facts, encoding))
    outputs = {
        "restart": restart(session, checkpoint_tokens=checkpoint_tokens, encoding=encoding)[0],
        "truncate": truncate(session, checkpoint_tokens=checkpoint_tokens, encoding=encoding)[0],
        "clear": clear_tool_results(
            session, ClearConfig(trigger=ClearTrigger(TriggerKind.TOOL_USES, 0)), encoding=encoding
        )[0],
        "reanchor": reanchor(session, encoding=encoding)[0],
    }
    for name, out in outputs.items():
        targets.append(_target(name, visible_text(out.messages), facts, encoding))
    return RetentionReport(session.path, compaction, facts, tuple(targets))


def report_dict(report: RetentionReport) -> dict[str, object]:
    """A JSON-ready view: per target its tokens and kept counts per kind, and every fact with
    the targets that keep it (so each number can be traced to the facts behind it)."""
    kinds = [k for k in FactKind]
    return {
        "path": report.path,
        "compaction": report.compaction,
        "totals": {k.value: report.total(k) for k in kinds} | {"all": len(report.facts)},
        "targets": [
            {
                "name": t.name,
                "tokens": t.tokens,
                "kept": {k.value: t.count(report.facts, k) for k in kinds} | {"all": sum(t.kept)},
                "all_constraints_kept": t.all_kept(report.facts, FactKind.CONSTRAINT),
            }
            for t in report.targets
        ],
        "facts": [
            {
                "kind": f.kind.value,
                "text": f.text,
                "kept_in": [t.name for t in report.targets if t.kept[i]],
            }
            for i, f in enumerate(report.facts)
        ],
    }


def render_table(report: RetentionReport) -> str:
    """A plain-text table: one row per fact kind, one column per target (``kept/total``)."""
    names = [t.name for t in report.targets]
    width = max(12, *(len(n) for n in names))
    header = f"{'fact type':<12} {'total':>5}  " + "  ".join(f"{n:>{width}}" for n in names)
    rows = [header]
    for kind in FactKind:
        total = report.total(kind)
        cells = "  ".join(f"{t.count(report.facts, kind):>{width}}" for t in report.targets)
        rows.append(f"{kind.value:<12} {total:>5}  {cells}")
    cells = "  ".join(f"{sum(t.kept):>{width}}" for t in report.targets)
    rows.append(f"{'all facts':<12} {len(report.facts):>5}  {cells}")
    cells = "  ".join(f"{t.tokens:>{width},}" for t in report.targets)
    rows.append(f"{'tokens':<12} {'':>5}  {cells}")
    cells = "  ".join(
        f"{('yes' if t.all_kept(report.facts, FactKind.CONSTRAINT) else 'NO'):>{width}}"
        for t in report.targets
    )
    rows.append(f"{'constraints':<12} {'all?':>5}  {cells}")
    return "\n".join(rows)
