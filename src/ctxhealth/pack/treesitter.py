"""Imports and declarations of JavaScript, TypeScript, Go, Rust and Java files, read with tree-sitter.

The grammars come from the per-language wheels (``tree-sitter-javascript`` ...), imported lazily on
the first file of that language; nothing is downloaded at run time. When a grammar or tree-sitter
itself is missing, :func:`outline` returns None and callers fall back to plain text.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

TREE_SITTER_LANGUAGES = frozenset({"javascript", "typescript", "tsx", "go", "rust", "java"})

_GRAMMARS: dict[str, tuple[str, str]] = {
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
}

_JS_DECLS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "method_definition",
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "abstract_class_declaration",
    }
)
_DECLARATIONS: dict[str, frozenset[str]] = {
    "javascript": _JS_DECLS,
    "typescript": _JS_DECLS,
    "tsx": _JS_DECLS,
    "go": frozenset({"function_declaration", "method_declaration", "type_spec"}),
    "rust": frozenset(
        {
            "function_item",
            "struct_item",
            "enum_item",
            "trait_item",
            "impl_item",
            "mod_item",
            "function_signature_item",
            "type_item",
        }
    ),
    "java": frozenset(
        {
            "class_declaration",
            "interface_declaration",
            "method_declaration",
            "enum_declaration",
            "record_declaration",
            "constructor_declaration",
            "annotation_type_declaration",
        }
    ),
}
_IMPORTS: dict[str, frozenset[str]] = {
    "javascript": frozenset({"import_statement", "export_statement"}),
    "typescript": frozenset({"import_statement", "export_statement"}),
    "tsx": frozenset({"import_statement", "export_statement"}),
    "go": frozenset({"import_spec"}),
    "rust": frozenset({"use_declaration", "mod_item"}),
    "java": frozenset({"import_declaration"}),
}
_MAX_NODES = 200_000


@dataclass(frozen=True, slots=True)
class Outline:
    """What a parse found: raw import specifiers, declared names, and the lines signatures keep."""

    imports: tuple[str, ...]
    defines: tuple[str, ...]
    signature_lines: tuple[int, ...]  # 0-based line numbers of import and declaration lines


@cache
def _parser(language: str) -> Any | None:
    try:
        import tree_sitter

        module_name, attribute = _GRAMMARS[language]
        grammar = importlib.import_module(module_name)
        return tree_sitter.Parser(tree_sitter.Language(getattr(grammar, attribute)()))
    except (ImportError, AttributeError, ValueError, TypeError):
        return None


def available(language: str) -> bool:
    """True when tree-sitter and the grammar for ``language`` can be loaded."""
    return language in TREE_SITTER_LANGUAGES and _parser(language) is not None


def _text(node: Any) -> str:
    raw: bytes = node.text or b""
    return raw.decode("utf-8", "replace")


def _import_spec(language: str, node: Any) -> str | None:
    if language in {"javascript", "typescript", "tsx"}:
        source = node.child_by_field_name("source")
        return _text(source).strip("'\"`") if source is not None else None
    if language == "go":
        path = node.child_by_field_name("path")
        return _text(path).strip('"`') if path is not None else None
    if language == "rust":
        if node.type == "mod_item":
            if node.child_by_field_name("body") is not None:
                return None
            name = node.child_by_field_name("name")
            return f"mod {_text(name)}" if name is not None else None
        argument = node.child_by_field_name("argument")
        return _text(argument) if argument is not None else None
    # java: import a.b.C; / import static a.b.C.m; / import a.b.*;
    body = _text(node).removeprefix("import").strip().removesuffix(";").strip()
    return body.removeprefix("static").strip() or None


def outline(language: str, source: bytes) -> Outline | None:
    """Imports, declared names and signature lines of ``source``; None when no parser is available."""
    parser = _parser(language)
    if parser is None:
        return None
    tree = parser.parse(source)
    declarations = _DECLARATIONS[language]
    import_types = _IMPORTS[language]
    imports: list[str] = []
    defines: list[str] = []
    lines: set[int] = set()
    stack = [tree.root_node]
    seen = 0
    while stack and seen < _MAX_NODES:
        node = stack.pop()
        seen += 1
        kind = node.type
        if kind in import_types:
            spec = _import_spec(language, node)
            if spec:
                imports.append(spec)
                lines.update(range(node.start_point[0], node.end_point[0] + 1))
        if kind in declarations:
            name = node.child_by_field_name("name")
            if name is not None:
                defines.append(_text(name))
            lines.add(node.start_point[0])
        stack.extend(reversed(node.named_children))
    return Outline(tuple(imports), tuple(defines), tuple(sorted(lines)))
