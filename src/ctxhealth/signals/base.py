"""What every detector shares: the :class:`Signal` it reports, the protocol, small bounded helpers.

A detector (``signals.events.Event`` is what it is fed) is a small object with ``update(event)``
(O(1) amortised, memory bounded by a window, never by the history), ``snapshot()`` (a cheap copy
of its state, cached until the next change) and ``render(snapshot)`` (its readings).
Each :class:`Signal` carries its value, whether it fired, and its evidence: the message indices
that explain it, so every verdict can be traced back to the transcript.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from ctxhealth.native import KERNELS

K = TypeVar("K")
V = TypeVar("V")

EVIDENCE_LIMIT = 8
"""At most this many message indices are kept as evidence per signal (the most recent)."""


class Signal(msgspec.Struct, frozen=True):
    """One reading: ``value`` (its unit depends on the signal), ``fired`` when its threshold is
    crossed, ``evidence`` the message indices behind it, ``detail`` a short human explanation."""

    name: str
    value: float
    fired: bool = False
    evidence: tuple[int, ...] = ()
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": round(self.value, 4),
            "fired": self.fired,
            "evidence": list(self.evidence),
            "detail": self.detail,
        }


class Detector(Protocol):
    """The contract every detector family implements (built-ins register the same way).

    ``snapshot()`` is a cheap immutable copy of the state (cached until the next change) and
    ``render(snapshot)`` turns one into signals using nothing else, so a monitor can keep a
    snapshot per turn and build the explanations only when someone reads them (or, with
    :meth:`LazySignals.deferred`, take the snapshot only then too).
    """

    def update(self, event: Any) -> None: ...

    def snapshot(self) -> Any: ...

    def render(self, snap: Any) -> tuple[Signal, ...]: ...


class CachedDetector:
    """Base of the built-in detectors: a snapshot cached until :meth:`changed` is called.

    Each built-in detector saves its state explicitly: ``serialize()`` gives its struct of
    :mod:`ctxhealth.signals.state` and ``restore(state)`` (on a detector built with the same
    profile) reads one back.
    """

    _snap: Any = None

    def changed(self) -> None:
        self._snap = None

    def snapshot(self) -> Any:
        snap = self._snap
        if snap is None:
            snap = self._snap = self._take()
        return snap

    def _take(self) -> Any:
        raise NotImplementedError

    def render(self, snap: Any) -> tuple[Signal, ...]:
        raise NotImplementedError

    def signals(self) -> tuple[Signal, ...]:
        return self.render(self.snapshot())


class LazySignals(Mapping[str, Signal]):
    """A read-only ``name -> Signal`` mapping built from detector snapshots on first access.

    Built from ``(detector, snapshot)`` pairs, or from the detectors alone (:meth:`deferred`): then
    the snapshots are taken on first access or by :meth:`freeze`, which whoever changes the
    detectors must call first while this mapping is alive (the monitor does, through a weak
    reference), so a reading always shows the state at the time it was made.
    """

    __slots__ = ("__weakref__", "_built", "_detectors", "_parts")

    def __init__(
        self, parts: tuple[tuple[Detector, Any], ...] | None, detectors: tuple[Detector, ...] = ()
    ) -> None:
        self._parts = parts
        self._detectors = detectors
        self._built: dict[str, Signal] | None = None

    @classmethod
    def deferred(cls, detectors: tuple[Detector, ...]) -> LazySignals:
        """Readings of ``detectors`` as they are now, their snapshots taken when first needed."""
        return cls(None, detectors)

    def freeze(self) -> None:
        """Take the detectors' snapshots now (before they change), if not taken yet."""
        if self._parts is None:
            self._parts = tuple((d, d.snapshot()) for d in self._detectors)
            self._detectors = ()

    def _items(self) -> dict[str, Signal]:
        built = self._built
        if built is None:
            self.freeze()
            assert self._parts is not None
            built = {}
            for detector, snap in self._parts:
                for sig in detector.render(snap):
                    built[sig.name] = sig
            self._built = built
        return built

    def __getitem__(self, name: str) -> Signal:
        return self._items()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"LazySignals({self._items()!r})"


