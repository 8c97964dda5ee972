"""wormsim: packet-level network simulation of large-model training at close to flow-level speed."""

from wormsim.kernel_cache import ensure_fresh as _ensure_fresh_kernel_cache

__all__ = ["__version__", "run", "Run", "load", "compare", "sweep"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``wormsim.run``, ``Run``, ``load``, ``compare`` and ``sweep`` (:mod:`wormsim.api`),
    imported on first use so that ``import wormsim`` stays light."""
    if name in ("run", "Run", "load", "compare", "sweep"):
        from wormsim import api

        return getattr(api, name)
    raise AttributeError(f"module 'wormsim' has no attribute {name!r}")


_ensure_fresh_kernel_cache()  # before any jitted kernel can load from numba's cache
