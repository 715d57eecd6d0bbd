"""Recovery: turn an unhealthy session into a message list a model can continue from.

Strategies are pure functions ``Session -> (Session, RecoveryReport)``:

* :func:`~ctxhealth.recovery.truncate.truncate` — system prompt, instruction, checkpoint, last 2 pairs.
* :func:`~ctxhealth.recovery.restart.restart` — system prompt + one user message (instruction,
  checkpoint, continuation directive).
* :func:`~ctxhealth.recovery.reanchor.reanchor` — the spec's re-anchor message, nothing removed.
* :func:`~ctxhealth.recovery.clear.clear_tool_results` — context-editing style clearing.
* :func:`~ctxhealth.recovery.compress.compress_history` — the spec's history compression policy.

:mod:`~ctxhealth.recovery.checkpoint` builds the deterministic checkpoint,
:mod:`~ctxhealth.recovery.retention` audits which facts survive, :mod:`~ctxhealth.recovery.warn`
words the user-facing warnings, :mod:`.text` holds the plain-text pieces the checkpoint and
working-bundle renderers share. Every output keeps tool calls paired (:mod:`.pairing`).
"""
