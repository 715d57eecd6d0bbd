"""The exact o200k counts a pack already took, remembered per repository, so a warm pack whose
texts were all counted before never loads the tokenizer's vocabulary (most of a warm run's
fixed cost).

:class:`CountMemo` is the packer's ``count`` function: a text is looked up by a 128-bit BLAKE2b
digest of its UTF-8 bytes; only on a miss is the vocabulary loaded and the text counted exactly.
The memo lives next to the repository's index cache (``<key>.counts.json``), written atomically,
holding at most :data:`MAX_ENTRIES` counts (those used by the latest run first). A memo that
cannot be read is ignored (every text is then counted again): it only ever holds exact counts,
so the payload and the manifest are the same with or without it. The tokenizer itself (and the
accounting code around it) is imported only for a text the memo cannot answer: a warm pack whose
texts were all counted before never imports it, and needs it installed only to count a new text.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ctxhealth.atomic import write_atomic
from ctxhealth.errors import TokenizerUnavailable

if TYPE_CHECKING:
    from ctxhealth.accounting.types import FillSource

MAX_ENTRIES = 50_000
MEMO_SCHEMA = 1


def memo_path(index_cache: Path) -> Path:
    """The memo file beside an index cache file."""
    return index_cache.with_suffix(".counts.json")


def _counter(encoding: str) -> Callable[..., tuple[list[int], FillSource]]:
    """The exact counter (:func:`ctxhealth.accounting.tokens.count_batch`), or
    :class:`TokenizerUnavailable` when ``encoding`` cannot be counted exactly here."""
    from ctxhealth.accounting.tokens import count_batch, exact_available

    if not exact_available(encoding):
        raise TokenizerUnavailable(
            f"exact {encoding} token counts are needed for a hard budget and toktok cannot be imported",
            hint="install the tokenizer: pip install toktok-rs",
        )
    return count_batch


def _key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class CountMemo:
    """``count(text)``: exact ``encoding`` tokens, from the memo or counted (and remembered)."""

    def __init__(self, encoding: str, file: Path | None = None) -> None:
        self.encoding = encoding
        self.file = file
        self.known: dict[str, int] = self._load(file) if file is not None else {}
        self.used: dict[str, int] = {}
        self.counted = 0
        self._loading: threading.Thread | None = None
        if not self.known:
            # nothing remembered (a cold run): start loading the vocabulary now, in a thread; it
            # releases the GIL, so it overlaps with indexing, and the first count waits for it
            count_batch = _counter(encoding)
            self._loading = threading.Thread(target=count_batch, args=(["warm-up"], encoding), daemon=True)
            self._loading.start()

    def _load(self, file: Path) -> dict[str, int]:
        try:
            doc = orjson.loads(file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        if (
            not isinstance(doc, dict)
            or doc.get("schema") != MEMO_SCHEMA
            or doc.get("encoding") != self.encoding
        ):
            return {}
        counts = doc.get("counts")
        if not isinstance(counts, dict):
            return {}
        return {k: v for k, v in counts.items() if isinstance(k, str) and type(v) is int and v >= 0}

    def __call__(self, text: str) -> int:
        key = _key(text)
        found = self.used.get(key)
        if found is None:
            found = self.known.get(key)
        if found is None:
            count_batch = _counter(self.encoding)
            if self._loading is not None and self._loading.is_alive():
                self._loading.join()
            found = int(count_batch([text], self.encoding)[0][0])
            self.counted += 1
        self.used[key] = found
        return found

    def save(self) -> None:
        """Write the memo (this run's counts first, then earlier ones, up to :data:`MAX_ENTRIES`)
        when this run counted anything new."""
        if self.file is None or not self.counted:
            return
        merged = dict(self.used)
        for key, value in self.known.items():
            if len(merged) >= MAX_ENTRIES:
                break
            merged.setdefault(key, value)
        doc = {"schema": MEMO_SCHEMA, "encoding": self.encoding, "counts": merged}
        with contextlib.suppress(OSError):  # a cache only: the next run counts again
            write_atomic(self.file, orjson.dumps(doc))
