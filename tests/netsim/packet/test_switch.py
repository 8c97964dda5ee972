"""The switch (``switch.py``) against HPCC ns-3's ``SwitchMmu`` and ``SwitchNode``:

* ECN at dequeue (``ShouldSendCN``): with ``q`` the data queue's bytes after the packet left, no
  mark for ``q <= Kmin``, always for ``q > Kmax``, else with probability
  ``Pmax (q - Kmin) / (Kmax - Kmin)``; data packets only.
* MMU accounting per ingress port and the dynamic PFC threshold
  ``(buffer - headroom_total - reserve_total - shared_used) >> shift``: pause when the ingress
  port's shared bytes reach it or it uses headroom, resume when headroom is empty and its shared
  bytes are 0 or ``resume_offset`` below the threshold, drop when headroom is full; mirrored by a
  small Python model written from ``switch-mmu.cc``.
* No switch ever holds more than its buffer (with PFC, without PFC).
* INT stamping at dequeue for HPCC.
* The per-port constants ``build_state`` derives as ns-3's ``third.cc`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from numba import njit

from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.engine import init_kernel, run_kernel
from wormsim.netsim.packet.state import C_DROPS, C_ECN, C_HEAPN, C_INUSE, PK_ACK, PK_DATA, PK_PFC
from wormsim.netsim.packet.switch import switch_dequeue, switch_receive

from ._kit import US, Kit, alloc, kit, port_of

NEVER = np.iinfo(np.int64).max


@njit
def _mark_trials(S_, P_, port, p, size, behind, n):
    """Dequeue packet ``p`` (``size`` bytes, ``behind`` more bytes queued after it) ``n`` times
    from a fresh queue; returns how often it left ECN-marked."""
    S = S_
    P = st.raw_params(P_)
    node = S.p_node[port]
    marks = 0
    for _ in range(n):
        S.pk_ecn[p] = 0
        S.pk_next[p] = -1
        S.pk_nhop[p] = 0
        S.ql_head[port] = p
        S.ql_tail[port] = p
        S.ql_bytes[port] = size + behind
        S.sw_used[node] = size + behind
        S.lk_head[port] = -1
        S.lk_tail[port] = -1
        S.p_pend[port] = 0
        S.cnt[C_HEAPN] = 0
        switch_dequeue(S, P, port, 0)
        marks += S.pk_ecn[p]
    return marks


@njit
def _receive(S_, P_, p, in_port, now):
    switch_receive(S_, st.raw_params(P_), p, in_port, now)


@njit
def _dequeue(S_, P_, port, now):
    switch_dequeue(S_, st.raw_params(P_), port, now)


# ---- ECN ------------------------------------------------------------------------------------


def _ecn_kit(cc: str = "dcqcn") -> tuple[Kit, int, int]:
    """star(2), PFC off (the marking alone), egress port switch -> host 1 and a data packet."""
    k = kit(cc, pfc_enabled=False)
    eg = port_of(k.topo, 2, 1)
    p = alloc(k, type=PK_DATA, flow=0, size=1048, inport=port_of(k.topo, 2, 0))
    return k, eg, p


def test_the_ecn_thresholds_are_the_ns3_maps():
    """KMIN 400 KB, KMAX 1600 KB, PMAX 0.2 at 100G (KB of 1000 bytes, as ``ConfigEcn``); DCTCP
    marks at 300 KB with probability 1."""
    k, eg, _ = _ecn_kit()
    assert (k.A["kmin"][eg], k.A["kmax"][eg], k.A["pmax"][eg]) == (400_000, 1_600_000, 0.2)
    k, eg, _ = _ecn_kit("dctcp")
    assert (k.A["kmin"][eg], k.A["kmax"][eg], k.A["pmax"][eg]) == (300_000, 300_000, 1.0)


@pytest.mark.parametrize("behind", [0, 1048, 200_000, 399_999, 400_000])
def test_no_mark_up_to_kmin(behind: int):
    k, eg, p = _ecn_kit()
    assert _mark_trials(k.S, k.P, eg, p, 1048, behind, 2000) == 0
    assert k.A["cnt"][C_ECN] == 0 and k.A["ecn_marked"][eg] == 0


@pytest.mark.parametrize("behind", [1_600_001, 2_000_000, 30_000_000])
def test_always_a_mark_above_kmax(behind: int):
    k, eg, p = _ecn_kit()
    assert _mark_trials(k.S, k.P, eg, p, 1048, behind, 2000) == 2000
    assert k.A["cnt"][C_ECN] == 2000 and k.A["ecn_marked"][eg] == 2000


@pytest.mark.parametrize("behind", [400_001, 600_000, 1_000_000, 1_400_000, 1_600_000])
def test_between_kmin_and_kmax_the_mark_probability_is_linear(behind: int):
    """The fraction of marks over 40 000 trials is within 5 sigma of Pmax (q - Kmin) / (Kmax -
    Kmin); at q = Kmax it is Pmax, not 1 (ns-3 compares with >)."""
    k, eg, p = _ecn_kit()
    n = 40_000
    prob = 0.2 * (behind - 400_000) / (1_600_000 - 400_000)
    marks = _mark_trials(k.S, k.P, eg, p, 1048, behind, n)
    sigma = math.sqrt(n * prob * (1 - prob))
    assert abs(marks - n * prob) <= 5 * sigma + 1


def test_dctcp_marks_as_a_step_at_k():
    k, eg, p = _ecn_kit("dctcp")
    assert _mark_trials(k.S, k.P, eg, p, 1048, 300_000, 500) == 0
    assert _mark_trials(k.S, k.P, eg, p, 1048, 300_001, 500) == 500


def test_only_data_packets_are_marked_and_only_with_ecn_on():
    k, eg, p = _ecn_kit()
    k.A["pk_type"][p] = PK_ACK
    assert _mark_trials(k.S, k.P, eg, p, 88, 5_000_000, 100) == 0
    k.A["pk_type"][p] = PK_DATA
    assert _mark_trials(k.S, k.params(ecn_on=False), eg, p, 1048, 5_000_000, 100) == 0


# ---- INT --------------------------------------------------------------------------------------


def test_hpcc_stamps_int_at_dequeue():
    """Hop record ``nhop % 5``: time in ns mod 2^24, the port's tx bytes *before* this packet in
    units of 128 x INT_MULTI (mod 2^20), the bytes still queued after it in units of 80 x
    INT_MULTI (mod 2^17), the line rate; then the tx counter counts the packet."""
    k = kit("hpcc", pfc_enabled=False)
    A = k.A
    eg = port_of(k.topo, 2, 1)
    p = alloc(k, type=PK_DATA, flow=0, size=1090, inport=port_of(k.topo, 2, 0), nhop=6)
    tx0 = (3 << 29) + 123_456  # wraps the 20-bit counter at 512-byte units
    A["tx_bytes"][eg] = tx0
    A["ql_head"][eg] = A["ql_tail"][eg] = p
    A["ql_bytes"][eg] = 1090 + 77_777
    A["sw_used"][2] = 1090 + 77_777
    now = 123_456_789_123_456  # ps
    _dequeue(k.S, k.P, eg, now)
    h = 6 % 5
    assert A["pk_nhop"][p] == 7
    assert A["pk_it_ns"][p, h] == (now // 1000) % (1 << 24)
    assert A["pk_ib"][p, h] == (tx0 // 512) % (1 << 20)
    assert A["pk_iq"][p, h] == 77_777 // 320
    assert A["pk_ir_bps"][p, h] == 100_000_000_000
    assert A["tx_bytes"][eg] == tx0 + 1090


# ---- MMU and PFC ----------------------------------------------------------------------------


@dataclass
class Mmu:
    """``SwitchMmu`` of HPCC ns-3 for one switch and the lossless class (a transcription of
    ``switch-mmu.cc``, used as the reference)."""

    buffer: int
    headroom: dict[int, int]
    shift: dict[int, int]
    reserve: int = 4096
    resume_offset: int = 3072
    ing: dict[int, int] = field(default_factory=dict)
    hdrm: dict[int, int] = field(default_factory=dict)
    paused: dict[int, bool] = field(default_factory=dict)
    shared: int = 0

    def threshold(self, port: int) -> int:
        fixed = sum(self.headroom.values()) + self.reserve * len(self.headroom)
        return (self.buffer - fixed - self.shared) >> self.shift[port]

    def shared_used(self, port: int) -> int:
        used = self.ing.get(port, 0)
        return used - self.reserve if used > self.reserve else 0

    def receive(self, port: int, size: int) -> str:
        """``drop``, ``pause`` (admitted, and a pause frame goes out) or ``ok``."""
        hd = self.hdrm.get(port, 0)
        if size + hd > self.headroom[port] and size + self.shared_used(port) > self.threshold(port):
            return "drop"
        new = self.ing.get(port, 0) + size
        if new <= self.reserve:
            self.ing[port] = new
        elif new - self.reserve > self.threshold(port):
            self.hdrm[port] = hd + size
        else:
            self.ing[port] = new
            self.shared += min(size, new - self.reserve)
        if not self.paused.get(port) and (
            self.hdrm.get(port, 0) > 0 or self.shared_used(port) >= self.threshold(port)
        ):
            self.paused[port] = True
            return "pause"
        return "ok"

    def release(self, port: int, size: int) -> bool:
        """A packet from ``port`` left; True if that resumes ``port``."""
        hd, ib = self.hdrm.get(port, 0), self.ing.get(port, 0)
        from_hdrm = min(hd, size)
        from_shared = min(size - from_hdrm, ib - self.reserve if ib > self.reserve else 0)
        self.hdrm[port] = hd - from_hdrm
        self.ing[port] = ib - (size - from_hdrm)
        self.shared -= from_shared
        sh = self.shared_used(port)
        if (
            self.paused.get(port)
            and self.hdrm[port] == 0
            and (sh == 0 or sh + self.resume_offset <= self.threshold(port))
        ):
            self.paused[port] = False
            return True
        return False


def _pfc_kit(shift: int) -> tuple[Kit, Mmu, int, dict[int, int]]:
    """star(3) with a 256 KiB buffer, flows 0 -> 2 and 1 -> 2, the egress to host 2 paused by
    its peer so that everything queues; ingress ports (switch side) -> their QPs."""
    k = kit("dcqcn", pairs=[(0, 2), (1, 2)], n_hosts=3, buffer_size_mb=0.25)
    A = k.A
    sw_ports = [port_of(k.topo, 3, h) for h in range(3)]
    A["pfc_shift"][sw_ports] = shift
    eg = port_of(k.topo, 3, 2)
    A["paused"][eg] = 1
    mmu = Mmu(
        buffer=k.P.buffer,
        headroom={p: 3 * 100_000_000_000 * 1000 // 8 // 1_000_000_000 for p in sw_ports},
        shift=dict.fromkeys(sw_ports, shift),
    )
    assert mmu.headroom == {p: int(A["headroom"][p]) for p in sw_ports}
    return k, mmu, eg, {port_of(k.topo, 3, 0): 0, port_of(k.topo, 3, 1): 1}


def _check_pfc_frame(k: Kit, port: int, pause: bool) -> None:
    f = int(k.A["lk_tail"][port])
    assert k.A["pk_type"][f] == PK_PFC and k.A["pk_cnp"][f] == int(pause)


def _check_accounts(k: Kit, mmu: Mmu, node: int) -> None:
    A = k.A
    for port, used in mmu.ing.items():
        assert A["ing_bytes"][port] == used
        assert A["hdrm_bytes"][port] == mmu.hdrm.get(port, 0) <= mmu.headroom[port]
        assert A["pfc_on"][port] == int(mmu.paused.get(port, False))
    assert A["sw_shared"][node] == mmu.shared
    held = sum(int(A["ing_bytes"][p] + A["hdrm_bytes"][p]) for p in mmu.headroom)
    assert held == sum(int(A["ql_bytes"][p]) for p in mmu.headroom) <= mmu.buffer


@pytest.mark.parametrize("shift", [3, 1])
def test_pfc_pause_resume_and_drop_follow_the_dynamic_threshold(shift: int):
    """Fill from host 0's port until it pauses and then overflows its headroom, then from host
    1's (which pauses earlier: host 0's shared bytes lowered the threshold), then drain; every
    step equals the ``SwitchMmu`` model, PFC frames included."""
    k, mmu, eg, qps = _pfc_kit(shift)
    A, node = k.A, 3
    size = 1048  # 1000 B payload + 48 B of headers (DCQCN: no INT)
    queued: list[int] = []
    first_pause: dict[int, int] = {}
    now = 0
    for port, count in ((port_of(k.topo, 3, 0), 120), (port_of(k.topo, 3, 1), 120)):
        q = qps[port]
        for i in range(count):
            now += 10 * US  # the port is idle again: a PFC frame leaves at once
            drops = int(A["cnt"][C_DROPS])
            p = alloc(k, type=PK_DATA, flow=q, size=size, route=A["qp_rdata"][q], hop=0)
            _receive(k.S, k.P, p, port, now)
            want = mmu.receive(port, size)
            assert int(A["cnt"][C_DROPS]) - drops == (want == "drop")
            if want == "pause":
                _check_pfc_frame(k, port, True)
                first_pause[port] = i + 1
            if want != "drop":
                queued.append(port)
            _check_accounts(k, mmu, node)
        assert mmu.hdrm.get(port, 0) > 0 and A["cnt"][C_DROPS] > 0  # the scenario went far
    a, b = (port_of(k.topo, 3, h) for h in (0, 1))
    assert first_pause[b] < first_pause[a]
    # drain the egress queue in order: resumes exactly when the model resumes
    A["paused"][eg] = 0
    resumed = set()
    for port in queued:
        now += 10 * US
        _dequeue(k.S, k.P, eg, now)
        if mmu.release(port, size):
            _check_pfc_frame(k, port, False)
            resumed.add(port)
        _check_accounts(k, mmu, node)
    assert resumed == {a, b}
    assert A["ql_bytes"][eg] == 0 and A["sw_shared"][node] == 0


def test_without_pfc_a_full_buffer_drops():
    """PFC off: the switch admits while its whole buffer holds the packet, then drops."""
    k = kit("dcqcn", pfc_enabled=False, buffer_size_mb=0.05)
    A = k.A
    eg, inp = port_of(k.topo, 2, 1), port_of(k.topo, 2, 0)
    A["paused"][eg] = 1
    buffer = int(0.05 * 1024 * 1024)
    fit = buffer // 1048
    for _ in range(fit + 10):
        p = alloc(k, type=PK_DATA, flow=0, size=1048, route=A["qp_rdata"][0], hop=0)
        _receive(k.S, k.P, p, inp, 0)
        assert A["sw_used"][2] == A["ql_bytes"][eg] <= buffer
    assert A["ql_bytes"][eg] == fit * 1048 and A["cnt"][C_DROPS] == 10
    assert A["cnt"][C_INUSE] == fit  # dropped packets went back to the pool


def test_an_incast_never_overfills_a_switch_and_loses_nothing():
    """Eight DCQCN senders into one host, a 512 KiB buffer: after every event, each switch's
    queues hold exactly the bytes its MMU accounts (ingress + headroom), headroom stays within
    its size, the shared counter is the sum of the ports' shared bytes, the total stays within
    the buffer; PFC pauses and nothing is dropped."""
    k = kit("dcqcn", pairs=[(i, 8) for i in range(8)], n_hosts=9, size=100_000, buffer_size_mb=0.5)
    A, S, P = k.A, k.S, k.P
    sw = np.flatnonzero(A["p_sw"])  # the ports of switch 9
    reserve = P.reserve
    init_kernel(S, P, 0)
    status = st.RUN_STOPPED
    while status == st.RUN_STOPPED:
        status = run_kernel(S, P, NEVER, 64, 64, int(A["cnt"][st.C_EVENTS]) + 1)
        ing, hd = A["ing_bytes"][sw], A["hdrm_bytes"][sw]
        assert (hd <= A["headroom"][sw]).all()
        assert ing.sum() + hd.sum() == A["ql_bytes"][sw].sum() <= P.buffer
        assert A["sw_shared"][9] == np.maximum(ing - reserve, 0).sum()
    assert status == st.RUN_FINISHED
    assert A["qp_done"].all() and A["cnt"][C_DROPS] == 0
    assert A["cnt"][st.C_PFC] > 0


# ---- per-port constants -------------------------------------------------------------------------


def test_build_state_derives_headroom_shift_and_ecn_per_port_as_third_cc():
    """headroom = 3 x rate x delay(ns) / 8 / 10^9 bytes; the PFC shift starts at 3 and drops by
    one per doubling of the port rate above the NIC rate; the fixed part of the buffer is every
    port's headroom + reserve; ECN thresholds by port rate."""
    topo = Topology.from_links(
        5,
        [2, 3],
        [
            (0, 2, 100e9, 1_000_000),
            (1, 2, 100e9, 1_500_000),
            (2, 3, 400e9, 500_000),
            (4, 3, 100e9, 2_000_000),
        ],
    )
    k = kit("dcqcn", pairs=[(0, 4)], topo=topo)
    A = k.A

    def hdrm(rate: int, delay_ns: int) -> int:
        return rate * delay_ns // 8 // 1_000_000_000 * 3

    want = {  # (switch, peer): headroom, shift, kmin
        (2, 0): (hdrm(100_000_000_000, 1000), 3, 400_000),
        (2, 1): (hdrm(100_000_000_000, 1500), 3, 400_000),
        (2, 3): (hdrm(400_000_000_000, 500), 1, 1_600_000),
        (3, 2): (hdrm(400_000_000_000, 500), 1, 1_600_000),
        (3, 4): (hdrm(100_000_000_000, 2000), 3, 400_000),
    }
    for (a, b), (h, s, kmin) in want.items():
        p = port_of(topo, a, b)
        assert (A["headroom"][p], A["pfc_shift"][p], A["kmin"][p]) == (h, s, kmin)
    for node in (2, 3):
        fixed = sum(h + 4096 for (a, _), (h, _, _) in want.items() if a == node)
        assert A["sw_fixed"][node] == fixed
