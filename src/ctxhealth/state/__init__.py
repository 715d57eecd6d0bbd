"""Durable state outside the model: task state, summaries, the pressure gate, checkpoints, the ledger.

Modules (import the one you need; nothing heavy is imported here so hooks stay fast):

* ``ledger`` / ``migrations`` — the SQLite ledger (WAL) under the user's home directory.
* ``schema`` — the versioned task-state document and its validation.
* ``summary`` — the markdown summary rendered from the task state.
* ``store`` — the files under a state root and the startup branch (``ensure`` / ``status``).
* ``gate`` — the pressure gate run before each major action; halt and override.
* ``bundle`` — the small working bundle an agent needs to continue.
* ``memory`` — the pre-compaction snapshot and the learnings / issues / decisions files.
* ``checkpoint`` — checkpoints written from a transcript.
"""
