"""The max-min fluid engine's kernel; its Python API is :mod:`wormsim.netsim.flow.run`."""
