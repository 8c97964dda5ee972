"""wormsim: packet-level network simulation of large-model training at close to flow-level speed."""

from wormsim.kernel_cache import ensure_fresh as _ensure_fresh_kernel_cache

__all__ = ["__version__"]
__version__ = "0.1.0"

_ensure_fresh_kernel_cache()  # before any jitted kernel can load from numba's cache
