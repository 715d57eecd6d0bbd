"""Windows and prices of models, from a maintained offline package: pydantic's ``genai-prices``.

What a model's window is and what its tokens cost change every month, so ctxhealth keeps no table of
them: they come from the installed ``genai-prices`` package (a snapshot of provider prices and
``context_window`` values, updated with each release). Our own table (:mod:`.registry`) keeps only
what such a package does not know: the quality tier, the output a harness reserves and the
auto-compact buffer.

Importing ``genai-prices`` costs a few hundred milliseconds (pydantic), too much for a hook. So the
package's data is turned, once per installed version, into a compact JSON table (:class:`Catalog`:
each provider's and model's match rules, window and current list prices) kept under the ctxhealth
home (``$CTXHEALTH_HOME/cache/models/``, written atomically); later processes read that file, which
costs about a millisecond. The file's name holds the package version and its data file's size and
modification time, so an upgrade derives a new one. When the directory cannot be written the table
is derived in memory (the slow path, once per process); when the package is not installed the
catalog is empty and every window and price falls back to our family table or stays unknown.

Matching follows the package: the first provider whose rule matches the id, then the first of its
models whose rule matches (and the provider's fallback providers). Prices are the model's current
list prices: the newest dated price list (a price that starts at a date the package already lists
is taken as in force), standard tier, no batch or priority variants; a tiered price (every token of a
request above N prompt tokens at another rate) becomes :attr:`Prices.long_context`. A cache write
the package does not price costs the input price, a cache read it does not price costs the input
price (no discount is assumed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxhealth import lazy

if TYPE_CHECKING:
    from ctxhealth.accounting.types import CatalogModel, Prices

# The value types are imported where a model is looked up: the hooks import this module only to
# point its cache at their home (``configure_cache_dir``) and must not pay for msgspec then.

__all__ = [
    "PACKAGE",
    "Catalog",
    "configure_cache_dir",
    "default_catalog",
    "derive_catalog",
    "load_catalog",
    "package_version",
]

PACKAGE = "genai-prices"
_MODULE = "genai_prices"
_SCHEMA = 1

Clause = dict[str, Any]


def _matches(clause: Clause | None, text: str) -> bool:
    if not clause:
        return False
    kind, arg = next(iter(clause.items()))
    if kind == "eq":
        return bool(text == arg)
    if kind == "sw":
        return text.startswith(arg)
    if kind == "ew":
        return text.endswith(arg)
    if kind == "in":
        return arg in text
    if kind == "re":  # compiled only for a text holding the pattern's literals
        return lazy.search(arg, text) is not None
    if kind == "or":
        return any(_matches(c, text) for c in arg)
    if kind == "and":
        return all(_matches(c, text) for c in arg)
    return False


def _prices_from(data: Any) -> Prices | None:
    from ctxhealth.accounting.types import Prices

    if not isinstance(data, dict):
        return None
    long = _prices_from(data.get("long"))
    return Prices(
        input=float(data["input"]),
        output=float(data["output"]),
        cache_write=float(data["cache_write"]),
        cache_read=float(data["cache_read"]),
        cache_write_1h=None if data.get("cache_write_1h") is None else float(data["cache_write_1h"]),
        long_context_above=data.get("long_above") if long is not None else None,
        long_context=long,
    )


class Catalog:
    """The package's models by provider, matched the way the package matches them."""

    __slots__ = ("_cache", "_providers", "origin", "version")

    def __init__(self, table: dict[str, Any], origin: str = "") -> None:
        self.version: str | None = table.get("version")
        self.origin = origin
        self._providers: list[dict[str, Any]] = list(table.get("providers") or [])
        self._cache: dict[str, CatalogModel | None] = {}

    @property
    def source(self) -> str:
        """``genai-prices 0.2.3`` (or ``""`` for an empty catalog)."""
        return f"{PACKAGE} {self.version}" if self.version else ""

    def __len__(self) -> int:
        return sum(len(p.get("models") or ()) for p in self._providers)

    def find(self, key: str) -> CatalogModel | None:
        """The package's model for a normalised id (lower case, provider prefixes removed), or None."""
        if key in self._cache:
            return self._cache[key]
        found = None
        for provider in self._providers:
            if _matches(provider.get("match"), key):
                found = self._in_provider(provider, key, fallback=True)
                break
        if len(self._cache) > 512:
            self._cache.clear()
        self._cache[key] = found
        return found

    def _in_provider(self, provider: dict[str, Any], key: str, *, fallback: bool) -> CatalogModel | None:
        from ctxhealth.accounting.types import CatalogModel

        for model in provider.get("models") or ():
            if _matches(model.get("match"), key):
                return CatalogModel(
                    id=str(model["id"]),
                    provider=str(provider["id"]),
                    window=model.get("window"),
                    prices=_prices_from(model.get("prices")),
                )
        if fallback:
            for other_id in provider.get("fallback") or ():
                other = next((p for p in self._providers if p.get("id") == other_id), None)
                if other is not None and (hit := self._in_provider(other, key, fallback=False)):
                    return hit
        return None


