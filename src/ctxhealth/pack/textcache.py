"""Texts a pack derives from one file's content, remembered across runs: a file's compressed text
(per comment setting) and its rendered signatures, so a warm pack neither reads nor compresses the
files it packs again.

:class:`TextMemo` keys each text by a hash of what it is derived from — the kind, the path (the
language and the compression rules follow from it), the file's content hash and the setting — so a
file that changes, moves or is deleted simply stops being asked for; nothing else invalidates it.
The memo lives beside the repository's index cache (``<key>.texts``): a small JSON header (key ->
offset, length and a check hash of the text) after a magic line, then the texts' UTF-8 bytes; a
run reads the header, and a text's bytes only when it is asked for; one whose bytes do not match
its check hash is not trusted (it is computed again). Written atomically, when a run derived
anything new: this run's texts first, then earlier ones, up to :data:`MAX_BYTES`. A memo that
cannot be read is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
from pathlib import Path
from typing import BinaryIO

import orjson

from ctxhealth.atomic import write_atomic

MAX_BYTES = 32 << 20
"""The texts kept at most (bytes of UTF-8): those used by the latest run first."""
_MAGIC = b"ctxhealth-texts\x01"
_LENGTH = struct.Struct("<Q")


def texts_path(index_cache: Path) -> Path:
    """The memo file beside an index cache file."""
    return index_cache.with_suffix(".texts")


def text_key(kind: str, path: str, digest: str, setting: str = "") -> str:
    """The key of the ``kind`` text of ``path`` with content hash ``digest`` and ``setting``."""
    raw = f"{kind}\0{path}\0{digest}\0{setting}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _check(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


class TextMemo:
    """Derived texts by :func:`text_key`: :meth:`get`, :meth:`put`, and :meth:`save` after a pack."""

    def __init__(self, file: Path | None = None) -> None:
        self.file = file
        self._handle: BinaryIO | None = None
        self._where: dict[str, tuple[int, int, str]] = {}
        self._used: dict[str, bytes] = {}
        self._new = 0
        if file is not None:
            self._open(file)

    def _open(self, file: Path) -> None:
        """Read the header only: a text's bytes are read when it is asked for."""
        try:
            handle = open(file, "rb")  # noqa: SIM115 -- held until close() (or collected)
        except OSError:
            return
        try:
            at = len(_MAGIC) + _LENGTH.size
            start = handle.read(at)
            if len(start) < at or not start.startswith(_MAGIC):
                return handle.close()
            (size,) = _LENGTH.unpack_from(start, len(_MAGIC))
            header = orjson.loads(handle.read(size))
            end = os.fstat(handle.fileno()).st_size
        except (OSError, orjson.JSONDecodeError):
            return handle.close()
        if not isinstance(header, dict):
            return handle.close()
        body = at + size
        where: dict[str, tuple[int, int, str]] = {}
        for key, row in header.items():
            if (
                isinstance(row, list)
                and len(row) == 3
                and type(row[0]) is int
                and type(row[1]) is int
                and isinstance(row[2], str)
                and row[0] >= 0
                and row[1] >= 0
                and body + row[0] + row[1] <= end
            ):
                where[key] = (body + row[0], row[1], row[2])
        self._handle, self._where = handle, where

    def _read(self, key: str) -> bytes | None:
        """The stored bytes of ``key`` when they match their check hash."""
        place = self._where.get(key)
        if place is None or self._handle is None:
            return None
        start, length, check = place
        found = self._bytes_at(start, length)
        return found if found is not None and _check(found) == check else None

    def _bytes_at(self, start: int, length: int) -> bytes | None:
        if self._handle is None:
            return None
        try:
            self._handle.seek(start)
            found = self._handle.read(length)
        except OSError:
            return None
        return found if len(found) == length else None

    def get(self, key: str) -> str | None:
        """The text remembered under ``key``, or None."""
        found = self._used.get(key)
        if found is None:
            found = self._read(key)
            if found is None:
                return None
            self._used[key] = found
        return found.decode("utf-8", "surrogatepass")

    def put(self, key: str, text: str) -> None:
        """Remember ``text`` under ``key`` (for this run and, after :meth:`save`, the next)."""
        if key not in self._used:
            self._used[key] = text.encode("utf-8", "surrogatepass")
            self._new += 1

    def save(self) -> None:
        """Write the memo when this run derived a text it did not have. Earlier texts are copied
        with their check hash unverified (one that does not match stays untrusted)."""
        if self.file is not None and self._new:
            kept = {key: (data, _check(data)) for key, data in self._used.items()}
            total = sum(len(v) for v in self._used.values())
            for key, (start, length, check) in self._where.items():
                if key in kept or total + length > MAX_BYTES:
                    continue
                found = self._bytes_at(start, length)
                if found is None:
                    continue
                kept[key] = (found, check)
                total += length
            header: dict[str, list[object]] = {}
            offset = 0
            for key, (data, check) in kept.items():
                header[key] = [offset, len(data), check]
                offset += len(data)
            head = orjson.dumps(header)
            parts = [_MAGIC, _LENGTH.pack(len(head)), head, *(data for data, _ in kept.values())]
            with contextlib.suppress(OSError):  # a cache only: the next run derives them again
                write_atomic(self.file, b"".join(parts))
            self._new = 0
            self.close()
            self._used = {}
            self._open(self.file)  # the memo goes on from what was written (a packer packs many tasks)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            self._where = {}
