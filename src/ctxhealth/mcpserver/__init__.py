"""The MCP server through which an agent asks about itself: its context health, a checkpoint, its
durable task state and a recovery plan (``ctxhealth mcp``).

:mod:`~ctxhealth.mcpserver.tools` holds the tools as plain functions over the library (no SDK);
:mod:`~ctxhealth.mcpserver.sessions` finds the host's session; :mod:`~ctxhealth.mcpserver.schemas`
their JSON schemas; :mod:`~ctxhealth.mcpserver.server` binds them to the ``mcp`` SDK (an extra,
imported only there).
"""