# ---------------------------------------------------------------------------- deriving the table


def _clause(logic: Any) -> Clause | None:
    """The package's match logic as a small JSON tree (``{"sw": "claude-opus-4-6"}``, ``{"or": [...]}``)."""
    if logic is None:
        return None
    for attr, kind in (("equals", "eq"), ("starts_with", "sw"), ("ends_with", "ew"), ("contains", "in")):
        value = getattr(logic, attr, None)
        if isinstance(value, str):
            return {kind: value.lower()}
    regex = getattr(logic, "regex", None)
    if isinstance(regex, str):
        return {"re": regex}
    for attr, kind in (("or_", "or"), ("and_", "and")):
        parts = getattr(logic, attr, None)
        if isinstance(parts, list):
            return {kind: [c for c in (_clause(p) for p in parts) if c is not None]}
    return None


def _base_and_tier(price: Any) -> tuple[float | None, tuple[int, float] | None]:
    """A flat price, or a tiered one as its base and its first tier (start, price)."""
    if price is None:
        return None, None
    tiers = getattr(price, "tiers", None)
    if tiers is not None:
        base = float(price.base)
        first = tiers[0] if tiers else None
        return base, (int(first.start), float(first.price)) if first is not None else None
    return float(price), None


def _current(prices: Any) -> Any:
    """The newest list price: the last entry that holds always or from a start date."""
    if not isinstance(prices, list):
        return prices
    current = prices[0].prices if prices else None
    for conditional in prices:
        constraint = conditional.constraint
        if constraint is None or hasattr(constraint, "start_date"):
            current = conditional.prices
    return current


def _price_table(model_price: Any) -> dict[str, Any] | None:
    if model_price is None:
        return None
    fields = {
        "input": "input_mtok",
        "output": "output_mtok",
        "cache_write": "cache_write_mtok",
        "cache_read": "cache_read_mtok",
        "cache_write_1h": "cache_write_1h_mtok",
    }
    base: dict[str, float | None] = {}
    long: dict[str, float | None] = {}
    above: int | None = None
    for ours, theirs in fields.items():
        value, tier = _base_and_tier(getattr(model_price, theirs, None))
        base[ours] = value
        if tier is not None:
            above = tier[0] if above is None else min(above, tier[0])
            long[ours] = tier[1]
        else:
            long[ours] = value
    if base["input"] is None or base["output"] is None:
        return None
    out = _complete(base)
    if above is not None:
        out["long_above"] = above
        out["long"] = _complete(long)
    return out


def _complete(prices: dict[str, float | None]) -> dict[str, Any]:
    inp = prices["input"]
    return {
        "input": inp,
        "output": prices["output"],
        "cache_write": inp if prices["cache_write"] is None else prices["cache_write"],
        "cache_read": inp if prices["cache_read"] is None else prices["cache_read"],
        "cache_write_1h": prices["cache_write_1h"],
    }


def derive_catalog() -> dict[str, Any]:
    """The compact table from the installed package (imports it: slow). Raises ImportError without it."""
    from genai_prices import __version__ as version
    from genai_prices.data import providers

    by_id = {p.id: p for p in providers}
    wanted = {p.id for p in providers if p.model_match is not None}
    for p in providers:
        if p.id in wanted:
            wanted.update(p.fallback_model_providers or ())
    out = []
    for provider in providers:
        if provider.id not in wanted:
            continue
        models = []
        for model in provider.models:
            match = _clause(model.match)
            if match is None:
                continue
            models.append(
                {
                    "id": model.id,
                    "match": match,
                    "window": model.context_window,
                    "prices": _price_table(_current(model.prices)),
                }
            )
        out.append(
            {
                "id": provider.id,
                "match": _clause(provider.model_match),
                "fallback": [f for f in (provider.fallback_model_providers or ()) if f in by_id],
                "models": models,
            }
        )
    return {"schema": _SCHEMA, "package": PACKAGE, "version": str(version), "providers": out}


