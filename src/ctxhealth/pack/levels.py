"""The text levels: L1 rules and L2 specs (files), L4 error output and L5 history (blocks of text).

:func:`fit_text_levels` renders all four within their caps; L5 keeps the latest paragraphs of the
compressed history that fit.

Rules are the files given with ``--rules`` plus the instruction files found at the repository root
(:data:`RULE_FILES`); specs are the files given with ``--specs``. A level over its cap keeps its
pieces in order and cuts the first one that does not fit at a line boundary (form ``trimmed``);
the pieces after it are left out. Everything here depends only on the level's own input and cap,
which is what keeps the rules and specs prefix byte-stable.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ctxhealth.errors import InputError
from ctxhealth.pack.budget import Allocation, TaskType
from ctxhealth.pack.errors_output import fit_error_output
from ctxhealth.pack.render import OutputFormat, PackedPiece, render_level, render_piece

if TYPE_CHECKING:  # the history code (and the transcript model) loads only for a history
    from ctxhealth.pack.history import History

RULE_FILES = ("CLAUDE.md", "AGENTS.md", ".claude/CLAUDE.md")
TRIM_MARKER = "[... trimmed to fit the level's budget ...]"

TokenCounter = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class LevelFile:
    """A rules or specs file: the label shown in the payload (repository-relative when inside) and text."""

    label: str
    text: str


@dataclass(frozen=True, slots=True)
class FittedLevel:
    """A level's rendered section, the pieces it holds and those it had to leave out."""

    section: str
    pieces: tuple[PackedPiece, ...]
    left_out: tuple[str, ...]


def label_for(repo: Path, path: Path) -> str:
    """``path`` relative to ``repo`` (POSIX) when inside it, else as given."""
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return str(path)


def read_level_files(repo: Path, paths: Sequence[Path | str], what: str) -> list[LevelFile]:
    """Read the ``--rules`` / ``--specs`` files; a missing or binary one is an input error."""
    out: list[LevelFile] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_absolute() and not path.exists() and (repo / path).exists():
            path = repo / path
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(
                f"cannot read the {what} file: {exc.strerror or exc}",
                path=str(raw),
                hint=f"check the --{what} path",
            ) from exc
        if b"\x00" in data[:8192]:
            raise InputError(
                f"the {what} file is binary", path=str(raw), hint=f"give a text file to --{what}"
            )
        out.append(LevelFile(label_for(repo, path), data.decode("utf-8", "replace")))
    return out


def discover_rules(repo: Path, given: Sequence[LevelFile]) -> list[LevelFile]:
    """Instruction files at the repository root that were not given explicitly."""
    labels = {f.label for f in given}
    found: list[LevelFile] = []
    for name in RULE_FILES:
        path = repo / name
        if name not in labels and path.is_file() and os.access(path, os.R_OK):
            found.append(LevelFile(name, path.read_bytes().decode("utf-8", "replace")))
    return found


def _trim_lines(text: str, fits: Callable[[str], bool]) -> str | None:
    """The longest line prefix of ``text`` (plus the trim marker) for which ``fits`` holds."""
    lines = text.splitlines()
    lo, hi, best = 0, len(lines), None
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = "\n".join([*lines[:mid], TRIM_MARKER])
        if fits(candidate):
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best


def fit_pieces(
    level: str, pieces: Sequence[PackedPiece], cap: int, fmt: OutputFormat, count: TokenCounter
) -> FittedLevel:
    """Render ``pieces`` as ``level`` within ``cap`` tokens (see the module docstring)."""
    kept: list[PackedPiece] = []
    left_out: list[str] = []

    def section(items: list[PackedPiece]) -> str:
        return render_level(level, [render_piece(p, fmt) for p in items], fmt)

    for i, piece in enumerate(pieces):
        if count(section([*kept, piece])) <= cap:
            kept.append(piece)
            continue

        def fits(text: str, piece: PackedPiece = piece) -> bool:
            return count(section([*kept, PackedPiece(piece.path, "trimmed", text)])) <= cap

        trimmed = _trim_lines(piece.text, fits)
        if trimmed is not None:
            kept.append(PackedPiece(piece.path, "trimmed", trimmed))
        else:
            left_out.append(piece.path or level)
        left_out.extend(p.path or level for p in pieces[i + 1 :])
        break
    return FittedLevel(section(kept), tuple(kept), tuple(left_out))


def fit_text_levels(
    kind: TaskType,
    alloc: Allocation,
    fmt: OutputFormat,
    count: TokenCounter,
    rules: list[LevelFile],
    specs: list[LevelFile],
    errors: str | None,
    history: History | None,
) -> tuple[dict[str, FittedLevel], list[str]]:
    """Render L1, L2, L4 and L5 within their caps; notes about what the task type leaves out."""
    fitted: dict[str, FittedLevel] = {}
    notes: list[str] = []
    for level, files in (("L1", rules), ("L2", specs)):
        if files and level in alloc.levels:
            pieces = [PackedPiece(f.label, "full", f.text) for f in files]
            fitted[level] = fit_pieces(level, pieces, alloc.caps[level], fmt, count)
        elif files:
            notes.append(f"{level} is not used for task type {kind}: {len(files)} file(s) left out")
    if errors is not None and errors.strip():
        # The cap is on the error output itself; its heading and fence are framing.
        text = fit_error_output(errors, max(1, alloc.caps["L4"]), count)
        fitted["L4"] = fit_pieces("L4", [PackedPiece(None, "trimmed", text)], 10**9, fmt, count)
    if history is not None and history.text:
        if "L5" in alloc.levels:
            paragraphs = history.text.split("\n\n")
            lo, hi, best = 1, len(paragraphs), 0
            cap = alloc.caps["L5"]
            while lo <= hi:
                mid = (lo + hi) // 2
                piece = PackedPiece(None, "summary", "\n\n".join(paragraphs[-mid:]))
                if count(render_level("L5", [render_piece(piece, fmt)], fmt)) <= cap:
                    best, lo = mid, mid + 1
                else:
                    hi = mid - 1
            if best:
                piece = PackedPiece(None, "summary", "\n\n".join(paragraphs[-best:]))
                fitted["L5"] = FittedLevel(render_level("L5", [render_piece(piece, fmt)], fmt), (piece,), ())
            else:
                notes.append("L5 history does not fit its share of the budget: left out")
        else:
            notes.append("L5 history is not used for this task type: left out (it still drives decay)")
    return fitted, notes


def _render(piece: PackedPiece, fmt: OutputFormat) -> str:
    from ctxhealth.pack.render import render_piece

    return render_piece(piece, fmt)
