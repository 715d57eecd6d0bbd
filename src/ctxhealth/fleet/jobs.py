"""The unit of fleet work: one batch of files in, each file's outcome and the batch's rows of every
table (typed columns, :mod:`ctxhealth.fleet.columns`) out.

:func:`analyse_batch` is what a process-pool worker or a Dask worker runs; it is a plain,
picklable function of plain data (:class:`JobOptions` holds the registry and the profile), so the
two engines run exactly the same code; the rows are made into columns there, in the worker, so
what comes back is arrays and the process writing the store only joins them. A file no reader
recognises, or one that cannot be read, is skipped with its reason; it never stops the batch. A
file holding several sessions (tau-bench results, OpenHands ``output.jsonl``) gives a row set per
session, each keyed ``<path>#<session id>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.analysis import SessionAnalysis, analyse_session
from ctxhealth.errors import InputError, UnknownFormatError
from ctxhealth.fleet.columns import Columns, typed_columns
from ctxhealth.fleet.files import FileEntry
from ctxhealth.fleet.rows import Records, table_columns, table_records
from ctxhealth.fleet.schema import FILES, SCHEMA_VERSION, TABLES
from ctxhealth.model import Format, Session
from ctxhealth.policy.profile import Profile
from ctxhealth.sources.reader import (
    SESSION_SEPARATOR,
    read_call_folder,
    read_data_all,
    read_regular_file,
    skip_reason,
)


@dataclass(frozen=True, slots=True)
class JobOptions:
    """How every session is accounted and assessed (the same for all workers)."""

    registry: ModelRegistry
    profile: Profile
    model: str | None = None
    format: Format | None = None
    strict: bool = False
    health: bool = True
    """False: the accounting level (no per-turn assessment; see :func:`analyse_session`)."""


@dataclass(slots=True)
class FileOutcome:
    """One file's result: when ``status == "ok"``, each session's key and records per table (emptied
    once the batch's columns are made), else the reason it was skipped."""

    entry: FileEntry
    status: str
    reason: str = ""
    records: list[tuple[str, Records]] = field(default_factory=list)
    sessions: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def analyse_file(entry: FileEntry, options: JobOptions) -> FileOutcome:
    """Read, account and assess one file; a file that is not a transcript is skipped with its reason."""
    if entry.members:
        try:
            session = read_call_folder(entry.members, strict=options.strict)
        except InputError as exc:
            return FileOutcome(entry, "skipped", exc.render())
        except OSError as exc:
            return FileOutcome(entry, "skipped", f"cannot read file ({exc.strerror or exc})")
        analysis = _analyse(session, options)
        return FileOutcome(
            entry, "ok", "", [(entry.path, table_records(analysis, entry.path, entry.size))], 1
        )
    try:
        raw = read_regular_file(entry.path)
    except InputError as exc:
        return FileOutcome(entry, "skipped", exc.render())
    if not raw or raw.isspace():  # as ``not raw.strip()``, without copying the file
        return FileOutcome(entry, "skipped", "empty file")
    try:
        sessions = read_data_all(raw, entry.path, format=options.format, strict=options.strict)
    except UnknownFormatError as exc:
        return FileOutcome(entry, "skipped", skip_reason(exc))
    except InputError as exc:
        return FileOutcome(entry, "skipped", exc.render())
    records: list[tuple[str, Records]] = []
    for number, session in enumerate(sessions):
        analysis = _analyse(session, options)
        key = entry.path if len(sessions) == 1 else session_key(entry.path, session.session_id or str(number))
        records.append((key, table_records(analysis, key, len(raw))))
    return FileOutcome(entry, "ok", "", records, len(sessions))


def _analyse(session: Session, options: JobOptions) -> SessionAnalysis:
    """One session's analysis as the run's options ask for it (no timeline events: fleet writes none)."""
    return analyse_session(
        session,
        registry=options.registry,
        profile=options.profile,
        model=options.model,
        events=False,
        health=options.health,
    )


def session_key(path: str, session_id: str) -> str:
    """The key of one session of a file holding several (tau-bench results, OpenHands ``output.jsonl``)."""
    return f"{path}{SESSION_SEPARATOR}{session_id}"


@dataclass(slots=True)
class Batch:
    """A batch's result: each file's outcome (its ``records`` emptied) and the rows of every table,
    the ``files`` table's included, as typed columns (a table without rows is absent)."""

    outcomes: list[FileOutcome]
    columns: dict[str, Columns]


def batch_of(outcomes: list[FileOutcome]) -> Batch:
    """``outcomes`` as a :class:`Batch`: their records made columns per table (each outcome's
    records are dropped: they travel once, as the columns)."""
    sessions = [part for o in outcomes for part in o.records]
    columns: dict[str, Columns] = {}
    for table in TABLES:
        if table is FILES:
            continue
        parts = [(key, records[table.name]) for key, records in sessions if records[table.name]]
        if parts:
            columns[table.name] = table_columns(table.name, parts)
    for o in outcomes:
        o.records = []
    files = [
        (o.entry.path, o.entry.size, o.entry.mtime_ns, o.status, o.reason, SCHEMA_VERSION) for o in outcomes
    ]
    if files:
        columns[FILES.name] = typed_columns(FILES, files)
    return Batch(outcomes, columns)


def analyse_batch(entries: Sequence[FileEntry], options: JobOptions) -> Batch:
    """:func:`analyse_file` for each entry, in order, as one :class:`Batch`."""
    return batch_of([analyse_file(e, options) for e in entries])
