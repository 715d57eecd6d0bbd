"""Compression of a file's text before packing: comments stripped, long string literals cut.

Comments go unless the task is documentation (the caller decides): in Python every ``#`` comment
(found by a scan that consumes string literals whole, so ``#`` inside a string is safe); in C-like
languages whole-line ``//`` comments and ``/* ... */`` blocks that start a line; in shell-like files
whole-line ``#`` comments (not ``#!``).
A string literal longer than 500 characters keeps its first 100 and ends with
``...[truncated N chars]``. Blank-line runs left behind collapse to one.
"""

from __future__ import annotations

import re
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
_PY_TOKEN = re.compile(
    # Every match starts with a prefix letter, a quote or "#": the lookahead only lets the scan skip
    # the other positions at once (the same matches, about 3x faster on django's largest modules).
    r"(?=[rRbBuUfF\"'#])(?:"
    r"(?P<string>(?:\b[rRbBuUfF]{1,2})?(?:\"\"\"(?:[^\\]|\\[\s\S])*?\"\"\"|'''(?:[^\\]|\\[\s\S])*?'''"
    r"|\"(?:[^\"\\\n]|\\[\s\S])*\"|'(?:[^'\\\n]|\\[\s\S])*'))"
    r"|(?P<comment>#[^\n]*)"
    r")"
)
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
    """Python with comments and long strings handled by one left-to-right scan: a string is consumed
    whole before any ``#`` inside it could be taken for a comment."""
    out: list[str] = []
    last = 0
    for match in _PY_TOKEN.finditer(text):
        literal, comment = match.group("string"), match.group("comment")
        if literal is not None:
            if len(literal) <= LONG_STRING_CHARS:
                continue
            out.append(text[last : match.start()])
            out.append(_cut(literal))
            last = match.end()
        elif comment is not None and strip_comments:
            start, end = match.start(), match.end()
            line_start = text.rfind("\n", 0, start) + 1
            if not text[line_start:start].strip():  # a whole-line comment: drop the line
                start = line_start
                end = end + 1 if text[end : end + 1] == "\n" else end
            else:
                while start > last and text[start - 1] in " \t":
                    start -= 1
            out.append(text[last:start])
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
