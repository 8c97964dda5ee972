"""Wormhole's kernel layer: partitions, steadiness, skips, shadows, tunnels, flow skips,
phantom loads, mirrors, conflict graphs and the sampler, over the packet physics of
:mod:`wormsim.netsim.packet`."""
