"""The host NIC (``nic.py``) against HPCC ns-3's ``QbbNetDevice::DequeueAndTransmit``,
``RdmaEgressQueue::GetNextQindex`` and ``RdmaHw::UpdateNextAvail`` / ``ChangeRate``:

* a data packet carries ``min(MTU, bytes left)`` of payload plus 48 bytes of headers and the CC's
  INT bytes; the QP may send again ``size x 8 / R`` later, R its current rate (RATE_BOUND, ns-3
  truncating to whole ns), or the line rate without RATE_BOUND;
* a QP with ``snd_nxt - snd_una >= W`` waits, ``W = W_max x R / R_max`` (VAR_WIN, at least 1
  byte) or ``W_max``;
* ready QPs are served round-robin from the one after the last served; none ready: a wake-up at
  the earliest pacing time;
* the ACK queue goes first, also under PFC pause when ACKs have their own class
  (ACK_HIGH_PRIO);
* a rate change moves the pending pacing time by the difference of the two pacing times.
"""

from __future__ import annotations

import pytest
from numba import njit

from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.nic import NEVER, change_rate, nic_dequeue, qp_window
from wormsim.netsim.packet.state import C_DATA_SENT, EV_ARRIVE, EV_NICWAKE, EV_TXDONE, PK_ACK

from ._kit import NS, US, Kit, alloc, heap_events, kit

LINE = 100e9
NIC = 0  # host 0's port to the switch


@njit
def _dequeue(S_, P_, port, now):
    nic_dequeue(S_, st.raw_params(P_), port, now)


@njit
def _change_rate(S_, P_, q, rate, now):
    change_rate(S_, st.raw_params(P_), q, rate, now)


@njit
def _window(S_, P_, q):
    return qp_window(S_, st.raw_params(P_), q)


def _nic(cc: str = "hpcc", n_qps: int = 1, size: int = 1_000_000, **net) -> Kit:
    k = kit(cc, pairs=[(0, 1)] * n_qps, size=size, **net)
    for q in range(n_qps):
        k.start(q)
        k.nic_add(q)
    return k


