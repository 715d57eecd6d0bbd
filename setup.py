"""Builds the optional C extension ``ctxhealth._native`` (the text kernels; see
``ctxhealth.signals.native``). Everything else is declared in ``pyproject.toml``.

The extension is optional: without a compiler or the Python headers the build skips it with a
warning and ctxhealth runs its pure-Python definitions, which compute the same results.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ctxhealth._native",
            sources=["src/ctxhealth/_native.c"],
            optional=True,
        )
    ]
)
