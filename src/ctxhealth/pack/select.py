"""Inverse packing of source files: rank every candidate, take from the top while the L3 budget lasts.

For each ranked file the preferred form comes from its tier (:mod:`ctxhealth.pack.priority`); the
text is compressed, deduplicated against the files already taken, rendered and counted exactly. A
file whose preferred form does not fit is tried as signatures; one that still does not fit is
skipped (the next, smaller one may fit). After the pass, files packed as signatures only because
they are large get their whole text back, best first, while the budget allows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ctxhealth.pack.compress import compress_text
from ctxhealth.pack.dedup import Deduped, ParagraphDeduper
from ctxhealth.pack.facts import declaration_lines
from ctxhealth.pack.priority import B_TRIM_TOKENS, LARGE_FILE_TOKENS, Tier
from ctxhealth.pack.render import OutputFormat, PackedPiece, render_piece
from ctxhealth.pack.signatures import render_signatures, signature_lines
from ctxhealth.pack.textcache import TextMemo, text_key

MAX_CONSIDERED = 200
"""Ranked files examined at most; beyond this many the remaining ones are listed as not reached."""
SEPARATOR_TOKENS = 1
PROSE_HEAD_TOKENS = 1_000
MIN_PIECE_TOKENS = 24
"""Below this many tokens left, no file's header and fence fit: stop examining."""
MAX_COMPRESSION = 0.5
"""Dedup shrinks a file by at most this factor in practice: a form estimated above remaining / 0.5 is
not worth rendering (an optimisation only; what fits is always decided by an exact count)."""


@dataclass(slots=True)
class Ranked:
    """One eligible file in rank order. Its ``text`` is read on first use (``read``): of a few hundred
    eligible files a pack reaches the first until the budget is spent, and reads only those."""

    path: str
    tier: Tier
    score: float
    language: str | None
    read: Callable[[], str] = field(repr=False, compare=False)
    signature_lines: tuple[int, ...] | None = None
    raw_tokens: int | None = None
    declarations: int | None = None
    """:func:`~ctxhealth.pack.facts.declaration_lines` of the text, when the index knows it."""
    digest: str | None = None
    """The content hash: with it, derived texts are looked up in a :class:`TextMemo` first."""
    _text: str | None = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.read()
        return self._text


@dataclass(slots=True)
class Taken:
    """A file packed into L3: its piece, rendered text, exact tokens, rank and why this form."""

    ranked: Ranked
    piece: PackedPiece
    rendered: str
    tokens: int
    rank: int
    reason: str
    full_tokens: int
    deduped: int


def _trim_to_tokens(text: str, limit: int, count: Callable[[str], int]) -> str:
    lines = text.splitlines()
    lo, hi, best = 0, len(lines), 0
    while lo <= hi:
        mid = (lo + hi) // 2
        if count("\n".join(lines[:mid])) <= limit:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return "\n".join([*lines[:best], f"[... {len(lines) - best} more lines trimmed ...]"])


def _forms(
    ranked: Ranked, full: str, full_tokens: int, count: Callable[[str], int]
) -> list[tuple[str, str, str]]:
    """Forms to try, best first: ``(form, text, reason)``."""
    signatures = ("signatures", "", f"signatures: {full_tokens:,} tokens in full")
    if ranked.tier is Tier.C:
        return [("signatures", "", "same package as an active file: signatures and docstrings")]
    if ranked.tier is Tier.B and B_TRIM_TOKENS < full_tokens <= LARGE_FILE_TOKENS:
        trimmed = _trim_to_tokens(full, B_TRIM_TOKENS, count)
        return [("trimmed", trimmed, f"dependency over {B_TRIM_TOKENS:,} tokens: trimmed"), signatures]
    if full_tokens > LARGE_FILE_TOKENS and ranked.tier is not Tier.A:
        if ranked.language is None:  # prose and data: the head of the file stands in for signatures
            head = _trim_to_tokens(full, PROSE_HEAD_TOKENS, count)
            return [("trimmed", head, f"head of a {full_tokens:,}-token text file")]
        return [signatures]
    return [("full", full, "whole file"), signatures]


def _signatures_estimate(item: Ranked) -> int:
    """A cheap lower bound on the tokens of a signatures form: a few per declaration line (from the
    index when it knows them: a file ranked but over the budget is then never read)."""
    found = item.declarations
    return 8 * (declaration_lines(item.text) if found is None else found) + 20


