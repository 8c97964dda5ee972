"""Host receive path: data -> ACK/NACK (go-back-N receiver), ACK/NACK -> sender QP and CC.

As ``RdmaHw::ReceiveUdp``/``ReceiveAck`` of HPCC ns-3: an ACK (or NACK for a gap, at most one per
NACK interval for the same expected sequence) carries the next expected sequence, the data
packet's INT (or timestamp) and a CNP flag if the data packet was ECN-marked. The sender's
completion time (``fct``) is when the ACK covering the last byte arrives.
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet import calls
from wormsim.netsim.packet.cc import cc_on_ack, cc_on_finish
from wormsim.netsim.packet.core import pkt_free
from wormsim.netsim.packet.state import C_NACKS, PK_ACK, PK_DATA, PK_NACK
from wormsim.netsim.packet.switch import enqueue_hi
from wormsim.netsim.packet.wormhole import hooks

__all__ = ["host_receive", "receive_ack"]


@njit(cache=True)
def _receive_data(S, P, p, now):
    q = S.pk_flow[p]
    S.rx_milestone[q] = P.ack_interval
    seq = S.pk_seq[p]
    exp = S.rx_expected[q]
    x = 0
    if seq == exp:
        exp += S.pk_payload[p]
        S.rx_expected[q] = exp
        if exp >= S.rx_milestone[q]:
            S.rx_milestone[q] += P.ack_interval
            x = 1
        elif exp % P.chunk == 0:
            x = 1
    elif seq > exp:
        if now >= S.rx_nack_ps[q] or S.rx_last_nack[q] != exp:
            S.rx_nack_ps[q] = now + P.nack_ps
            S.rx_last_nack[q] = exp
            x = 2
            S.cnt[C_NACKS] += 1
    if x == 0:
        pkt_free(S, p)
        return
    # reuse the data packet as its ACK (INT and timestamp carried over)
    S.pk_type[p] = PK_ACK if x == 1 else PK_NACK
    S.pk_seq[p] = S.rx_expected[q]
    S.pk_cnp[p] = S.pk_ecn[p]
    S.pk_ecn[p] = 0
    S.pk_size[p] = P.ack_bytes
    S.pk_payload[p] = 0
    S.pk_route[p] = S.qp_rack[q]
    S.pk_hop[p] = 0
    port = S.r_ports[S.qp_rack[q]]
    if hooks.packet_at_port(S, P, port, p, now):
        return  # this NIC sends a skipped partition's data: tunnelled past its frozen queue
    enqueue_hi(S, port, p)
    calls.nic_dequeue(S, P, port, now)


@njit(cache=True)
def receive_ack(S, P, p, now):
    """An ACK or NACK reached its sender: the QP's acked bytes, its completion, its congestion
    control, and its NIC's next packet."""
    q = S.pk_flow[p]
    if S.qp_done[q]:
        pkt_free(S, p)
        return
    seq = S.pk_seq[p]
    if hooks.ack_at_sender(S, P, q, seq, now):
        pkt_free(S, p)  # stale
        return
    if seq > S.qp_una[q]:
        S.qp_una[q] = seq
    if S.qp_una[q] >= S.qp_size[q]:
        S.qp_done[q] = 1
        hooks.flow_finish(S, P, q, now)
        cc_on_finish(S, P, q)
        calls.finish_node(S, P, S.qp_node[q], now)
    if S.pk_type[p] == PK_NACK:
        S.qp_nxt[q] = S.qp_una[q]
    if not S.qp_done[q]:
        cc_on_ack(S, P, q, p, now)
    pkt_free(S, p)
    calls.nic_dequeue(S, P, S.qp_nic[q], now)


@njit(cache=True)
def host_receive(S, P, p, now):
    """A data, ACK or NACK packet reached its destination host."""
    if hooks.is_ghost(S, P, p):
        pkt_free(S, p)
    elif S.pk_type[p] == PK_DATA:
        calls.receive_data(S, P, p, now)
    elif not hooks.ack_held(S, P, p, now):
        calls.receive_ack(S, P, p, now)
