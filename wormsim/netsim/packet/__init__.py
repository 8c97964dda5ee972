"""Packet-level engine: numba kernels over structure-of-arrays state.

Two layers: this package's modules are the physics of a packet network (event loop, heap, NICs,
switches, hosts, DAG executor, congestion controls, state); :mod:`.wormhole` is Wormhole's
fast-forwarding over it, which the physics reaches only through :mod:`.wormhole.hooks`.

Stale cached kernels (numba checks only a function's own file) are dropped by
:mod:`wormsim.kernel_cache` when :mod:`wormsim` is imported: a module's kernels when a file it
imports, transitively, changes.
"""
