"""Signals: small incremental detectors, one module per family, each fed one message at a time.

* :mod:`~ctxhealth.signals.pressure` — fill, quality / capacity pressure, zones (:class:`Zone`);
* :mod:`~ctxhealth.signals.drift` — task drift against the original instruction;
* :mod:`~ctxhealth.signals.failures` — failure rate, consecutive failures, same tool, same mistake;
* :mod:`~ctxhealth.signals.repetition` — repeated calls, re-reads, edit thrash;
* :mod:`~ctxhealth.signals.indicators` — the spec's early-warning indicators;
* :mod:`~ctxhealth.signals.fidelity` — verification gaps, contracting replies, narrowing file focus;
* :mod:`~ctxhealth.signals.thresholds` — what the detectors read from the policy's ``Profile``.

Shared pieces: :mod:`~ctxhealth.signals.base` (``Signal``, the detector protocol, bounded helpers),
:mod:`~ctxhealth.signals.events` (a message parsed once for all detectors),
:mod:`~ctxhealth.signals.calls` (what a tool call does), :mod:`~ctxhealth.signals.text` (words),
:mod:`~ctxhealth.signals.zones` (the zone arithmetic on plain numbers, importing nothing),
:mod:`~ctxhealth.signals.state` (each detector's saved state, one ``msgspec.Struct`` each, for
``Monitor.snapshot``; :mod:`~ctxhealth.signals.legacy_state` reads the format before it).
:class:`ctxhealth.monitor.Monitor` wires them together. Nothing is imported here, so importing one
detector stays cheap.
"""
