"""Accounting: tokens per message, context fill per turn, model registry, cost.

Public entry points:

* ``account_session(session, *, registry=None) -> SessionAccount`` (``accounting.fill``)
* ``ModelRegistry`` / ``ModelInfo`` / ``Tier`` / ``Prices`` (``accounting.registry``)
* ``count_tokens(text, model=None) -> TokenCount`` (``accounting.tokens``)
"""