class BoundedDict(OrderedDict[K, V], Generic[K, V]):
    """A dict that forgets its least recently written keys beyond ``limit`` entries."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: K, value: V) -> None:
        if key in self:
            self.move_to_end(key)
        self[key] = value
        if len(self) > self.limit:
            self.popitem(last=False)


def stable_hash(text: str) -> int:
    """A 64-bit digest of ``text`` that is the same in every process (unlike ``hash``, which is
    salted per process), so keys kept in a monitor snapshot still match after a restore."""
    data = text.encode("utf-8", "surrogatepass")
    return (zlib.crc32(data) << 32) | zlib.adler32(data)


def spaced_hash_py(prefix: str, text: str) -> int:
    """:func:`stable_hash` of ``prefix`` followed by ``text`` whitespace-normalised
    (``" ".join(text.split())``): a shell call's key (the definition of the C kernel)."""
    return stable_hash(prefix + " ".join(text.split()))


spaced_hash: Callable[[str, str], int] = spaced_hash_py
""":func:`spaced_hash_py`, or the same in C without the split and joined copies (a long shell
command's key was ~10 µs of splitting and joining)."""


def pair_hash(first: str, second: str) -> int:
    """:func:`stable_hash` of an ordered pair of strings (length-prefixed, so it is unambiguous)."""
    return stable_hash(f"{len(first)}:{first}{second}")


def matches_at_anchors_py(
    match: Callable[[str, int], object | None], text: str, anchors: tuple[str, ...]
) -> bool:
    """Whether a pattern whose every match starts with one of ``anchors`` matches in ``text``,
    trying ``match`` (a compiled pattern's ``match``) only where an anchor occurs instead of at
    every position. ``match`` at a position sees the text before it (``\\b``, lookbehinds), as a
    search does, so the answer is ``pattern.search(text) is not None``."""
    find = text.find
    for anchor in anchors:
        at = find(anchor)
        while at >= 0:
            if match(text, at) is not None:
                return True
            at = find(anchor, at + 1)
    return False


def anchor_positions_py(text: str, anchors: tuple[str, ...]) -> list[int]:
    """The positions in ``text`` where one of ``anchors`` (non-empty ASCII) starts, ascending, each
    once: the definition of the C kernel :func:`matches_at_anchors` walks."""
    found: set[int] = set()
    for anchor in anchors:
        at = text.find(anchor)
        while at >= 0:
            found.add(at)
            at = text.find(anchor, at + 1)
    return sorted(found)


def _matches_at_anchors_native(
    match: Callable[[str, int], object | None], text: str, anchors: tuple[str, ...]
) -> bool:
    """:func:`matches_at_anchors_py` with the anchors found in one pass in C (one ``find`` per
    anchor costs a pass over the text each: 24 anchors over a long command were ~16 µs)."""
    return any(match(text, at) is not None for at in _anchor_positions(text, anchors))


matches_at_anchors: Callable[[Callable[[str, int], object | None], str, tuple[str, ...]], bool] = (
    matches_at_anchors_py
)
"""``pattern.search(text) is not None`` for a pattern whose matches start at ``anchors``:
:func:`matches_at_anchors_py`, or the same with the anchors found in C (:mod:`~ctxhealth.native`)."""
if KERNELS is not None:
    spaced_hash = KERNELS.spaced_hash
    _anchor_positions: Callable[[str, tuple[str, ...]], list[int]] = KERNELS.anchor_positions
    matches_at_anchors = _matches_at_anchors_native


