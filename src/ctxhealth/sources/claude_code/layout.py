"""Where Claude Code keeps a session's companion files on disk: ``<session>/subagents/*.jsonl``.

The one statement of the sub-agent path formula: the reader reads these files as sidechains of the
session next to them, and the directory walk (:mod:`ctxhealth.sources.walk`) neither enters a
``subagents`` folder nor lists its files on their own, but counts them with the session.
"""

from __future__ import annotations

from pathlib import Path

SUBAGENTS_DIR = "subagents"
"""The folder, inside ``<session>/``, holding one file per sub-agent thread."""

_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")


def subagent_folder(path: str | Path) -> Path:
    """``<dir>/<session>/subagents`` for the transcript ``<dir>/<session>.jsonl`` (or ``.jsonl.gz``)."""
    p = Path(path)
    return p.with_name(p.name.removesuffix(".gz").removesuffix(".jsonl")) / SUBAGENTS_DIR


def subagent_files(path: str | Path) -> list[Path]:
    """The sub-agent transcripts of the session file ``path``, sorted (none when it has no folder); not the
    ``*.meta.json`` files 2.1 writes beside them (an agent's type and description, no transcript)."""
    folder = subagent_folder(path)
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    return [
        c
        for c in children
        if c.name.endswith(_SUFFIXES)
        and not c.name.endswith(".meta.json")
        and not c.name.startswith(".")
        and c.is_file()
    ]


def is_companion_dir(name: str) -> bool:
    """Whether a folder of this name holds companion files, not sessions (the walk does not enter it)."""
    return name == SUBAGENTS_DIR
