"""The fleet tables: every column's name, type and meaning, declared once, and ``SCHEMA_VERSION``.

The DuckDB DDL, the Arrow / Parquet schemas and the reference page (``docs/fleet.md``) all come
from :data:`TABLES`. A session is keyed by ``path`` (the transcript file, absolute), which every
table carries, so an incremental run can replace one file's rows in every table at once.

Types are DuckDB type names; :func:`arrow_schema` maps them to Arrow types (pyarrow is imported
there, lazily). Bump :data:`SCHEMA_VERSION` whenever a column changes meaning, type or disappears;
a store written with another version is refused with a clear error (rebuild it, or write elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = 2
"""Version of the fleet tables; stored in the ``meta`` table / ``meta.json``."""


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    doc: str


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _c(name: str, type_: str, doc: str) -> Column:
    return Column(name, type_, doc)


_PATH = _c(
    "path",
    "VARCHAR",
    "the transcript file (absolute path), + `#<session id>` when the file holds several sessions: "
    "the session's key in every table",
)

SESSIONS = Table(
    "sessions",
    "One row per session (transcript file): its check verdict, final assessment and totals.",
    (
        _PATH,
        _c("session_id", "VARCHAR", "the log's own session id, when it has one"),
        _c("format", "VARCHAR", "transcript format (claude-code, codex, mini-swe-agent, ...)"),
        _c("project", "VARCHAR", "the folder the transcript is in (Claude Code: the project folder)"),
        _c("model", "VARCHAR", "model id used for accounting"),
        _c("tier", "VARCHAR", "quality tier of the model (full / compact / local)"),
        _c("started_at", "TIMESTAMPTZ", "timestamp of the first message that has one (UTC)"),
        _c("ended_at", "TIMESTAMPTZ", "timestamp of the last message that has one (UTC)"),
        _c("week", "DATE", "Monday of the ISO week of started_at"),
        _c("turns", "INTEGER", "model responses in the main thread (check's turns)"),
        _c("window", "INTEGER", "context window in tokens"),
        _c("usable_window", "INTEGER", "window minus reserved output and auto-compact buffer"),
        _c("fill_current", "INTEGER", "fill at the last turn (tokens)"),
        _c("fill_peak", "INTEGER", "largest fill of any turn (tokens)"),
        _c("peak_pct", "DOUBLE", "fill_peak as a percentage of window"),
        _c(
            "fill_source",
            "VARCHAR",
            "least trustworthy fill source among the turns (reported/exact/estimated)",
        ),
        _c("compactions", "INTEGER", "compactions the agent made"),
        _c("tool_calls", "INTEGER", "tool calls, sub-agents included (check's tool_calls)"),
        _c("tool_errors", "INTEGER", "failed tool results, sub-agents included (check's tool_errors)"),
        _c("cost_usd", "DOUBLE", "cost at list prices; NULL when there is no usage or no prices"),
        _c(
            "cache_hit_rate",
            "DOUBLE",
            "cache-read over prompt tokens of every response (the audit's hit_rate); NULL without usage",
        ),
        _c("zone", "VARCHAR", "final zone"),
        _c("pressure", "DOUBLE", "final pressure (0..1+)"),
        _c("max_pressure", "DOUBLE", "largest pressure at any turn"),
        _c("risk", "DOUBLE", "final risk score (0..1), NULL without a risk model"),
        _c("action", "VARCHAR", "the policy's final decision"),
        _c("rule", "VARCHAR", "the policy rule that decided it"),
        _c("reasons", "VARCHAR", "the final decision's reasons, one per line"),
        _c("healthy", "BOOLEAN", "check's verdict (false when the final decision intervenes on the context)"),
        _c("first_unhealthy_turn", "INTEGER", "first turn whose decision was unhealthy; NULL when none"),
        _c("first_unhealthy_at", "TIMESTAMPTZ", "timestamp of that turn, when the log has one"),
        _c(
            "waste_tokens",
            "BIGINT",
            "prompt tokens sent from the first unhealthy turn on (sum of their fill)",
        ),
        _c("prompt_tokens", "BIGINT", "prompt tokens sent over all turns (sum of fill)"),
        _c("sidechains", "INTEGER", "sub-agent threads"),
        _c("warnings", "INTEGER", "reader warnings (lines stepped over)"),
        _c("file_bytes", "BIGINT", "size of the transcript file"),
    ),
)

TURNS = Table(
    "turns",
    "One row per model response of the main thread (check's turns; check --json --series).",
    (
        _PATH,
        _c("turn", "INTEGER", "0-based turn"),
        _c("message_index", "INTEGER", "position of the response in the main thread"),
        _c("timestamp", "TIMESTAMPTZ", "the response's timestamp, when the log has one"),
        _c("fill", "INTEGER", "prompt tokens of this response"),
        _c("fill_source", "VARCHAR", "reported / exact / estimated"),
        _c("output_tokens", "INTEGER", "output tokens reported for the response (0 when unknown)"),
        _c("cache_read_tokens", "INTEGER", "prompt tokens read from the cache (0 when unknown)"),
        _c("cache_write_tokens", "INTEGER", "prompt tokens written to the cache (0 when unknown)"),
        _c("pressure", "DOUBLE", "pressure after this response"),
        _c("zone", "VARCHAR", "zone after this response (early-warning raise included)"),
        _c("base_zone", "VARCHAR", "zone before the early-warning raise"),
        _c("risk", "DOUBLE", "risk score after this response"),
        _c("action", "VARCHAR", "the policy's decision after this response"),
        _c("rule", "VARCHAR", "the rule that decided it"),
        _c("drift", "DOUBLE", "instruction-word overlap of the recent output (1 on topic, lower = drift)"),
        _c("indicators", "INTEGER", "early-warning indicators firing"),
    ),
)

DECISIONS = Table(
    "decisions",
    "One row per turn whose decision is not `continue` (a subset of turns), with its reasons.",
    (
        _PATH,
        _c("turn", "INTEGER", "0-based turn"),
        _c("message_index", "INTEGER", "position of the response in the main thread"),
        _c("timestamp", "TIMESTAMPTZ", "the response's timestamp, when the log has one"),
        _c(
            "action",
            "VARCHAR",
            "warn / reanchor / clear_tool_results / compress_history / truncate / restart / halt",
        ),
        _c("rule", "VARCHAR", "the policy rule"),
        _c("healthy", "BOOLEAN", "false when the action intervenes on the context"),
        _c("reasons", "VARCHAR", "reasons, one per line"),
    ),
)

TOOL_CALLS = Table(
    "tool_calls",
    "One row per tool call (each call id once; sub-agents included, as check counts them).",
    (
        _PATH,
        _c("thread", "INTEGER", "0 for the main thread, 1.. for sub-agent threads"),
        _c("message_index", "INTEGER", "position of the calling message in its thread"),
        _c("turn", "INTEGER", "0-based main-thread turn of the call; NULL in sub-agent threads"),
        _c("call_id", "VARCHAR", "the tool call id ('' when the log has none)"),
        _c("tool", "VARCHAR", "tool name"),
        _c("failed", "BOOLEAN", "the result was an error or a non-zero exit; NULL when no result was seen"),
        _c("input_chars", "INTEGER", "characters of the call's input as JSON text (as the fill counts it)"),
        _c("result_chars", "INTEGER", "size of the result text (0 when no result)"),
    ),
)

CACHE_BREAKS = Table(
    "cache_breaks",
    "Prompt-cache breaks as `ctxhealth audit` lists them: a response whose cached prefix shrank, "
    "with its likely cause and what it cost (compactions and clears included: they are meant).",
    (
        _PATH,
        _c("thread", "INTEGER", "0 for the main thread, 1.. for sub-agent threads"),
        _c("turn", "INTEGER", "0-based main-thread turn of the response; NULL in sub-agent threads"),
        _c("message_index", "INTEGER", "position of the response in its thread"),
        _c("line", "INTEGER", "line of the response in the transcript, when the reader knows it"),
        _c("response_id", "VARCHAR", "the response id, when the log has one"),
        _c(
            "cause",
            "VARCHAR",
            "compaction / clear / model-switch / idle / system-change / lookback / prefix-change / unknown",
        ),
        _c("detail", "VARCHAR", "the evidence for the cause"),
        _c("cached_before", "INTEGER", "cache-read tokens of the thread's previous response"),
        _c("cached_after", "INTEGER", "cache-read tokens of this response"),
        _c("tokens_rewritten", "INTEGER", "prompt tokens of the lost prefix (sent again uncached)"),
        _c("cost_usd", "DOUBLE", "extra cost of the break at list prices; NULL without prices"),
    ),
)

RESPONSES = Table(
    "responses",
    "One row per model response with usage (every thread, each response id once in a session), "
    "priced as `ctxhealth audit` prices it.",
    (
        _PATH,
        _c("thread", "INTEGER", "0 for the main thread, 1.. for sub-agent threads"),
        _c("message_index", "INTEGER", "position of the response in its thread"),
        _c("line", "INTEGER", "line of the response in the transcript, when the reader knows it"),
        _c("response_id", "VARCHAR", "the response id (a resumed session repeats earlier ones)"),
        _c("timestamp", "TIMESTAMPTZ", "the response's timestamp, when the log has one"),
        _c("model", "VARCHAR", "model the response is priced as"),
        _c("input_tokens", "BIGINT", "uncached input tokens"),
        _c("cache_write_tokens", "BIGINT", "prompt tokens written to the cache"),
        _c("cache_read_tokens", "BIGINT", "prompt tokens read from the cache"),
        _c("output_tokens", "BIGINT", "output tokens"),
        _c("cost_usd", "DOUBLE", "cost at the model's list prices; NULL when its prices are unknown"),
    ),
)

COSTS = Table(
    "costs",
    "Usage and cost per session and model (each response once, sub-agents included).",
    (
        _PATH,
        _c("model", "VARCHAR", "model that produced the responses"),
        _c("project", "VARCHAR", "as in sessions"),
        _c("week", "DATE", "as in sessions"),
        _c("responses", "INTEGER", "responses with usage (the session's rows in `responses` for this model)"),
        _c("input_tokens", "BIGINT", "uncached input tokens"),
        _c("cache_write_tokens", "BIGINT", "prompt tokens written to the cache"),
        _c("cache_read_tokens", "BIGINT", "prompt tokens read from the cache"),
        _c("output_tokens", "BIGINT", "output tokens"),
        _c("cost_usd", "DOUBLE", "cost at the model's list prices; NULL when its prices are unknown"),
    ),
)

FILES = Table(
    "files",
    "Every file a run looked at, with the fingerprint that makes the next run incremental.",
    (
        _c("path", "VARCHAR", "the file (absolute path)"),
        _c("size", "BIGINT", "bytes (the transcript plus its sub-agent files)"),
        _c("mtime_ns", "BIGINT", "latest modification time (ns) of the transcript and its sub-agent files"),
        _c("status", "VARCHAR", "'ok' (rows written) or 'skipped'"),
        _c("reason", "VARCHAR", "why it was skipped ('' when ok)"),
        _c("schema_version", "INTEGER", "schema of the rows written for it"),
    ),
)

TABLES: tuple[Table, ...] = (SESSIONS, TURNS, DECISIONS, TOOL_CALLS, CACHE_BREAKS, RESPONSES, COSTS, FILES)
"""Every fleet table, in the order they are written."""

BY_NAME = {t.name: t for t in TABLES}

_ARROW_TYPES = {
    "VARCHAR": "string",
    "INTEGER": "int32",
    "BIGINT": "int64",
    "DOUBLE": "float64",
    "BOOLEAN": "bool_",
    "DATE": "date32",
}


def duckdb_ddl(table: Table) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``table``."""
    cols = ", ".join(f'"{c.name}" {c.type}' for c in table.columns)
    return f'CREATE TABLE IF NOT EXISTS "{table.name}" ({cols})'


def arrow_schema(table: Table) -> Any:
    """The ``pyarrow.Schema`` of ``table`` (pyarrow imported here)."""
    import pyarrow as pa

    fields = []
    for c in table.columns:
        if c.type == "TIMESTAMPTZ":
            arrow_type = pa.timestamp("us", tz="UTC")
        else:
            arrow_type = getattr(pa, _ARROW_TYPES[c.type])()
        fields.append(pa.field(c.name, arrow_type))
    return pa.schema(fields)


def reference_markdown() -> str:
    """The tables as markdown (the schema section of ``docs/fleet.md`` is this text)."""
    out = [f"Schema version {SCHEMA_VERSION}.", ""]
    for t in TABLES:
        out += [f"### `{t.name}`", "", t.doc, "", "| column | type | meaning |", "| --- | --- | --- |"]
        out += [f"| `{c.name}` | {c.type} | {c.doc} |" for c in t.columns]
        out.append("")
    return "\n".join(out)
