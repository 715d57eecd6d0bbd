"""Accounting: tokens per message, context fill per turn, model registry, cost.

Public entry points:

* ``account_session(session, *, registry=None, model=None) -> SessionAccount`` (``accounting.fill``)
* ``ModelRegistry`` (``accounting.registry``: our family table over the price package's windows and
  prices, ``accounting.catalog``); ``ModelInfo`` / ``Tier`` / ``Prices`` /
  ``FillSource`` / ``TurnFill`` / ``CompactionRecord`` (``accounting.types``)
* ``count_tokens(text, encoding=None) -> TokenCount``, ``message_tokens`` (``accounting.tokens``)
* ``session_cost(session, registry=None, *, model=None) -> float | None`` (``accounting.cost``)
"""
