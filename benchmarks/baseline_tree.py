"""The code of a git revision, exported beside this tree: what the before/after benchmarks and the
sameness checks run as "before" (``PYTHONPATH`` pointed at the returned ``src``).

``git archive`` holds the C kernels' source, not the built module: :func:`export` with ``native``
builds the revision's own kernels in place, as an install does, so a baseline with kernels is
measured with them (never this tree's build, which may differ from the revision's source).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_BUILD_NATIVE = """
import sys
from setuptools import Distribution, Extension
root = sys.argv[1]
dist = Distribution({"ext_modules": [Extension("ctxhealth._native", [root + "/src/ctxhealth/_native.c"])]})
dist.verbose = 0
command = dist.get_command_obj("build_ext")
command.build_lib = root + "/src"
command.build_temp = root + "/build"
dist.run_command("build_ext")
"""


def export(rev: str, into: Path, *, native: bool = False) -> Path:
    """The ``src`` tree of git revision ``rev``, unpacked under ``into`` (made when missing), with
    its C kernels built when ``native`` and it has them."""
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    if native:
        build_native(into)
    return into / "src"


def build_native(root: Path) -> bool:
    """Build the C text kernels of an exported tree (``root/src``) in place; False when it has none or
    they do not build (then it runs its Python definitions)."""
    if not (root / "src" / "ctxhealth" / "_native.c").is_file():
        return False
    done = subprocess.run([sys.executable, "-c", _BUILD_NATIVE, str(root)], capture_output=True, text=True)
    return done.returncode == 0
