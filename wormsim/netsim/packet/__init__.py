"""Packet-level engine: numba kernels over structure-of-arrays state.

Stale cached kernels (numba checks only a function's own file) are dropped package-wide by
:mod:`wormsim.kernel_cache` when :mod:`wormsim` is imported.
"""
