"""Wormhole's Python side: its counters, the memo bridge between the kernel and the memo store, the
memo governor."""
