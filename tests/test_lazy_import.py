"""The suite's ``lazy()`` stand-in keeps heavy SDKs out of collection: pytest probes every module
global for private names (``_mock_name``, ``_pytestfixturefunction``), and such a probe must not
import the module."""

from __future__ import annotations

import pytest

from lazy_import import lazy


def test_private_probe_does_not_import() -> None:
    missing = lazy("ctxhealth_no_such_module")
    for name in ("_mock_name", "_pytestfixturefunction", "__wrapped__"):
        with pytest.raises(AttributeError):
            getattr(missing, name)
    with pytest.raises(ModuleNotFoundError):
        _ = missing.anything  # a public name does import it


def test_public_name_reads_the_module() -> None:
    assert lazy("json").dumps([1]) == "[1]"
