"""Wormhole's Python side: its knobs (:mod:`.spec`), the run's plan resolved from them and the
congestion control (:mod:`.plan`), the memo bridge between the kernel and the memo store
(:mod:`.bridge`, coordinating :mod:`.namespace`, :mod:`.keys`, :mod:`.replay`, :mod:`.record` and
:mod:`.shadows`), the memo governor (:mod:`.governor`) and its counters (:mod:`.counters`). The
kernel half is :mod:`wormsim.netsim.packet.wormhole`."""