def pack_sources(
    ranked: Sequence[Ranked],
    budget: int,
    *,
    fmt: OutputFormat,
    strip_comments: bool,
    count: Callable[[str], int],
    found_lines: dict[str, tuple[int, ...]] | None = None,
    found_tokens: dict[str, int] | None = None,
    texts: TextMemo | None = None,
) -> tuple[list[Taken], dict[str, str], int]:
    """Choose and render L3 files within ``budget`` tokens; also why the others were left out.

    Signature lines and whole-file token counts computed on the way are added to ``found_lines`` and
    ``found_tokens`` (for the index cache); compressed texts and rendered signatures are taken from
    and added to ``texts`` (for a file whose content hash is known)."""
    if found_lines is None:
        found_lines = {}
    if found_tokens is None:
        found_tokens = {}
    memo = texts if texts is not None else TextMemo()
    deduper = ParagraphDeduper()
    compressed: dict[str, str] = {}
    setting = "strip" if strip_comments else "keep"

    def compress(item: Ranked) -> str:  # a file upgraded to its whole text is compressed once
        found = compressed.get(item.path)
        if found is None:
            key = text_key("compressed", item.path, item.digest, setting) if item.digest else None
            found = memo.get(key) if key else None
            if found is None:
                found = compress_text(item.path, item.text, strip_comments=strip_comments)
                if key:
                    memo.put(key, found)
            compressed[item.path] = found
        return found

    def signatures(item: Ranked, language: str) -> str:
        key = text_key("signatures", item.path, item.digest) if item.digest else None
        found = memo.get(key) if key else None
        if found is None:
            lines = item.signature_lines
            if lines is None:
                lines = tuple(signature_lines(language, item.text))
                found_lines[item.path] = lines
            found = render_signatures(language, item.text, lines)
            if key:
                memo.put(key, found)
        return found

    taken: list[Taken] = []
    left: dict[str, str] = {}
    remaining = budget
    for rank, item in enumerate(ranked):
        if rank >= MAX_CONSIDERED:
            left[item.path] = "not reached: ranked below the files examined"
            continue
        if remaining < MIN_PIECE_TOKENS:
            left[item.path] = "L3 budget spent"
            continue
        raw_tokens = item.raw_tokens
        if raw_tokens is None:
            raw_tokens = count(item.text)
            found_tokens[item.path] = raw_tokens
        if raw_tokens * MAX_COMPRESSION > remaining and _signatures_estimate(item) > remaining:
            left[item.path] = f"over budget: {raw_tokens:,} tokens in full, {remaining:,} left in L3"
            continue
        full = compress(item)
        full_tokens = count(full)
        placed = False
        for form, text, reason in _forms(item, full, full_tokens, count):
            result: Deduped | None = None
            if form == "signatures":
                if item.language is None:
                    continue  # prose and data have no signatures
                text = signatures(item, item.language)
            elif form == "full" and full_tokens * MAX_COMPRESSION > remaining:
                continue
            else:
                result = deduper.dedupe(item.path, text)
                text = result.text
            piece = PackedPiece(item.path, form, text)
            rendered = render_piece(piece, fmt)
            tokens = count(rendered) + SEPARATOR_TOKENS
            if tokens <= remaining:
                if result is not None:
                    deduper.commit(result)
                merged = result.replaced if result else 0
                taken.append(Taken(item, piece, rendered, tokens, rank, reason, full_tokens, merged))
                remaining -= tokens
                placed = True
                break
        if not placed:
            left[item.path] = f"over budget: {full_tokens:,} tokens in full, {remaining:,} left in L3"
    for entry in sorted(
        (t for t in taken if t.piece.form == "signatures" and t.ranked.tier is not Tier.C),
        key=lambda t: t.rank,
    ):
        full = compress(entry.ranked)
        result = deduper.dedupe(entry.ranked.path, full)
        piece = PackedPiece(entry.ranked.path, "full", result.text)
        rendered = render_piece(piece, fmt)
        tokens = count(rendered) + SEPARATOR_TOKENS
        if tokens - entry.tokens <= remaining:
            deduper.commit(result)
            remaining -= tokens - entry.tokens
            entry.piece, entry.rendered, entry.tokens = piece, rendered, tokens
            entry.reason, entry.deduped = "whole file: the budget allows it", result.replaced
    return taken, left, deduper.merged
