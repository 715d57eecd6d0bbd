"""The public namespace: ``__all__`` is sorted and every name in it resolves."""

from __future__ import annotations

import ctxhealth


def test_all_is_sorted() -> None:
    assert ctxhealth.__all__ == sorted(ctxhealth.__all__)


def test_every_public_name_resolves() -> None:
    for name in ctxhealth.__all__:
        assert getattr(ctxhealth, name) is not None, name


def test_unknown_name_raises_attribute_error() -> None:
    try:
        ctxhealth.does_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
