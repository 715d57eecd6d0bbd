"""A local HTTP proxy in front of a model API that applies the health policy to every request.

:func:`~ctxhealth.integrations.proxy.app.create_app` builds the ASGI app (starlette) around a
:class:`~ctxhealth.integrations.guard.Guard`; :func:`~ctxhealth.integrations.proxy.server.serve` runs
it with uvicorn. Needs the ``proxy`` extra (``pip install 'ctxhealth[proxy]'``).
"""
