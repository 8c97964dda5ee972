"""Phantom loads on a port (``wormhole/phantom.py``): the INT byte counter counts a phantom ACK
load's bytes by time."""

from __future__ import annotations

from numba import njit

from tests.netsim.packet._kit import US, kit, port_of
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.wormhole.phantom import ack_load, settle_ack
from wormsim.netsim.wormhole.spec import WormholeSpec


@njit
def _ack_load(S_, port, old_bps, new_bps, now):
    S = S_
    S.cnt[st.C_NOW] = now
    ack_load(S, port, old_bps, new_bps)


@njit
def _settle_ack(S_, port, now):
    settle_ack(S_, port, now)


def test_phantom_ack_bytes_reach_the_int_counter_by_time_idle_gaps_included() -> None:
    """A port carrying a phantom ACK load counts its bytes by time, whether or not a data packet
    crossed it: real ACKs cross an idle port too, and HPCC reads the counter as its transmit
    rate. A change of load counts the bytes so far at the old load first."""
    k = kit(wormhole=WormholeSpec())
    port = port_of(k.topo, 2, 1)  # the switch port down to host 1
    tx = k.A["tx_bytes"]
    base = int(tx[port])
    _ack_load(k.S, port, 0.0, 8e9, 0)  # 1 byte/ns
    _settle_ack(k.S, port, 10 * US)  # 10 µs of idle port
    assert int(tx[port]) - base == 10_000
    _ack_load(k.S, port, 0.0, 8e9, 10 * US)  # a second flow's: 2 bytes/ns from 10 µs
    _settle_ack(k.S, port, 15 * US)
    assert int(tx[port]) - base == 10_000 + 10_000
    _ack_load(k.S, port, 8e9, 0.0, 15 * US)
    _ack_load(k.S, port, 8e9, 0.0, 15 * US)  # both off: nothing more is counted
    _settle_ack(k.S, port, 40 * US)
    assert int(tx[port]) - base == 20_000
    assert k.A["ph_rate_bps"][port] == 0.0
