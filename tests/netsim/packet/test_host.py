"""The host receive path (``host.py``) against HPCC ns-3's ``RdmaHw::ReceiveUdp`` /
``ReceiverCheckSeq`` (the go-back-N receiver) and ``ReceiveAck`` (the sender):

* in-order data: ACK carrying the next expected byte, the data's INT and send time, the CNP flag
  if the data was ECN-marked, in an ACK frame (PPP 14 + IPv4 20 + qbb 12 + INT, at least 26 after
  IPv4) sent on the receiver's NIC ahead of its data;
  ACKed when the expected byte reaches the ACK milestone (``L2_ACK_INTERVAL``, which ns-3 resets
  to one interval on every packet) or a chunk boundary;
* a gap: NACK for the expected byte, at most once per NACK interval for the same byte;
* a duplicate: nothing;
* at the sender, ACKs advance ``snd_una``, a NACK rewinds ``snd_nxt`` to it, the last one
  finishes the flow (and cancels DCQCN's timers), CNP flags reach DCQCN only.
"""

from __future__ import annotations

import pytest
from numba import njit

from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.host import host_receive
from wormsim.netsim.packet.state import C_CNP, C_INUSE, C_NACKS, PK_ACK, PK_DATA, PK_NACK

from ._kit import US, Kit, alloc, kit, port_of

Q = 0


@njit
def _receive(S_, P_, p, now):
    host_receive(S_, st.raw_params(P_), p, now)


def _hosts(cc: str = "hpcc", size: int = 1_000_000, **net) -> Kit:
    k = kit(cc, size=size, **net)
    k.start(Q)
    k.nic_add(Q)
    return k


def _data(k: Kit, seq: int, payload: int = 1000, ecn: bool = False) -> int:
    p = alloc(k, type=PK_DATA, flow=Q, seq=seq, payload=payload, size=payload + 90)
    k.A["pk_ecn"][p] = int(ecn)
    k.A["pk_ts_ns"][p] = 4242
    k.A["pk_nhop"][p] = 2
    k.A["pk_it_ns"][p, :2] = (11, 12)
    k.A["pk_hop"][p] = 2
    return p


def _ack_sent(k: Kit) -> int:
    """The packet host 1's NIC just put on its link (-1 = none)."""
    return int(k.A["lk_tail"][port_of(k.topo, 1, 2)])


@pytest.mark.parametrize(("cc", "int_bytes"), [("hpcc", 42), ("timely", 8), ("dcqcn", 0)])
def test_in_order_data_becomes_an_ack_on_the_receivers_nic(cc: str, int_bytes: int):
    k = _hosts(cc)
    A = k.A
    p = _data(k, 0, ecn=True)
    _receive(k.S, k.P, p, 3 * US)
    assert A["rx_expected"][Q] == 1000
    assert _ack_sent(k) == p  # the data packet, turned into its ACK
    assert (A["pk_type"][p], A["pk_seq"][p], A["pk_cnp"][p], A["pk_ecn"][p]) == (PK_ACK, 1000, 1, 0)
    assert A["pk_size"][p] == 14 + 20 + max(12 + int_bytes, 26)
    assert A["pk_payload"][p] == 0 and A["pk_hop"][p] == 0
    assert A["pk_route"][p] == A["qp_rack"][Q]
    assert A["pk_ts_ns"][p] == 4242 and list(A["pk_it_ns"][p, :2]) == [11, 12]  # carried over
    p2 = _data(k, 1000)
    A["p_busy"][port_of(k.topo, 1, 2)] = 0
    _receive(k.S, k.P, p2, 4 * US)
    assert A["pk_cnp"][p2] == 0 and A["pk_seq"][p2] == 2000


def test_acks_wait_for_the_milestone_or_a_chunk_boundary():
    """L2_ACK_INTERVAL 3000: no ACK before 3000 bytes, then one for every packet (ns-3 sets the
    milestone back to one interval on each packet, so once past it, each packet passes it); with
    a large interval, ACKs at the 4000-byte chunk boundaries only."""
    for interval, acked in ((3000, list(range(3000, 8001, 1000))), (100_000, [4000, 8000])):
        k = _hosts(l2_ack_interval=interval)
        assert k.P.ack_interval == interval and k.P.chunk == 4000
        got = []
        for i in range(8):
            A = k.A
            A["p_busy"][port_of(k.topo, 1, 2)] = 0
            p = _data(k, 1000 * i)
            inuse = int(A["cnt"][C_INUSE])
            _receive(k.S, k.P, p, (i + 1) * US)
            if A["cnt"][C_INUSE] == inuse:  # the packet lives on as an ACK
                got.append(int(A["pk_seq"][p]))
        assert got == acked