# ---------------------------------------------------------------------------- the cached table


def _package_files() -> tuple[Path, str] | None:
    """The package's data file and a key naming this installed version, without importing it."""
    from importlib.util import find_spec

    try:
        spec = find_spec(_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    data = folder / "data.py"
    try:
        st = data.stat()
    except OSError:
        return None
    version = package_version(folder.parent) or "unknown"
    return data, f"{version}-{st.st_size}-{st.st_mtime_ns}"


def package_version(site: Path | None = None) -> str | None:
    """The installed package's version, read from its ``.dist-info`` folder name (no import)."""
    if site is None:
        found = _package_files()
        return found[1].split("-", 1)[0] if found else None
    try:
        names = os.listdir(site)
    except OSError:
        return None
    prefix = _MODULE + "-"
    for name in names:
        if name.startswith(prefix) and name.endswith(".dist-info"):
            return name[len(prefix) : -len(".dist-info")]
    return None


def _parse(data: bytes) -> Any:
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; json is the fallback
        return json.loads(data)
    return orjson.loads(data)


def load_catalog(cache_dir: Path | None) -> Catalog:
    """The catalog of the installed package: from ``cache_dir`` when derived before, else derived now
    (and saved there when it can be); empty when the package is not installed or cannot be read."""
    found = _package_files()
    if found is None:
        return Catalog({}, "not installed")
    _, key = found
    path = cache_dir / f"{_MODULE}-{key}.json" if cache_dir is not None else None
    if path is not None:
        try:
            table = _parse(path.read_bytes())
            if isinstance(table, dict) and table.get("schema") == _SCHEMA:
                return Catalog(table, str(path))
        except (OSError, ValueError):  # orjson.JSONDecodeError is a ValueError
            pass
    table = _derived.get(key)
    if table is None:
        try:
            table = _derived[key] = derive_catalog()
        except (ImportError, AttributeError, TypeError, ValueError, LookupError):
            # a broken or incompatible package: no package knowledge, never a crash
            return Catalog({}, "unreadable")
    if path is not None:
        try:
            from ctxhealth.atomic import make_private_dirs, write_atomic

            make_private_dirs(path.parent)
            write_atomic(path, json.dumps(table, separators=(",", ":")))
        except OSError:
            return Catalog(table, "derived in memory (cache not writable)")
        return Catalog(table, str(path))
    return Catalog(table, "derived in memory")


_cache_dir: Path | None = None
"""Where the derived table is kept (None: derived in memory), once :func:`configure_cache_dir` named a
place; until then (``_configured`` false) the default home's (:func:`ctxhealth.home.default_home`)."""
_configured = False
_default: Catalog | None = None
_derived: dict[str, dict[str, Any]] = {}
"""Tables derived in this process, by package key: derived once even when the cache moves."""


def configure_cache_dir(home: str | Path | None) -> None:
    """Keep the derived table under ``home``/cache/models (the hooks and the helper call this with
    their home; a process that never calls it keeps it under the default home, as the CLI does);
    None derives it in memory. Drops a catalog loaded from another place."""
    global _cache_dir, _configured, _default
    new = Path(home) / "cache" / "models" if home else None
    if new != _cache_dir or not _configured:
        _cache_dir, _configured = new, True
        _default = None


def set_default_catalog(catalog: Catalog) -> None:
    """Make ``catalog`` this process's (a fleet worker gets its parent's, instead of deriving the
    table again from the package: seconds of CPU per process)."""
    global _default
    _default = catalog


def default_catalog() -> Catalog:
    """The process's catalog, loaded on first use."""
    global _default
    if _default is None:
        where = _cache_dir
        if not _configured:
            from ctxhealth.home import default_home

            where = Path(default_home()) / "cache" / "models"
        _default = load_catalog(where)
    return _default
