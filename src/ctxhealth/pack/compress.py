"""Compression of a file's text before packing: comments stripped, long string literals cut.

Comments go unless the task is documentation (the caller decides): in Python every ``#`` comment
(found with ``tokenize``, so ``#`` inside strings is safe; a file that does not tokenize keeps its
inline comments and loses only whole-line ones); in C-like languages whole-line ``//`` comments and
``/* ... */`` blocks that start a line; in shell-like files whole-line ``#`` comments (not ``#!``).
A string literal longer than 500 characters keeps its first 100 and ends with
``...[truncated N chars]``. Blank-line runs left behind collapse to one.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import PurePosixPath

LONG_STRING_CHARS = 500
KEEP_STRING_CHARS = 100

_C_LIKE = frozenset(
    {
        ".js",
        ".mjs",
        ".cjs",
        ".jsx",
        ".ts",
        ".tsx",
        ".mts",
        ".cts",
        ".go",
        ".rs",
        ".java",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".kt",
        ".swift",
        ".scala",
        ".css",
        ".scss",
        ".less",
        ".php",
        ".dart",
    }
)
_HASH = frozenset(
    {
        ".sh",
        ".bash",
        ".zsh",
        ".yaml",
        ".yml",
        ".toml",
        ".cfg",
        ".ini",
        ".rb",
        ".pl",
        ".r",
        ".mk",
        ".dockerfile",
        ".conf",
        ".txt-tpl",
    }
)
_HASH_NAMES = frozenset({"makefile", "dockerfile", ".gitignore", ".dockerignore", "gemfile", "rakefile"})
_C_LINE = re.compile(r"^[ \t]*//.*\n?", re.M)
_C_BLOCK = re.compile(r"^[ \t]*/\*.*?\*/[ \t]*\n?", re.M | re.S)
_HASH_LINE = re.compile(r"^[ \t]*#(?!!).*\n?", re.M)
_BLANK_RUNS = re.compile(r"\n(?:[ \t]*\n){2,}")
_N = LONG_STRING_CHARS
_C_STRING = re.compile(rf"\"(?:[^\"\\\n]|\\.){{{_N},}}\"|'(?:[^'\\\n]|\\.){{{_N},}}'|`[^`]{{{_N},}}`")


def _cut(literal: str) -> str:
    quote_len = 3 if literal[-3:] in ('"""', "'''") else 1
    prefix_len = len(literal) - len(literal.lstrip("rbuRBUfF"))
    opener = literal[: prefix_len + quote_len]
    body = literal[prefix_len + quote_len : len(literal) - quote_len]
    cut = len(body) - KEEP_STRING_CHARS
    return f"{opener}{body[:KEEP_STRING_CHARS]}...[truncated {cut} chars]{literal[-quote_len:]}"


def _python(text: str, strip_comments: bool) -> str:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _HASH_LINE.sub("", text) if strip_comments else text
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    edits: list[tuple[int, int, str]] = []
    for tok in tokens:
        start = offsets[tok.start[0] - 1] + tok.start[1]
        end = offsets[tok.end[0] - 1] + tok.end[1]
        if tok.type == tokenize.COMMENT and strip_comments:
            line = lines[tok.start[0] - 1]
            if line.strip() == tok.string.strip():  # a whole-line comment: drop the line
                start = offsets[tok.start[0] - 1]
                end = offsets[tok.start[0]]
                edits.append((start, end, ""))
            else:
                while start > 0 and text[start - 1] in " \t":
                    start -= 1
                edits.append((start, end, ""))
        elif tok.type == tokenize.STRING and len(tok.string) > LONG_STRING_CHARS:
            edits.append((start, end, _cut(tok.string)))
    out: list[str] = []
    last = 0
    for start, end, replacement in sorted(edits):
        if start < last:
            continue
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out)


def compress_text(path: str, text: str, *, strip_comments: bool) -> str:
    """``text`` of ``path`` with comments stripped (when asked) and long string literals cut."""
    suffix = PurePosixPath(path).suffix.lower()
    name = PurePosixPath(path).name.lower()
    if suffix in (".py", ".pyi"):
        result = _python(text, strip_comments)
    else:
        result = text
        if suffix in _C_LIKE:
            if strip_comments:
                result = _C_BLOCK.sub("", _C_LINE.sub("", result))
            result = _C_STRING.sub(lambda m: _cut(m.group(0)), result)
        elif strip_comments and (suffix in _HASH or name in _HASH_NAMES):
            result = _HASH_LINE.sub("", result)
    return _BLANK_RUNS.sub("\n\n", result)
