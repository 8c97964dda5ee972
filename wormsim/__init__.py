"""wormsim: packet-level network simulation of large-model training at close to flow-level speed."""

__all__ = ["__version__"]
__version__ = "0.1.0"
