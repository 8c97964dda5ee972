"""Packet-level engine: numba kernels over structure-of-arrays state (DESIGN §4)."""
