"""The signals' name for the kernel picker: :mod:`ctxhealth.native` (the one picker, a base module
so that :mod:`~ctxhealth.failures` can use it too), re-exported."""

from __future__ import annotations

from ctxhealth.native import KERNELS, SWITCH

__all__ = ["KERNELS", "SWITCH"]
