"""The on-disk index cache: files per repository under ``<home>/pack-index/``.

``<key>.json`` maps each path to the facts of the content it last saw
(:class:`~ctxhealth.pack.facts.FileFacts`), keyed by content hash: an entry is used only when the
file's current hash equals the stored one, so a changed file is re-read and the rest are not. The
word bags, which only a rebuild of the BM25 index reads and which are most of the bytes, are kept
apart in ``<key>.bags`` (path -> content hash and bag), so a warm run does not parse them. Both
written atomically; a cache file that cannot be read (corrupt, another schema) is ignored and
rewritten, never trusted, and a bag whose hash is not the file's is read again from the file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from ctxhealth.atomic import write_atomic
from ctxhealth.pack.facts import FileFacts

CACHE_SCHEMA = 4
CACHE_DIR = "pack-index"


def cache_path(home: Path, repo: Path) -> Path:
    """The cache file of ``repo`` (named by a hash of its resolved path) under ``home``."""
    key = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:24]
    return home / CACHE_DIR / f"{key}.json"


def bags_path(file: Path) -> Path:
    """The word-bag file beside an index cache file."""
    return file.with_suffix(".bags")


def _encode(facts: FileFacts) -> list[Any]:
    return [
        facts.digest,
        facts.size,
        facts.language,
        list(facts.defines),
        list(facts.imports),
        facts.lines,
        facts.tokens,
        None if facts.signature_lines is None else list(facts.signature_lines),
        facts.mtime_ns,
        facts.declarations,
    ]


def _decode(path: str, row: list[Any]) -> FileFacts:
    digest, size, language, defines, imports, lines, tokens, signature_lines, mtime_ns, declarations = row
    return FileFacts(
        path=path,
        digest=str(digest),
        size=int(size),
        language=language,
        bag_json=None,
        defines=tuple(defines),
        imports=tuple(imports),
        lines=int(lines),
        tokens=None if tokens is None else int(tokens),
        signature_lines=None if signature_lines is None else tuple(int(n) for n in signature_lines),
        mtime_ns=int(mtime_ns),
        declarations=None if declarations is None else int(declarations),
    )


def _load_rows(file: Path, key: str) -> dict[str, Any]:
    """The ``key`` table of a cache file of this schema; empty when missing, unreadable or of
    another schema."""
    try:
        doc = orjson.loads(file.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != CACHE_SCHEMA or not isinstance(doc.get(key), dict):
        return {}
    rows: dict[str, Any] = doc[key]
    return rows


def load_cache(file: Path) -> dict[str, tuple[str, list[Any]]]:
    """``path -> (digest, encoded row)`` from the cache file; empty when missing or unreadable."""
    out: dict[str, tuple[str, list[Any]]] = {}
    for path, row in _load_rows(file, "files").items():
        if isinstance(row, list) and len(row) == 10 and isinstance(row[0], str):
            out[path] = (row[0], row)
    return out


def decode_row(path: str, row: list[Any]) -> FileFacts | None:
    """The facts of one cached row, or None when the row is malformed."""
    try:
        return _decode(path, row)
    except (TypeError, ValueError, AttributeError):
        return None


def save_cache(file: Path, facts: dict[str, FileFacts]) -> None:
    """Write the facts of every file atomically (sorted, so equal input gives equal bytes)."""
    doc = {"schema": CACHE_SCHEMA, "files": {p: _encode(facts[p]) for p in sorted(facts)}}
    write_atomic(file, orjson.dumps(doc))


def load_bags(file: Path) -> dict[str, tuple[str, str]]:
    """``path -> (content hash, bag JSON)`` from a bag file; empty when missing or unreadable."""
    return {
        path: (row[0], row[1])
        for path, row in _load_rows(file, "bags").items()
        if isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and isinstance(row[1], str)
    }


def save_bags(file: Path, bags: dict[str, tuple[str, str]]) -> None:
    """Write ``path -> (content hash, bag JSON)`` atomically (sorted)."""
    doc = {"schema": CACHE_SCHEMA, "bags": {p: list(bags[p]) for p in sorted(bags)}}
    write_atomic(file, orjson.dumps(doc))
