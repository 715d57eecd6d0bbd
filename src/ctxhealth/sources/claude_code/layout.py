"""Where Claude Code keeps a session's companion files on disk: ``<session>/subagents/*.jsonl``.

The one statement of the sub-agent path formula: the reader reads these files as sidechains of the
session next to them, and the directory walk (:mod:`ctxhealth.sources.walk`) neither enters a
``subagents`` folder nor lists its files on their own, but counts them with the session.
"""

from __future__ import annotations

import os
from pathlib import Path

SUBAGENTS_DIR = "subagents"
"""The folder, inside ``<session>/``, holding one file per sub-agent thread."""

_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")


def subagent_folder(path: str | Path) -> str:
    """``<dir>/<session>/subagents`` for the transcript ``<dir>/<session>.jsonl`` (or ``.jsonl.gz``),
    spelt from ``path`` as it is given (the walk and the reader ask it of every session: a path
    object per session cost them more than looking for the folder)."""
    head, name = os.path.split(os.fspath(path).rstrip(os.sep))
    return os.path.join(head, name.removesuffix(".gz").removesuffix(".jsonl"), SUBAGENTS_DIR)


def subagent_files(path: str | Path) -> list[Path]:
    """The sub-agent transcripts of the session file ``path``, sorted (none when it has no folder); not the
    ``*.meta.json`` files 2.1 writes beside them (an agent's type and description, no transcript).
    Asked of every session a walk finds and of every session read, most of which have no folder:
    the folder is listed by name, and a path made only for each transcript in it."""
    folder = subagent_folder(path)
    try:
        with os.scandir(folder) as entries:
            names = sorted(
                e.name
                for e in entries
                if e.name.endswith(_SUFFIXES)
                and not e.name.endswith(".meta.json")
                and not e.name.startswith(".")
                and e.is_file()
            )
    except OSError:
        return []
    base = Path(folder)
    return [base / name for name in names]


def is_companion_dir(name: str) -> bool:
    """Whether a folder of this name holds companion files, not sessions (the walk does not enter it)."""
    return name == SUBAGENTS_DIR
