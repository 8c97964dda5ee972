"""wormsim: packet-level network simulation of large-model training at close to flow-level speed."""

import os as _os
import sys as _sys


def _early_sigint(signum: int, frame: object) -> None:  # pragma: no cover - a signal
    _os.write(2, b"error: interrupted before the command started; nothing was written\n")
    _os._exit(130)


def _is_command() -> bool:
    """Whether this process is the ``wormsim`` command (``wormsim …`` or ``python -m wormsim``)."""
    argv = getattr(_sys, "orig_argv", _sys.argv)
    if argv[1:3] == ["-m", "wormsim"]:
        return True
    return bool(_sys.argv) and _os.path.basename(_sys.argv[0]) == "wormsim"


if _is_command():  # before the heavy imports: Ctrl-C while they load leaves no traceback
    import signal as _signal

    _signal.signal(_signal.SIGINT, _early_sigint)

from wormsim.kernel_cache import ensure_fresh as _ensure_fresh_kernel_cache  # noqa: E402

#: The public API, loaded from :mod:`wormsim.api` on first use (``import wormsim`` stays light).
_LAZY = ("run", "Run", "load", "compare", "Comparison", "sweep")
__all__ = ["__version__", *_LAZY]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``wormsim.run``, ``Run``, ``load``, ``compare``, ``Comparison`` and ``sweep``
    (:mod:`wormsim.api`), imported on first use so that ``import wormsim`` stays light."""
    if name in _LAZY:
        from wormsim import api

        return getattr(api, name)
    raise AttributeError(f"module 'wormsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API with the lazy names, so tab completion in a notebook finds them."""
    return sorted({*__all__, "kernel_cache"})


_ensure_fresh_kernel_cache()  # before any jitted kernel can load from numba's cache
