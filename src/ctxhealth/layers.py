"""The layer order of the package, lowest first, declared once as data.

A *unit* is a top-level module (``errors``, ``monitor``) or a top-level subpackage with everything
under it (``signals``, ``integrations``); ``__init__`` is the package root, which re-exports the
public API lazily and so imports only the base modules. A unit may import units of lower layers
only: never one above it, never a peer in its own layer. Data flows up this list the way the
pipeline runs: sources, accounting, signals, risk scoring, the policy, the per-turn monitor, then
what acts on its decisions and what evaluates, reports on and drives it. ``tests/test_layers.py``
parses every module's imports and fails on any import against this order, and on any unit that is
not listed here (add a new subpackage where it belongs before importing from it).
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    # base: no dependencies beyond the standard library and each other, lowest first
    ("errors",),
    ("home",),  # where ctxhealth keeps its files by default: $CTXHEALTH_HOME or ~/.ctxhealth
    ("lazy",),
    ("native",),  # which text kernels run: the C extension or the Python definitions
    ("layers",),
    ("__init__",),
    ("atomic",),
    ("model",),
    ("failures",),  # what a failed tool call is: one definition for every counter
    ("redact",),  # redacts model messages block by block
    ("labels",),  # file-name-safe session labels (redacted)
    # the pipeline
    ("sources",),
    ("accounting",),
    ("config",),  # settings: reads the model registry's [models] tables, so above accounting
    ("signals",),
    ("risk",),  # the risk model and its scoring: a pure value, read by the policy's Profile
    ("policy",),
    ("monitor",),
    ("recovery",),
    ("state",),
    ("evaluation",),  # risk fitting and validation: drives the Monitor over labelled runs
    ("pack",),
    ("audit",),
    ("insights",),  # slip rate by fill band, composition, suggestions: reads accounting, signals, audit
    ("integrations",),
    ("analysis",),  # one session analysed once into typed records: check --series, report, fleet
    ("fleet",),
    ("report",),
    ("mcpserver",),  # the MCP server an agent asks about itself: check, checkpoint, state, recovery
    ("cli",),
)
"""Each entry is one layer: the units in it are peers and must not import each other."""
