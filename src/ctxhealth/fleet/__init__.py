"""Fleet analysis: every session's assessment and per-turn rows into DuckDB or Parquet tables.

``run_fleet(paths, out, options)`` finds the transcripts, analyses the new and changed ones on a
local process pool or a Dask cluster and writes the tables documented in
:mod:`ctxhealth.fleet.schema`. Each session is analysed by :func:`ctxhealth.analysis.analyse_session`
(the one pass that ``check --json --series`` and the HTML report share too), whose typed records
:mod:`ctxhealth.fleet.rows` maps to columns by name; a worker sends them back as typed arrays
(:mod:`ctxhealth.fleet.columns`).
"""

from __future__ import annotations

from ctxhealth.fleet.jobs import FileOutcome, JobOptions
from ctxhealth.fleet.run import ENGINES, FleetResult, run_fleet
from ctxhealth.fleet.schema import SCHEMA_VERSION, TABLES

__all__ = [
    "ENGINES",
    "SCHEMA_VERSION",
    "TABLES",
    "FileOutcome",
    "FleetResult",
    "JobOptions",
    "run_fleet",
]
