"""The repository index: every candidate's bytes and facts, built from the cache where hashes match.

:func:`build_index` lists the candidates, reads each file once (the content hash needs the bytes
anyway), reuses cached facts whose hash equals the file's, reads facts for the rest, and writes the
cache back when anything changed. Files whose content disqualifies them (binary, minified, too big)
join the excluded list with their reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from ctxhealth.pack.cache import (
    bags_path,
    cache_path,
    decode_row,
    load_bags,
    load_cache,
    save_bags,
    save_cache,
)
from ctxhealth.pack.candidates import MAX_FILE_BYTES, content_reason, list_candidates, open_inside
from ctxhealth.pack.facts import FileFacts, content_digest, read_facts


@dataclass(slots=True)
class RepoIndex:
    """The candidates of one repository: facts and bytes per path (sorted), exclusions, cache use."""

    root: Path
    source: str
    facts: dict[str, FileFacts]
    contents: dict[str, bytes]
    excluded: list[tuple[str, str]]
    cache_hits: int = 0
    cache_misses: int = 0
    cache_file: Path | None = None
    _dirty: bool = field(default=False, repr=False)
    _bags_dirty: bool = field(default=False, repr=False)
    _bags: list[dict[str, int]] | None = field(default=None, repr=False)

    @property
    def paths(self) -> list[str]:
        return list(self.facts)

    def data(self, path: str) -> bytes:
        """The bytes of a candidate (read on first use: a warm run reads only the files it packs)."""
        found = self.contents.get(path)
        if found is None:
            top = str(self.root)
            found = open_inside(top, os.path.realpath(top), path, MAX_FILE_BYTES)
            self.contents[path] = found
        return found

    def text(self, path: str) -> str:
        return self.data(path).decode("utf-8", "replace")

    def remember(
        self, path: str, *, tokens: int | None = None, signature_lines: list[int] | None = None
    ) -> None:
        """Store a whole file's exact token count or its signature lines for the next run."""
        old = self.facts.get(path)
        if old is None:
            return
        new = old
        if tokens is not None and old.tokens != tokens:
            new = replace(new, tokens=tokens)
        if signature_lines is not None and old.signature_lines != tuple(signature_lines):
            new = replace(new, signature_lines=tuple(signature_lines))
        if new is not old:
            self.facts[path] = new
            self._dirty = True

    def bags(self) -> list[dict[str, int]]:
        """Every candidate's word bag, in order (for a rebuild of the BM25 index): from the facts read
        now, else from the bag file when its hash is the file's, else from the file itself."""
        if self._bags is None:
            stored = load_bags(bags_path(self.cache_file)) if self.cache_file is not None else {}
            out: list[dict[str, int]] = []
            for path, facts in self.facts.items():
                if facts.bag_json is None:
                    kept = stored.get(path)
                    bag_json: str | None = None
                    if kept is not None and kept[0] == facts.digest:
                        bag_json = kept[1]
                    else:
                        bag_json = read_facts(path, self.data(path), facts.digest).bag_json
                        self._bags_dirty = True
                    facts = self.facts[path] = replace(facts, bag_json=bag_json)
                out.append(facts.bag)
            self._bags = out
        return self._bags

    def flush(self) -> None:
        """Write the cache when facts changed since it was read (and the bags when they did)."""
        if self.cache_file is None:
            return
        if self._bags_dirty:
            self.bags()
            bags = {p: (f.digest, f.bag_json) for p, f in self.facts.items() if f.bag_json is not None}
            save_bags(bags_path(self.cache_file), bags)
            self._bags_dirty = False
        if self._dirty:
            save_cache(self.cache_file, self.facts)
            self._dirty = False


def build_index(repo: Path, *, cache_home: Path | None = None) -> RepoIndex:
    """Index ``repo``'s candidates, reusing and refreshing the cache under ``cache_home`` when given."""
    file = cache_path(cache_home, repo) if cache_home is not None else None
    candidates = list_candidates(repo, file.with_suffix(".listing") if file is not None else None)
    cached = load_cache(file) if file is not None else {}
    found: dict[str, FileFacts] = {}
    excluded = list(candidates.excluded)
    hits = misses = changed_stat = 0
    top = str(repo)
    pending: list[tuple[str, int, str | None]] = []
    for path in candidates.paths:
        entry = cached.get(path)
        try:
            stat = candidates.stats.get(path) or os.stat(os.path.join(top, path))
        except OSError as exc:
            excluded.append((path, f"unreadable: {exc.strerror or exc}"))
            continue
        known = decode_row(path, entry[1]) if entry is not None else None
        # Same size and modification time as when its hash was taken: the content is unchanged
        # (the shortcut git's index takes too); anything else is re-read and re-hashed.
        if known is not None and known.mtime_ns == stat.st_mtime_ns and known.size == stat.st_size:
            found[path] = known
            hits += 1
        else:
            pending.append((path, stat.st_mtime_ns, entry[0] if entry is not None else None))
    for (path, mtime_ns, _), (reason, digest, fresh) in zip(pending, _examine_all(top, pending), strict=True):
        if reason is not None:
            excluded.append((path, reason))
            continue
        entry = cached.get(path)
        facts = fresh if fresh is not None else (decode_row(path, entry[1]) if entry is not None else None)
        if facts is None:  # a cached row that no longer decodes
            facts = read_facts(path, _read(top, path), digest)
        misses += fresh is not None
        hits += fresh is None
        changed_stat += facts.mtime_ns != mtime_ns
        found[path] = replace(facts, mtime_ns=mtime_ns)
    facts_in_order = {path: found[path] for path in candidates.paths if path in found}
    contents: dict[str, bytes] = {}
    index = RepoIndex(
        root=repo,
        source=candidates.source,
        facts=facts_in_order,
        contents=contents,
        excluded=sorted(excluded),
        cache_hits=hits,
        cache_misses=misses,
        cache_file=file,
        _dirty=misses > 0 or changed_stat > 0 or len(cached) != hits,
        _bags_dirty=misses > 0 or len(cached) != hits,
    )
    index.flush()
    return index


def _read(top: str, path: str) -> bytes:
    return open_inside(top, os.path.realpath(top), path, MAX_FILE_BYTES)


def _examine(top: str, path: str, cached_digest: str | None) -> tuple[str | None, str, FileFacts | None]:
    """Read one file: why it is not a candidate, or its hash and (unless the hash is the cached one)
    its facts."""
    try:
        data = _read(top, path)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}", "", None
    reason = content_reason(data)
    if reason is not None:
        return reason, "", None
    digest = content_digest(data)
    return None, digest, None if digest == cached_digest else read_facts(path, data, digest)


def _examine_all(
    top: str, pending: list[tuple[str, int, str | None]]
) -> list[tuple[str | None, str, FileFacts | None]]:
    """:func:`_examine` for every pending file, in order.

    One process on purpose: worker processes would need "spawn" (the caller may hold threads,
    which forking does not survive), and "spawn" re-imports the caller's main module."""
    return [_examine(top, path, digest) for path, _, digest in pending]
