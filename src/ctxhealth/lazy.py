"""Lazy re-exports: a package names what it offers, and each name is imported on first use. And
:func:`pattern`, the one way to compile a regular expression on first use, with :func:`search`,
which compiles and runs it only for a text holding the literals every match holds
(:func:`required_literals`).

Hooks and the status line import ``ctxhealth`` on every agent turn; a package ``__init__`` that
imported all it re-exports would make each of them pay for everything. A package keeps a map
``name -> module`` and forwards its module-level ``__getattr__`` to :func:`load_export`.
"""

from __future__ import annotations

# Only the type checker needs these; hooks import this module on every turn.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Mapping, MutableMapping
    from typing import Any

_patterns: dict[tuple[str | bytes, int], Any] = {}
_literals: dict[tuple[str, int], tuple[str, ...]] = {}


def load_export(
    namespace: MutableMapping[str, Any], exports: Mapping[str, str], package: str, name: str
) -> Any:
    """Import ``name`` from the module ``exports`` maps it to, cache it in ``namespace``, return it.

    A module path starting with ``.`` is relative to ``package``; ``module:attribute`` exports the
    module's ``attribute`` under ``name``. Unknown names raise ``AttributeError`` as Python expects
    from a module ``__getattr__``.
    """
    target = exports.get(name)
    if target is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    import importlib  # here, not at the top: it imports ``warnings``, which a hook's client never needs

    value = getattr(importlib.import_module(module, package), attribute or name)
    namespace[name] = value
    return value


def pattern(source: str | bytes, flags: int = 0) -> re.Pattern[Any]:
    """``re.compile(source, flags)``, compiled on the first call and kept: for a pattern a typical
    run never needs (a fresh ``check`` or hook process would otherwise compile it at import)."""
    found = _patterns.get((source, flags))
    if found is None:
        import re

        found = _patterns[(source, flags)] = re.compile(source, flags)
    return found


_QUANTIFIERS = frozenset("*+?{")
_CASELESS = 2 | 64  # re.IGNORECASE, re.VERBOSE: literals no longer stand for themselves


def required_literals(source: str, flags: int = 0) -> tuple[str, ...]:
    """Runs of literal characters at the top level of the pattern ``source``: every match holds each
    of them (the empty tuple when none is known). Read without the regex parser, conservatively: a
    top-level alternation, an inline flag or a case-insensitive or verbose pattern gives none;
    groups, classes, escapes such as ``\\d`` and anchors end a run; a character a quantifier follows
    is left out. A test checks this against the regex parser."""
    key = (source, flags)
    found = _literals.get(key)
    if found is not None:
        return found
    runs: list[str] = []
    run: list[str] = []
    at, size = 0, len(source)
    caseless = bool(flags & _CASELESS)
    while at < size and not caseless:
        char = source[at]
        if char in _QUANTIFIERS:
            if run:
                run.pop()  # the quantified character may be absent
            runs.append("".join(run))
            run = []
            at = _after_repeat(source, at) if char == "{" else at + 1
        elif char == "\\":
            escaped = source[at + 1 : at + 2]
            if not escaped or escaped.isalnum():  # \d, \b, \1, \x41 ...: not a literal
                runs.append("".join(run))
                run = []
                at = _after_escape(source, at)
            else:
                run.append(escaped)
                at += 2
        elif char in "()[|.^$":
            runs.append("".join(run))
            run = []
            if char == "|":
                return _keep(key, ())
            if char == "(" and source[at + 1 : at + 2] == "?" and source[at + 2 : at + 3] in "aiLmsux-#":
                return _keep(key, ())  # inline flags, or a comment (a quantifier after it applies before it)
            at = _skip(source, at) if char in "([" else at + 1
        else:
            run.append(char)
            at += 1
    runs.append("".join(run))
    return _keep(key, () if caseless else tuple(r for r in runs if r))


def _keep(key: tuple[str, int], literals: tuple[str, ...]) -> tuple[str, ...]:
    _literals[key] = literals
    return literals


_ESCAPE_DIGITS = {"x": 2, "u": 4, "U": 8}


def _after_escape(source: str, at: int) -> int:
    """The position after the escape of a letter or digit at ``at``, with what it takes: the hex
    digits of ``\\x``, ``\\u`` and ``\\U``, the name of ``\\N{...}``, the digits of an octal
    escape or a group reference (none of them stands for itself)."""
    kind = source[at + 1 : at + 2]
    end = at + 2
    if kind in _ESCAPE_DIGITS:
        return end + _ESCAPE_DIGITS[kind]
    if kind == "N" and source[end : end + 1] == "{":
        close = source.find("}", end)
        return len(source) if close == -1 else close + 1
    if kind.isdigit():
        while end < len(source) and end < at + 4 and source[end].isdigit():
            end += 1
    return end


def _after_repeat(source: str, at: int) -> int:
    """The position after ``{m,n}`` at ``at``; after the brace alone when it opens no repeat."""
    end = at + 1
    while end < len(source) and (source[end].isdigit() or source[end] == ","):
        end += 1
    return end + 1 if source[end : end + 1] == "}" else at + 1


def _skip(source: str, at: int) -> int:
    """The position after the group or class opening at ``at``."""
    depth, size = 0, len(source)
    while at < size:
        char = source[at]
        if char == "\\":
            at += 2
            continue
        if char == "[":
            at += 1
            if source[at : at + 1] == "^":
                at += 1
            if source[at : at + 1] == "]":
                at += 1
            while at < size and source[at] != "]":
                at += 2 if source[at] == "\\" else 1
            at += 1
            if depth == 0:
                return at
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1
    return at


def search(source: str, text: str, flags: int = 0) -> re.Match[str] | None:
    """``re.search(source, text, flags)``; a text without one of the pattern's
    :func:`required_literals` is not searched, and the pattern is compiled only when one has them."""
    for literal in required_literals(source, flags):
        if literal not in text:
            return None
    found: re.Match[str] | None = pattern(source, flags).search(text)
    return found