def test_a_gap_is_nacked_once_per_nack_interval():
    k = _hosts()
    A, P = k.A, k.P
    nic = port_of(k.topo, 1, 2)
    _receive(k.S, P, _data(k, 0), 1 * US)  # expected 1000 now
    A["p_busy"][nic] = 0
    p = _data(k, 3000)
    _receive(k.S, P, p, 2 * US)
    assert (A["pk_type"][p], A["pk_seq"][p]) == (PK_NACK, 1000)
    assert A["rx_expected"][Q] == 1000 and A["cnt"][C_NACKS] == 1
    assert A["rx_nack_ps"][Q] == 2 * US + P.nack_ps and P.nack_ps == 500 * US
    inuse = int(A["cnt"][C_INUSE])
    _receive(k.S, P, _data(k, 4000), 3 * US)  # same expected byte, within the interval
    assert A["cnt"][C_NACKS] == 1 and A["cnt"][C_INUSE] == inuse
    A["p_busy"][nic] = 0
    _receive(k.S, P, _data(k, 5000), 2 * US + P.nack_ps)  # the interval is over
    assert A["cnt"][C_NACKS] == 2
    A["p_busy"][nic] = 0
    _receive(k.S, P, _data(k, 1000), 600 * US)  # the gap filled...
    A["p_busy"][nic] = 0
    _receive(k.S, P, _data(k, 7000), 601 * US)  # ...a new gap: NACKed at once
    assert A["cnt"][C_NACKS] == 3 and A["rx_last_nack"][Q] == 2000


def test_a_duplicate_is_dropped():
    k = _hosts()
    A = k.A
    _receive(k.S, k.P, _data(k, 0), 1 * US)
    A["p_busy"][port_of(k.topo, 1, 2)] = 0
    inuse = int(A["cnt"][C_INUSE])
    _receive(k.S, k.P, _data(k, 0), 2 * US)
    assert A["cnt"][C_INUSE] == inuse and A["rx_expected"][Q] == 1000


def _to_sender(k: Kit, typ: int, seq: int, cnp: bool = False, now: int = 10 * US) -> None:
    p = alloc(k, type=typ, flow=Q, seq=seq, cnp=int(cnp), size=88)
    _receive(k.S, k.P, p, now)


def test_acks_advance_una_and_a_nack_goes_back_to_it():
    k = _hosts()
    A = k.A
    A["qp_nxt"][Q] = 9000
    A["p_busy"][port_of(k.topo, 0, 2)] = 1  # keep the sender's NIC quiet
    _to_sender(k, PK_ACK, 3000)
    assert A["qp_una"][Q] == 3000 and A["qp_nxt"][Q] == 9000
    _to_sender(k, PK_ACK, 2000)  # older: snd_una never goes back
    assert A["qp_una"][Q] == 3000
    _to_sender(k, PK_NACK, 3000)
    assert A["qp_una"][Q] == 3000 and A["qp_nxt"][Q] == 3000  # go-back-N


def test_the_last_ack_finishes_the_flow_and_stops_dcqcns_timers():
    k = _hosts("dcqcn", size=5000)
    A = k.A
    A["qp_nxt"][Q] = 5000
    _to_sender(k, PK_ACK, 2000, cnp=True)
    assert A["cnt"][C_CNP] == 1 and A["m_first"][Q] == 0  # the CNP reached DCQCN
    gens = (int(A["g_alpha"][Q]), int(A["g_dec"][Q]), int(A["g_rp"][Q]))
    _to_sender(k, PK_ACK, 5000, now=20 * US)
    assert A["qp_done"][Q] == 1
    assert A["g_finish_ps"][A["qp_node"][Q]] == 20 * US
    assert (A["g_alpha"][Q], A["g_dec"][Q], A["g_rp"][Q]) == tuple(g + 1 for g in gens)
    _to_sender(k, PK_ACK, 5000, cnp=True, now=30 * US)  # late: ignored
    assert A["cnt"][C_CNP] == 1


def test_cnp_flags_go_to_dcqcn_only():
    k = _hosts("hpcc")
    A = k.A
    A["qp_nxt"][Q] = 5000
    _to_sender(k, PK_ACK, 1000, cnp=True)
    assert A["cnt"][C_CNP] == 0 and A["m_first"][Q] == 1
