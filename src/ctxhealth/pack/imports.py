"""The import graph: raw import specifiers resolved to repository files, and distances from the active files.

Resolution per language: Python dotted modules (absolute, relative, ``from package import module``;
``src/`` and ``lib/`` layouts); JavaScript/TypeScript relative specifiers with the usual extensions
and ``index`` files; Go import paths under the module named in ``go.mod``; Rust ``mod name;`` and
``crate::`` paths; Java fully qualified class names. Third-party imports resolve to nothing.
"""

from __future__ import annotations

import posixpath
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping

from ctxhealth.pack.facts import FileFacts

_JS_EXTENSIONS = (
    "",
    ".ts",
    ".tsx",
    ".js",
    ".jsx",
    ".mjs",
    ".cjs",
    ".mts",
    ".cts",
    "/index.ts",
    "/index.tsx",
    "/index.js",
    "/index.jsx",
    "/index.mjs",
)
_SOURCE_ROOTS = ("src/", "lib/", "python/")
_GO_MODULE = re.compile(rb"^\s*module\s+(\S+)", re.M)


class ImportResolver:
    """Resolves the imports of the indexed files to paths of other indexed files."""

    def __init__(self, facts: Mapping[str, FileFacts], read: Callable[[str], bytes]) -> None:
        self._paths = set(facts)
        self._modules: dict[str, str] = {}
        self._java: dict[str, list[str]] = {}
        self._go_dirs: dict[str, list[str]] = {}
        for path in sorted(facts):
            if path.endswith((".py", ".pyi")):
                stem = path.rsplit(".", 1)[0].removesuffix("/__init__")
                for root in ("", *_SOURCE_ROOTS):
                    if not root or stem.startswith(root):
                        self._modules.setdefault(stem[len(root) :].replace("/", "."), path)
            elif path.endswith(".java"):
                self._java.setdefault(path.rsplit(".", 1)[0].rsplit("/", 1)[-1], []).append(path)
            elif path.endswith(".go") and not path.endswith("_test.go"):
                self._go_dirs.setdefault(posixpath.dirname(path), []).append(path)
        self._go_modules: list[tuple[str, str]] = []
        for path in sorted(facts):
            if path == "go.mod" or path.endswith("/go.mod"):
                found = _GO_MODULE.search(read(path))
                if found:
                    self._go_modules.append((found.group(1).decode(), posixpath.dirname(path)))

    def resolve(self, facts: FileFacts) -> list[str]:
        """Repository paths that ``facts.path`` imports (sorted, without itself)."""
        language = facts.language
        found: set[str] = set()
        for spec in facts.imports:
            if language == "python":
                found.update(self._python(facts.path, spec))
            elif language in {"javascript", "typescript", "tsx"}:
                found.update(self._javascript(facts.path, spec))
            elif language == "go":
                found.update(self._go(spec))
            elif language == "rust":
                found.update(self._rust(facts.path, spec))
            elif language == "java":
                found.update(self._java_class(spec))
        found.discard(facts.path)
        return sorted(found)

    def _python(self, path: str, spec: str) -> list[str]:
        module, _, name = spec.partition("|")
        if module.startswith("."):
            level = len(module) - len(module.lstrip("."))
            package = path.rsplit("/", 1)[0].split("/") if "/" in path else []
            base = package[: len(package) - (level - 1)] if level > 1 else package
            rest = module.lstrip(".")
            module = ".".join([*base, *([rest] if rest else [])])
        out: list[str] = []
        if name and name != "*" and f"{module}.{name}" in self._modules:
            return [self._modules[f"{module}.{name}"]]  # "from package import module"
        parts = module.split(".")
        while parts:
            hit = self._modules.get(".".join(parts))
            if hit is not None:
                out.append(hit)
                break
            parts.pop()
        return out

    def _javascript(self, path: str, spec: str) -> list[str]:
        if not spec.startswith("."):
            return []
        base = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
        for ext in _JS_EXTENSIONS:
            if base + ext in self._paths:
                return [base + ext]
        stem = base.rsplit(".", 1)[0]  # "./x.js" written for a TypeScript "x.ts"
        for ext in _JS_EXTENSIONS:
            if stem + ext in self._paths:
                return [stem + ext]
        return []

    def _go(self, spec: str) -> list[str]:
        for module, root in self._go_modules:
            if spec == module or spec.startswith(module + "/"):
                rel = spec[len(module) :].strip("/")
                directory = posixpath.join(root, rel) if root else rel
                return list(self._go_dirs.get(directory.strip("/"), []))
        return []

    def _rust(self, path: str, spec: str) -> list[str]:
        directory = posixpath.dirname(path)
        if spec.startswith("mod "):
            name = spec[4:].strip()
            stem = posixpath.basename(path).rsplit(".", 1)[0]
            base = directory if stem in {"lib", "main", "mod"} else posixpath.join(directory, stem)
            for candidate in (f"{base}/{name}.rs", f"{base}/{name}/mod.rs"):
                candidate = candidate.lstrip("/")
                if candidate in self._paths:
                    return [candidate]
            return []
        if not spec.startswith(("crate::", "super::", "self::")):
            return []
        root = directory
        while root and not root.endswith("src"):
            root = posixpath.dirname(root)
        parts = [p for p in re.split(r"::|\{", spec) if p and re.fullmatch(r"\w+", p)]
        if parts[0] == "crate":
            parts = parts[1:]
        else:
            return []
        while parts:
            rel = "/".join(parts)
            for candidate in (f"{root}/{rel}.rs", f"{root}/{rel}/mod.rs"):
                candidate = candidate.lstrip("/")
                if candidate in self._paths:
                    return [candidate]
            parts.pop()
        return []

    def _java_class(self, spec: str) -> list[str]:
        parts = spec.split(".")
        if parts[-1] == "*":
            directory = "/".join(parts[:-1])
            return sorted(
                p for ps in self._java.values() for p in ps if posixpath.dirname(p).endswith(directory)
            )
        for cut in range(len(parts), 0, -1):  # a static import names a member after the class
            suffix = "/".join(parts[:cut]) + ".java"
            hits = [p for p in self._java.get(parts[cut - 1], []) if p.endswith(suffix)]
            if hits:
                return hits
        return []


def import_graph(facts: Mapping[str, FileFacts], read: Callable[[str], bytes]) -> dict[str, list[str]]:
    """``path -> paths it imports`` for every indexed file (``read`` gives a file's bytes)."""
    resolver = ImportResolver(facts, read)
    return {path: resolver.resolve(f) for path, f in facts.items() if f.imports}


def import_distances(
    graph: Mapping[str, list[str]], active: Iterable[str], max_depth: int = 3
) -> dict[str, int]:
    """Hops from the nearest active file over import edges in either direction (active files are 0)."""
    neighbours: dict[str, set[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            neighbours.setdefault(source, set()).add(target)
            neighbours.setdefault(target, set()).add(source)
    distances = {path: 0 for path in active}
    queue = deque(sorted(distances))
    while queue:
        path = queue.popleft()
        depth = distances[path]
        if depth >= max_depth:
            continue
        for other in sorted(neighbours.get(path, ())):
            if other not in distances:
                distances[other] = depth + 1
                queue.append(other)
    return distances
