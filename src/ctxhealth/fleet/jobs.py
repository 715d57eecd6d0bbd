"""The unit of fleet work: one batch of files in, each file's table rows (or why it was skipped) out.

:func:`analyse_batch` is what a process-pool worker or a Dask worker runs; it is a plain,
picklable function of plain data (:class:`JobOptions` holds the registry and the profile), so the
two engines run exactly the same code. A file no reader recognises, or one that cannot be read, is
skipped with its reason; it never stops the batch. A file holding several sessions (tau-bench
results, OpenHands ``output.jsonl``) gives a row set per session, each keyed ``<path>#<session id>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.analysis import SessionAnalysis, analyse_session
from ctxhealth.errors import InputError, UnknownFormatError
from ctxhealth.fleet.files import FileEntry
from ctxhealth.fleet.rows import Row, table_rows
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
    """One file's result: its rows per table when ``status == "ok"``, else the reason it was skipped."""

    entry: FileEntry
    status: str
    reason: str = ""
    rows: dict[str, list[Row]] = field(default_factory=dict)
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
        return FileOutcome(entry, "ok", "", table_rows(analysis, entry.path, entry.size), 1)
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
    rows: dict[str, list[Row]] = {}
    for number, session in enumerate(sessions):
        analysis = _analyse(session, options)
        key = entry.path if len(sessions) == 1 else session_key(entry.path, session.session_id or str(number))
        for name, rows_of_table in table_rows(analysis, key, len(raw)).items():
            rows.setdefault(name, []).extend(rows_of_table)
    return FileOutcome(entry, "ok", "", rows, len(sessions))


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


def analyse_batch(entries: Sequence[FileEntry], options: JobOptions) -> list[FileOutcome]:
    """:func:`analyse_file` for each entry, in order."""
    return [analyse_file(e, options) for e in entries]
