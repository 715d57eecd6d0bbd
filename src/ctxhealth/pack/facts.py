"""What the index remembers of one file: content hash, size, language, words, declared names, imports.

:func:`read_facts` computes them from the file's bytes: Python imports with ``ast`` (only the
import statements are parsed, which is what keeps a cold index of thousands of files fast),
declarations with a line pattern; JavaScript, TypeScript, Go, Rust and Java with tree-sitter
(:mod:`ctxhealth.pack.treesitter`); any other text file contributes its words only.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import orjson

from ctxhealth.pack import treesitter
from ctxhealth.pack.words import path_words, word_bag

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}

PATH_WORD_WEIGHT = 3
"""A path word counts as this many occurrences: where a file sits says much about what it is for."""

_PY_DEFINE = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
_PY_IMPORT_START = re.compile(r"^[ \t]*(?:import|from)[ \t]", re.M)


@dataclass(frozen=True, slots=True)
class FileFacts:
    """The cached facts of one file. ``tokens`` (its exact o200k count) and ``signature_lines`` are
    filled in when a pack first needs them; both depend on the content only."""

    path: str
    digest: str
    size: int
    language: str | None
    bag_json: str | None
    """JSON of word -> occurrences (path words weighted by :data:`PATH_WORD_WEIGHT`), decoded on use;
    None for facts read back from the index cache, which keeps the bags in a file of their own (a
    warm run whose BM25 index is cached never reads them: they are most of the cache's bytes)."""
    defines: tuple[str, ...]
    imports: tuple[str, ...]
    lines: int
    tokens: int | None = None
    signature_lines: tuple[int, ...] | None = None
    mtime_ns: int = 0
    declarations: int | None = None
    """Lines starting ``def `` or ``class `` after a newline (:func:`declaration_lines`): the packer's
    cheap lower bound on a signatures form, known without reading the file again."""

    @property
    def bag(self) -> dict[str, int]:
        """Word -> occurrences (only for facts that carry their bag, see :attr:`bag_json`)."""
        if self.bag_json is None:
            raise ValueError(f"the word bag of {self.path} is not loaded")
        decoded: dict[str, int] = orjson.loads(self.bag_json)
        return decoded


def declaration_lines(text: str) -> int:
    """How many ``\\ndef `` and ``\\nclass `` the text holds (the packer's signatures estimate)."""
    return text.count("\ndef ") + text.count("\nclass ")


def content_digest(data: bytes) -> str:
    """The content hash the cache is keyed by (BLAKE2b, 128 bits, hex)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def language_of(path: str) -> str | None:
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


def _python_import_statements(text: str) -> list[str]:
    """The source of each import statement (with its continuation lines), dedented."""
    import textwrap  # a file is read (a cold or changed one): a warm pack never needs it

    statements: list[str] = []
    lines = text.splitlines()
    starts: list[int] = []
    line = offset = 0
    for match in _PY_IMPORT_START.finditer(text):
        line += text.count("\n", offset, match.start())  # counted incrementally: linear in the text
        offset = match.start()
        if not starts or starts[-1] != line:
            starts.append(line)
    for start in starts:
        chunk = [lines[start]]
        depth = lines[start].count("(") - lines[start].count(")")
        i = start
        while (depth > 0 or chunk[-1].rstrip().endswith("\\")) and i + 1 < len(lines) and len(chunk) < 200:
            i += 1
            chunk.append(lines[i])
            depth += lines[i].count("(") - lines[i].count(")")
        statements.append(textwrap.dedent("\n".join(chunk)))
    return statements


def python_imports(text: str) -> tuple[str, ...]:
    """Raw import specifiers: ``a.b`` for ``import a.b``; ``..m|name`` for ``from ..m import name``."""
    import ast  # a file is read (a cold or changed one): a warm pack never needs it

    found: list[str] = []
    for statement in _python_import_statements(text):
        try:
            tree = ast.parse(statement)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                found.extend(f"{module}|{alias.name}" for alias in node.names)
    return tuple(dict.fromkeys(found))


def read_facts(path: str, data: bytes, digest: str | None = None) -> FileFacts:
    """The facts of the text file ``path`` with content ``data``."""
    text = data.decode("utf-8", "replace")
    language = language_of(path)
    imports: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    if language == "python":
        imports = python_imports(text)
        defines = tuple(_PY_DEFINE.findall(text))
    elif language is not None:
        found = treesitter.outline(language, data)
        if found is not None:
            imports, defines = found.imports, found.defines
    bag = word_bag(text)
    for word in path_words(path):
        bag[word] += PATH_WORD_WEIGHT
    return FileFacts(
        path=path,
        digest=digest or content_digest(data),
        size=len(data),
        language=language,
        bag_json=orjson.dumps(bag).decode(),
        defines=defines,
        imports=imports,
        lines=text.count("\n") + 1,
        declarations=declaration_lines(text),
    )
