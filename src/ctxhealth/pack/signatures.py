"""The signatures form of a large file: imports, class and function lines, and first docstring lines.

Python is read with ``ast`` (decorators and multi-line signatures kept whole); JavaScript,
TypeScript, Go, Rust and Java with tree-sitter; anything else keeps lines that look like
declarations or imports. Skipped stretches become one ``...`` line at their indentation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ctxhealth.pack import treesitter

if TYPE_CHECKING:
    import ast

_GENERIC_DECLARATION = re.compile(
    r"^\s*(?:export\s+|public\s+|private\s+|protected\s+|static\s+|async\s+|pub(?:\([^)]*\))?\s+)*"
    r"(?:def|class|function|func|fn|interface|struct|enum|trait|impl|type|module|import|from|use|package|"
    r"#include|require)\b"
)
DOCSTRING_LINES = 3


def _python_lines(text: str) -> set[int] | None:
    import ast  # signature lines are remembered: a warm pack rarely parses

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    keep: set[int] = set()

    def docstring(body: list[ast.stmt]) -> None:
        head = body[0] if body else None
        if not (isinstance(head, ast.Expr) and isinstance(head.value, ast.Constant)):
            return
        if isinstance(head.value.value, str):
            first = head.lineno
            keep.update(range(first, min(first + DOCSTRING_LINES, (head.end_lineno or first) + 1)))

    docstring(tree.body)
    # Statements only (bodies of classes, functions and compound statements), never expressions:
    # walking every node of a large module costs more than parsing it.
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.col_offset == 0:
            keep.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            body_start = node.body[0].lineno if node.body else node.lineno + 1
            keep.update(range(start, max(node.lineno, body_start - 1) + 1))
            docstring(node.body)
            stack.extend(node.body)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.col_offset == 0:
            keep.add(node.lineno)  # module constants and __all__
        else:
            for name in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(s for s in getattr(node, name, ()) if isinstance(s, ast.stmt))
            for handler in getattr(node, "handlers", ()):
                stack.extend(handler.body)
    return {n - 1 for n in keep}


def signature_lines(path_language: str | None, text: str) -> list[int]:
    """0-based numbers of the lines the signatures form keeps."""
    if path_language == "python":
        found = _python_lines(text)
        if found is not None:
            return sorted(found)
    elif path_language is not None and treesitter.available(path_language):
        outline = treesitter.outline(path_language, text.encode("utf-8"))
        if outline is not None:
            return list(outline.signature_lines)
    return [i for i, line in enumerate(text.splitlines()) if _GENERIC_DECLARATION.match(line)]


def render_signatures(language: str | None, text: str, keep_lines: Iterable[int] | None = None) -> str:
    """The signatures form of ``text`` (see the module docstring); ``keep_lines`` when already known."""
    lines = text.splitlines()
    keep = set(signature_lines(language, text) if keep_lines is None else keep_lines)
    out: list[str] = []
    skipping = False
    for i, line in enumerate(lines):
        if i in keep:
            out.append(line)
            skipping = False
        elif not skipping and line.strip():
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}...")
            skipping = True
    return "\n".join(out) + ("\n" if out else "")
