"""Claude Code integration: status line, hooks that survive compaction, install / uninstall, doctor, watch.

Modules (imported lazily by the CLI; this package imports nothing itself, to keep hook start-up fast):

* ``payloads``   lenient parsers for the JSON Claude Code pipes to status-line and hook commands, and
                 the JSON a hook prints back.
* ``tailstate``  the per-transcript counters kept between hook processes (fast cache + ledger copy).
* ``tail``       reading only the new bytes of a transcript and folding them into the counters.
* ``assess``     zone, pressure, drift and spiral from the counters; the policy's verdict.
* ``hooks``      one handler per hook event; ``run_hook`` is the fail-open entry point.
* ``statusline`` the one-line status.
* ``install``    the settings.json edit plan (diff, backup, atomic write, byte-identical restore).
* ``doctor``     what ctxhealth can see of a Claude Code set-up.
* ``watch``      a live view of one session.
"""