def recent(evidence: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """The last :data:`EVIDENCE_LIMIT` indices, sorted and without duplicates."""
    return tuple(sorted(set(evidence)))[-EVIDENCE_LIMIT:]


def normalise_text(value: Any) -> str:
    """A canonical one-line form of a tool input, for "the same call" comparisons."""
    if isinstance(value, str):
        # long payloads (file bodies) are compared as they are: hashing them is cheap, re-spacing is not
        return " ".join(value.split()) if len(value) <= 1000 else value
    out: list[str] = []
    _normalised_parts(value, out)
    return "".join(out)


def _normalised_parts(value: Any, out: list[str]) -> None:
    """:func:`normalise_text` of ``value`` as pieces appended to ``out`` (joined, they are it)."""
    if isinstance(value, str):
        out.append(" ".join(value.split()) if len(value) <= 1000 else value)
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for k, v in sorted(value.items()):
            if not first:
                out.append(",")
            first = False
            out.append(f"{k}=")
            # a string value (the usual one) is spaced here, not in a call per value
            if type(v) is str:
                out.append(" ".join(v.split()) if len(v) <= 1000 else v)
            else:
                _normalised_parts(v, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _normalised_parts(v, out)
        out.append("]")
    else:
        out.append(str(value))


KEY_JOIN_LIMIT = 4096
"""A key text shorter than this is joined and hashed at once; a longer one (a file body) is hashed
piece by piece, without the joined copy."""


def key_hash_py(prefix: str, value: Any) -> int:
    """``stable_hash(prefix + normalise_text(value))``: a call's key. CRC-32 and Adler-32 run on
    over consecutive pieces, and UTF-8 of joined text is the pieces' UTF-8 joined, so a long input
    is hashed from its pieces (a 20K-character ``Write`` body is not copied twice first)."""
    out = [prefix]
    _normalised_parts(value, out)
    if sum(map(len, out)) < KEY_JOIN_LIMIT:
        return stable_hash("".join(out))
    crc = 0
    adler = 1
    for piece in out:
        data = piece.encode("utf-8", "surrogatepass")
        crc = zlib.crc32(data, crc)
        adler = zlib.adler32(data, adler)
    return (crc << 32) | adler


def _key_hash_native(prefix: str, value: Any) -> int:
    """:func:`key_hash_py` with the key text written as UTF-8 in one pass in C (no pieces, no
    joined copy, no sorted item tuples), hashed by zlib's CRC-32 and the kernel's Adler-32 (its
    value, summed in 32 lanes: a 25K-character ``Write`` body 8 -> 2.6 us); an input the kernel
    leaves to Python (another type than JSON's, a key that is not a str) takes :func:`key_hash_py`."""
    data = _key_text(prefix, value)
    if data is None:
        return key_hash_py(prefix, value)
    return (zlib.crc32(data) << 32) | _adler32(data)


key_hash: Callable[[str, Any], int] = key_hash_py
"""A call's key as the Monitor computes it: :func:`key_hash_py`, or its text written in C."""
if KERNELS is not None:
    _key_text: Callable[[str, Any], bytes | None] = KERNELS.key_text
    _adler32: Callable[[bytes], int] = KERNELS.adler32
    key_hash = _key_hash_native


class TurnWindow:
    """Occurrences (turn, message index) within the last ``size`` assistant turns.

    ``add`` and ``prune`` are amortised O(1); memory is bounded by ``limit`` entries.
    """

    __slots__ = ("_ev", "_items", "limit", "size", "total")

    def __init__(self, size: int, limit: int = 256) -> None:
        self.size = size
        self.limit = limit
        self._items: deque[tuple[int, int]] = deque()
        self.total = 0
        self._ev: tuple[int, ...] | None = ()

    def add(self, turn: int, index: int) -> None:
        self._items.append((turn, index))
        self.total += 1
        self._ev = None
        if len(self._items) > self.limit:
            self._items.popleft()

    def prune(self, turn: int) -> bool:
        """Drop occurrences older than the window; True when something was dropped."""
        items = self._items
        oldest = turn - self.size
        if not items or items[0][0] > oldest:
            return False
        while items and items[0][0] <= oldest:
            items.popleft()
        self._ev = None
        return True

    def clear(self) -> None:
        self._items.clear()
        self._ev = ()

    def __len__(self) -> int:
        return len(self._items)

    def evidence(self) -> tuple[int, ...]:
        """The most recent occurrences' message indices (cached until the window changes)."""
        ev = self._ev
        if ev is None:
            items = self._items
            n = len(items)
            ev = self._ev = tuple(dict.fromkeys(items[i][1] for i in range(max(0, n - EVIDENCE_LIMIT), n)))
        return ev
