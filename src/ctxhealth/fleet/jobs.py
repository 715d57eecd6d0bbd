"""The unit of fleet work: one batch of files in, each file's table rows (or why it was skipped) out.

:func:`analyse_batch` is what a process-pool worker or a Dask worker runs; it is a plain,
picklable function of plain data (:class:`JobOptions` holds the registry and the profile), so the
two engines run exactly the same code. A file no reader recognises, or one that cannot be read, is
skipped with its reason; it never stops the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.errors import InputError, UnknownFormatError
from ctxhealth.fleet.analysis import Row, analyse_session
from ctxhealth.fleet.files import FileEntry
from ctxhealth.model import Format
from ctxhealth.policy.profile import Profile
from ctxhealth.sources.reader import read_data


@dataclass(frozen=True, slots=True)
class JobOptions:
    """How every session is accounted and assessed (the same for all workers)."""

    registry: ModelRegistry
    profile: Profile
    model: str | None = None
    format: Format | None = None
    strict: bool = False


@dataclass(slots=True)
class FileOutcome:
    """One file's result: its rows per table when ``status == "ok"``, else the reason it was skipped."""

    entry: FileEntry
    status: str
    reason: str = ""
    rows: dict[str, list[Row]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def analyse_file(entry: FileEntry, options: JobOptions) -> FileOutcome:
    """Read, account and assess one file; a file that is not a transcript is skipped with its reason."""
    try:
        with open(entry.path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        return FileOutcome(entry, "skipped", f"cannot read file ({exc.strerror or exc})")
    if not raw.strip():
        return FileOutcome(entry, "skipped", "empty file")
    try:
        session = read_data(raw, entry.path, format=options.format, strict=options.strict)
    except UnknownFormatError:
        return FileOutcome(entry, "skipped", "not a transcript (no reader recognises the content)")
    except InputError as exc:
        return FileOutcome(entry, "skipped", exc.render())
    analysis = analyse_session(
        session, registry=options.registry, profile=options.profile, model=options.model, events=False
    )
    return FileOutcome(entry, "ok", "", analysis.table_rows(entry.path, len(raw)))


def analyse_batch(entries: Sequence[FileEntry], options: JobOptions) -> list[FileOutcome]:
    """:func:`analyse_file` for each entry, in order."""
    return [analyse_file(e, options) for e in entries]
