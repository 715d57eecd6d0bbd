"""Pack manifests (``ctxhealth pack --json``) as the audit reads them: shape checked, errors located.

A manifest is one JSON object with ``"kind": "ctxhealth/pack-manifest"`` and ``schema_version`` 1:
``budget``, ``tokens``, ``window`` (int or null), ``threshold``, ``levels {L1..L5: tokens}``,
``level_digests {L1..: sha256 hex}``, ``input_digest``, ``errors_given`` (bool), ``files [{path,
level, priority, form, tokens, score, components, reason}]`` and ``excluded [...]``. Only the
fields the checks use are required; a wrong one is an :class:`InputError` naming the file and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ctxhealth.errors import InputError

KIND = "ctxhealth/pack-manifest"
SCHEMA_VERSION = 1
_KIND_BYTES = KIND.encode()


@dataclass(frozen=True, slots=True)
class PackedFile:
    path: str
    level: str
    tokens: int
    score: float


@dataclass(frozen=True, slots=True)
class PackManifest:
    path: str
    budget: int
    tokens: int
    window: int | None
    threshold: float
    levels: dict[str, int]
    level_digests: dict[str, str]
    input_digest: str
    errors_given: bool
    files: tuple[PackedFile, ...]


def looks_like_manifest(head: bytes) -> bool:
    """True when the first bytes of a file name the manifest kind (cheap sniff before parsing)."""
    return _KIND_BYTES in head


def _bad(path: str, what: str) -> InputError:
    return InputError(
        f"not a valid pack manifest: {what}",
        hint="write it with `ctxhealth pack --json` (kind ctxhealth/pack-manifest, schema_version 1)",
        path=path,
    )


def _int(doc: dict[str, Any], key: str, path: str, *, nullable: bool = False) -> Any:
    value = doc.get(key)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(path, f"'{key}' must be a non-negative integer")
    return value


def parse_manifest(data: bytes, path: str) -> PackManifest:
    """A manifest from its JSON bytes; raises :class:`InputError` on anything the checks cannot use."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _bad(path, f"invalid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise _bad(path, f"'kind' is not {KIND!r}")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise _bad(path, f"schema_version {doc.get('schema_version')!r} is not {SCHEMA_VERSION}")
    threshold = doc.get("threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise _bad(path, "'threshold' must be a number")
    levels = doc.get("levels")
    digests = doc.get("level_digests")
    if not isinstance(levels, dict) or not all(isinstance(v, int) for v in levels.values()):
        raise _bad(path, "'levels' must map level names to token counts")
    if not isinstance(digests, dict) or not all(isinstance(v, str) for v in digests.values()):
        raise _bad(path, "'level_digests' must map level names to sha256 hex digests")
    if not isinstance(doc.get("input_digest"), str) or not isinstance(doc.get("errors_given"), bool):
        raise _bad(path, "'input_digest' must be a string and 'errors_given' a boolean")
    raw_files = doc.get("files")
    if not isinstance(raw_files, list):
        raise _bad(path, "'files' must be a list")
    files = []
    for number, item in enumerate(raw_files):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise _bad(path, f"files[{number}] has no 'path'")
        score = item.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise _bad(path, f"files[{number}] ({item['path']}) has no numeric 'score'")
        tokens = item.get("tokens", 0)
        files.append(
            PackedFile(
                item["path"], str(item.get("level", "")), tokens if isinstance(tokens, int) else 0, score
            )
        )
    return PackManifest(
        path=path,
        budget=_int(doc, "budget", path),
        tokens=_int(doc, "tokens", path),
        window=_int(doc, "window", path, nullable=True),
        threshold=float(threshold),
        levels=dict(levels),
        level_digests=dict(digests),
        input_digest=doc["input_digest"],
        errors_given=doc["errors_given"],
        files=tuple(files),
    )


def read_manifest(path: Path) -> PackManifest:
    """The manifest at ``path``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(
            f"cannot read pack manifest: {exc.strerror}", hint="check the path", path=str(path)
        ) from None
    return parse_manifest(data, str(path))
