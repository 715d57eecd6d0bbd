"""``lazy("anthropic")``: a module imported on first use, so a test file that needs a heavy SDK only
inside its tests does not import it while the suite is being collected."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module ``name``; the first attribute read imports it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            # pytest probes every module global while collecting (``_mock_name``, ...): a private
            # name never imports the module.
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


def lazy(name: str) -> Any:
    return LazyModule(name)


class LazyAdapter:
    """A pydantic ``TypeAdapter`` of the type ``path`` (``"module:attr.attr"``), built when first used."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._adapter: Any = None

    def validate_python(self, value: Any) -> Any:
        if self._adapter is None:
            import pydantic

            module, _, attrs = self._path.partition(":")
            target: Any = importlib.import_module(module)
            for attr in attrs.split("."):
                target = getattr(target, attr)
            self._adapter = pydantic.TypeAdapter(target)
        return self._adapter.validate_python(value)
