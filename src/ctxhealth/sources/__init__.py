"""Readers: turn a transcript source (file, directory, stdin, .gz) into :class:`ctxhealth.model.Session`.

Public entry points (implemented in ``ctxhealth.sources.reader``):

* ``read_sessions(paths, *, format=None, strict=False) -> Iterator[Session]`` — every session in the
  given paths (files, directories searched recursively, ``-`` for stdin, ``.gz``), the format detected
  from content unless ``format`` is given. Lenient: problems become ``Session.warnings``.
* ``read_session(path, *, format=None, strict=False) -> Session`` — exactly one session.
* ``detect_format(head: bytes, name: str) -> Format | None``.
"""
