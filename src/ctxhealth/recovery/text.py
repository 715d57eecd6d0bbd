"""Plain-text pieces shared by the renderers of checkpoints (here) and working bundles (state)."""

from __future__ import annotations

from collections.abc import Sequence


def bullets(title: str, items: Sequence[str]) -> list[str]:
    """``title:`` followed by one indented ``  - item`` line per item; no lines when there are none."""
    return [f"{title}:", *(f"  - {item}" for item in items)] if items else []
