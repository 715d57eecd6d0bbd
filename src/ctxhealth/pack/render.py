"""The payload's text: markdown with fenced files or XML tags, one section per level, in a fixed order.

Sections depend only on their own content, so a level's bytes are the same whenever its input is
(the rules and specs levels form a stable, cacheable prefix). The file header format
(``### path (form)`` / ``<file path=".." form="..">``) is also what the history reader recognises
as "this file was packed before".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

from ctxhealth.pack.budget import LEVEL_NAMES


class OutputFormat(StrEnum):
    MARKDOWN = "markdown"
    XML = "xml"


_FENCE_LANG = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "jsx",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".md": "markdown",
    ".rst": "rst",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".html": "html",
    ".css": "css",
    ".sh": "bash",
    ".sql": "sql",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".txt": "text",
}
_BACKTICKS = re.compile(r"`{3,}")


@dataclass(frozen=True, slots=True)
class PackedPiece:
    """One item of a level: a file (``path`` + ``form``) or a block of text (``path`` None)."""

    path: str | None
    form: str
    text: str


def _fence(text: str) -> str:
    if "```" not in text:  # no run of three backticks: the scan would find nothing
        return "```"
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=2)
    return "`" * max(3, longest + 1)


def _markdown_piece(piece: PackedPiece) -> str:
    body = piece.text if piece.text.endswith("\n") or not piece.text else piece.text + "\n"
    fence = _fence(body)
    if piece.path is None:
        return f"{fence}text\n{body}{fence}"
    lang = _FENCE_LANG.get(PurePosixPath(piece.path).suffix.lower(), "")
    return f"### {piece.path} ({piece.form})\n{fence}{lang}\n{body}{fence}"


def quoteattr(value: str) -> str:
    """``value`` as a quoted XML attribute (imported on use: ``xml.sax.saxutils`` pulls in
    ``urllib`` and ``http.client``, a noticeable share of a warm markdown pack's start-up)."""
    from xml.sax.saxutils import quoteattr as quote

    return quote(value)


def _xml_piece(piece: PackedPiece) -> str:
    body = piece.text if piece.text.endswith("\n") or not piece.text else piece.text + "\n"
    if piece.path is None:
        return f"<text>\n{body}</text>"
    return f"<file path={quoteattr(piece.path)} form={quoteattr(piece.form)}>\n{body}</file>"


def render_piece(piece: PackedPiece, fmt: OutputFormat) -> str:
    return _markdown_piece(piece) if fmt is OutputFormat.MARKDOWN else _xml_piece(piece)


def level_open(level: str, fmt: OutputFormat) -> str:
    if fmt is OutputFormat.MARKDOWN:
        return f"## {level} {LEVEL_NAMES[level]}"
    return f"<level id={quoteattr(level)} name={quoteattr(LEVEL_NAMES[level])}>"


def level_close(fmt: OutputFormat) -> str:
    return "" if fmt is OutputFormat.MARKDOWN else "</level>"


def render_level(level: str, pieces: list[str], fmt: OutputFormat) -> str:
    """One level's section from its rendered pieces (empty string when there are none)."""
    if not pieces:
        return ""
    close = level_close(fmt)
    return "\n\n".join([level_open(level, fmt), *pieces, *([close] if close else [])]) + "\n"


def document_open(fmt: OutputFormat) -> str:
    return "# Context pack\n" if fmt is OutputFormat.MARKDOWN else "<context_pack>\n"


def document_close(fmt: OutputFormat) -> str:
    return "" if fmt is OutputFormat.MARKDOWN else "</context_pack>\n"


def join_document(sections: list[str], fmt: OutputFormat) -> str:
    """The payload: the document opening, the non-empty level sections, the closing."""
    return (
        "\n".join([document_open(fmt), *[s for s in sections if s], document_close(fmt)]).rstrip("\n") + "\n"
    )
