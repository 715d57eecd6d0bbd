"""Claude Code integration: status line, hooks that survive compaction, install / uninstall, doctor, watch.

Modules (imported lazily by the CLI; this package imports nothing itself, to keep hook start-up fast):

* ``payloads``   lenient parsers for the JSON Claude Code pipes to status-line and hook commands, and
                 the JSON a hook prints back.
* ``tailstate``  the per-transcript counters kept between hook processes (serialised into the ledger).
* ``tail``       reading only the new bytes of a transcript and folding them into the counters.
* ``hooks``      one handler per hook event; ``run_hook`` is the fail-open entry point.
* ``statusline`` the one-line status.
* ``settings``   the settings.json edit plan used by ``install`` (diff, backup, atomic write, restore).
* ``doctor``     what ctxhealth can see of a Claude Code set-up.
* ``watch``      a live view of the newest session.
"""
