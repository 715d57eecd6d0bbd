"""A griffe extension for the API pages: Sphinx roles in docstrings become code spans.

The package's docstrings name other objects the Sphinx way (``:class:`Monitor```,
``:meth:`~ctxhealth.monitor.Monitor.restore```); the site renders docstrings as markdown, where
those would show as raw text. Each role becomes a code span of the name it points to (the last
part only when the target starts with ``~``, as Sphinx shows it).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const|type):`(~?)([^`]+)`")


def plain_role(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring griffe loads."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(plain_role, obj.docstring.value)