def _pace_ps(size: int, rate: float) -> int:
    """ns-3: Seconds(size x 8 / rate), whole ns."""
    return int(size * 8 * 1e9 // rate) * 1000


def _sent(k: Kit) -> int:
    """The packet on host 0's link, as the NIC just started it."""
    return int(k.A["lk_tail"][NIC])


def _ready(k: Kit) -> None:
    """Let the NIC and every QP send now (wire idle, pacing time passed)."""
    k.A["p_busy"][NIC] = 0
    k.A["qp_next_avail_ps"][:] = 0


@pytest.mark.parametrize(("cc", "int_bytes"), [("hpcc", 42), ("dcqcn", 0), ("timely", 8)])
def test_a_data_packet_and_the_next_pacing_time(cc: str, int_bytes: int):
    k = _nic(cc)
    A = k.A
    A["qp_rate_bps"][0] = 37.3e9
    now = 5 * US + 123
    _dequeue(k.S, k.P, NIC, now)
    p = _sent(k)
    size = 1000 + 48 + int_bytes
    assert (A["pk_payload"][p], A["pk_size"][p], A["pk_seq"][p]) == (1000, size, 0)
    assert A["pk_ts_ns"][p] == now // 1000 and A["pk_hop"][p] == 0
    assert A["qp_nxt"][0] == 1000 and A["qp_last_size"][0] == size
    assert A["qp_next_avail_ps"][0] == now + _pace_ps(size, 37.3e9)
    assert A["p_busy"][NIC] == 1 and A["cnt"][C_DATA_SENT] == 1
    tx = (size * 8 * 10**9 // 10**11) * 1000  # serialised at the 100G line rate, whole ns
    assert sorted(heap_events(A)) == [
        (now + tx, EV_TXDONE, NIC, NIC),
        (now + tx + 1 * US, EV_ARRIVE, p, NIC),
    ]
    _dequeue(k.S, k.P, NIC, now + 1)  # busy: nothing more
    assert A["qp_nxt"][0] == 1000


def test_without_rate_bound_pacing_is_at_the_line_rate():
    k = _nic()
    k.A["qp_rate_bps"][0] = 10e9
    _dequeue(k.S, k.params(rate_bound=False), NIC, 0)
    assert k.A["qp_next_avail_ps"][0] == _pace_ps(1090, LINE)


def test_the_last_packet_carries_what_is_left():
    k = _nic(size=2500)
    A = k.A
    for payload in (1000, 1000, 500):
        _ready(k)
        _dequeue(k.S, k.P, NIC, 0)
        assert A["pk_payload"][_sent(k)] == payload
    assert A["qp_nxt"][0] == 2500 and A["pk_size"][_sent(k)] == 500 + 90
    _ready(k)
    _dequeue(k.S, k.P, NIC, 0)  # nothing left
    assert A["cnt"][C_DATA_SENT] == 3


def test_a_paced_qp_waits_and_the_nic_wakes_at_its_time():
    k = _nic()
    A = k.A
    A["qp_next_avail_ps"][0] = 7 * US
    _dequeue(k.S, k.P, NIC, 2 * US)
    assert A["qp_nxt"][0] == 0
    assert heap_events(A) == [(7 * US, EV_NICWAKE, (1 << 24) | NIC, NIC)]
    assert A["nic_wake_ps"][NIC] == 7 * US
    _dequeue(k.S, k.P, NIC, 7 * US)
    assert A["qp_nxt"][0] == 1000


@pytest.mark.parametrize(
    ("var_win", "rate", "window"),
    [
        (True, 100e9, 52_000),
        (True, 37e9, 52_000 * 37 // 100),
        (True, 1e3, 1),
        (False, 37e9, 52_000),
    ],
)
def test_the_window_scales_with_the_rate(var_win: bool, rate: float, window: int):
    """W_max = the largest BDP (52 000 bytes on star(2)); VAR_WIN: W_max R / R_max, >= 1."""
    k = _nic()
    A = k.A
    P = k.params(var_win=var_win)
    A["qp_rate_bps"][0] = rate
    assert _window(k.S, P, 0) == window
    A["qp_una"][0] = 10_000
    A["qp_nxt"][0] = 10_000 + window  # a full window in flight: bound
    _dequeue(k.S, P, NIC, 0)
    assert A["qp_nxt"][0] == 10_000 + window and A["cnt"][C_DATA_SENT] == 0
    A["qp_una"][0] += 1  # one byte acked: it may send
    _dequeue(k.S, P, NIC, 0)
    assert A["cnt"][C_DATA_SENT] == 1


def test_a_qp_without_window_is_never_bound():
    k = _nic("dcqcn")
    A = k.A
    assert k.P.win == 0 and _window(k.S, k.P, 0) == 0
    A["qp_nxt"][0] = 900_000
    _dequeue(k.S, k.P, NIC, 0)
    assert A["cnt"][C_DATA_SENT] == 1


def test_ready_qps_take_turns():
    k = _nic(n_qps=3)
    A = k.A
    order = []
    for _ in range(7):
        _ready(k)
        _dequeue(k.S, k.P, NIC, 0)
        order.append(int(A["pk_flow"][_sent(k)]))
    assert order == [1, 2, 0, 1, 2, 0, 1]  # from the one after the last served (rr = 0)
    # a QP that is not ready is skipped, the turn goes on
    _ready(k)
    A["qp_next_avail_ps"][2] = 5 * US
    _dequeue(k.S, k.P, NIC, 0)
    assert A["pk_flow"][_sent(k)] == 0


def test_finished_qps_leave_the_list():
    k = _nic(n_qps=3)
    A = k.A
    A["qp_una"][1] = A["qp_nxt"][1] = A["qp_size"][1]
    _dequeue(k.S, k.P, NIC, 0)
    base = int(A["nic_off"][NIC])
    assert A["nic_n"][NIC] == 2 and list(A["nic_qps"][base : base + 2]) == [0, 2]


@pytest.mark.parametrize(("cc", "ack_first_when_paused"), [("dcqcn", True), ("hpcc", False)])
def test_acks_go_first_and_under_pause_only_with_their_own_class(
    cc: str, ack_first_when_paused: bool
):
    k = _nic(cc)
    A = k.A
    assert k.P.ack_hi == ack_first_when_paused  # ACK_HIGH_PRIO: 1 for DCQCN, 0 for HPCC
    ack = alloc(k, type=PK_ACK, flow=0, size=88)
    A["qh_head"][NIC] = A["qh_tail"][NIC] = ack
    A["qh_bytes"][NIC] = 88
    A["paused"][NIC] = 1
    _dequeue(k.S, k.P, NIC, 0)
    assert A["qp_nxt"][0] == 0  # data never goes while paused
    if not ack_first_when_paused:
        assert _sent(k) == -1  # nothing: the ACKs share the paused class
        A["paused"][NIC] = 0
        _dequeue(k.S, k.P, NIC, 0)
    assert _sent(k) == ack and A["qh_bytes"][NIC] == 0 and A["qp_nxt"][0] == 0


def test_a_rate_change_moves_the_pacing_time():
    """ChangeRate: next_avail += tx(size, new) - tx(size, old), and a pending wake-up later than
    that is pulled to it."""
    k = _nic()
    A = k.A
    _dequeue(k.S, k.P, NIC, 0)  # one 1090-byte packet at 100G: next at 87 ns
    A["p_busy"][NIC] = 0
    _dequeue(k.S, k.P, NIC, 10 * NS)  # too early: wake-up at 87 ns
    assert A["nic_wake_ps"][NIC] == 87 * NS
    _change_rate(k.S, k.P, 0, 25e9, 20 * NS)
    assert A["qp_rate_bps"][0] == 25e9
    assert A["qp_next_avail_ps"][0] == 87 * NS + _pace_ps(1090, 25e9) - _pace_ps(1090, LINE)
    assert A["nic_wake_ps"][NIC] == 87 * NS  # later pacing: the wake-up stays
    _change_rate(k.S, k.P, 0, 50e9, 30 * NS)
    t = 87 * NS + _pace_ps(1090, 50e9) - _pace_ps(1090, LINE)
    assert A["qp_next_avail_ps"][0] == t
    _change_rate(k.S, k.P, 0, 100e9, 40 * NS)
    assert A["qp_next_avail_ps"][0] == 87 * NS
    # earlier than the wake-up: pulled to it, but not into the past
    _change_rate(k.S, k.P, 0, 200e9, 50 * NS)
    t = 87 * NS + _pace_ps(1090, 200e9) - _pace_ps(1090, LINE)
    assert A["qp_next_avail_ps"][0] == t and A["nic_wake_ps"][NIC] == max(t, 50 * NS)
    # a QP held at NEVER stays there
    A["qp_next_avail_ps"][0] = NEVER
    _change_rate(k.S, k.P, 0, 10e9, 60 * NS)
    assert A["qp_next_avail_ps"][0] == NEVER and A["qp_rate_bps"][0] == 10e9
