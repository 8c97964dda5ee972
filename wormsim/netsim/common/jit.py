"""How the engines compile their kernels: numba's ``njit`` with the options every kernel shares.

Every jitted function of the engines is cached on disk (``cache=True``) and gets no C-function
wrapper (``no_cfunc_wrapper``): the kernels call each other natively and Python calls them
through numba's own wrapper, so the C-ABI entry numba would otherwise generate, optimise and
cache for each of the ~250 functions is never used. Skipping it is a few per cent of a cold
compile.

Import ``njit`` from here instead of from numba; options given at a use (``inline="always"``)
are added to these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba

__all__ = ["njit", "KERNEL_OPTIONS"]

KERNEL_OPTIONS: dict[str, Any] = {"cache": True, "no_cfunc_wrapper": True}
"""The options of every engine kernel."""


def njit(fn: Callable | None = None, **options: Any) -> Any:
    """``numba.njit`` with :data:`KERNEL_OPTIONS` (``@njit`` or ``@njit(inline="always")``)."""
    merged = {**KERNEL_OPTIONS, **options}
    if fn is None:
        return numba.njit(**merged)
    return numba.njit(**merged)(fn)
