"""Flow skips: Wormhole fast-forward one flow at a time (``WormholeSpec.skip_unit="flow"``).

A partition is skipped only once *every* flow that shares a port with it, directly or through
others, is steady, and any of them starting or finishing re-forms it and restarts its window. On
workloads without repeated contention patterns and with many flows per partition (a random
permutation on a k=8 fat-tree: components of up to 38 flows, a finish every 40 µs) that leaves
little to skip. A flow skip takes one flow out of the packet simulation while its own window is
steady and its neighbours keep running packet by packet:

* **Skip.** The flow is credited its window's mean delivered rate R times the skip
  (:func:`~.skip.credit`); its sender stops sending new packets (its pacing
  time is ``NEVER``, which its congestion control's rate changes leave alone) and its own timers
  (DCQCN's) move by the skip. Its packets in flight drain normally. The skip is planned to end
  when the flow has its tail (``tail_rtts``) left (``EV_FLAND``).
* **Phantom load.** While skipped the flow's data still crosses its route as a fluid: each hop
  of its data route carries R on the wire (headers included) from the moment its last packet
  leaves that hop until its first packet after the skip reaches it
  (:mod:`~.flowphantom`), and its ACK route carries its ACKs
  (``ph_rate_bps``, as for skipped partitions). A real packet on such a port takes its
  serialization time stretched by 1 / (1 - phantom / line rate), and the port's INT byte
  counter counts the phantom bytes, so HPCC sees the utilisation the flow would cause.
* **Roll-back.** A flow starting or finishing on a port of a skipped flow's data route changes
  its bottleneck: the skip is rolled back to that moment (only the bytes of the elapsed time are
  kept) and the flow resumes packet by packet. The planned landing, still in the heap, is then
  dropped unseen by the event loop (:func:`live_events`).
* **Landing.** The sender resumes at its congestion control's rate; HPCC's INT history is
  reset (its first ACK seeds it again, as at a flow's start: the history is stale by the skip
  and its counters may have wrapped); the flow needs a new window to be skipped again.

No memoization and no shadow partitions in this mode: their unit is the partition. Not under
TIMELY (``WormholeSpec.check_cc``): a phantom load adds no queueing delay.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet import calls
from wormsim.netsim.packet.cc import cc_resume
from wormsim.netsim.packet.core import push
from wormsim.netsim.packet.nic import NEVER, nic_update_next_avail
from wormsim.netsim.packet.state import (
    C_FS_LIVE,
    C_FS_PEND,
    C_HEAPN,
    C_WH_BACKS,
    C_WH_BYTES,
    C_WH_NACT,
    C_WH_SKIPS,
    C_WH_STEADY,
    EV_FLAND,
)
from wormsim.netsim.packet.wormhole import calls as wh_calls
from wormsim.netsim.packet.wormhole.fields import PHANTOM_ARMED, PHANTOM_OFF, PHANTOM_ON
from wormsim.netsim.packet.wormhole.flowphantom import data_load
from wormsim.netsim.packet.wormhole.skip import credit, keep_credit, shift_mask, tail_margin
from wormsim.netsim.packet.wormhole.steady import sample_rates, window_stats
from wormsim.netsim.packet.wormhole.tunnel import phantom_off_qp, phantom_on_qp
from wormsim.units import BPS_PER_BYTE_PER_PS, PS_PER_NS

__all__ = [
    "fs_on_start",
    "fs_on_change",
    "fs_sample",
    "fs_land",
    "fs_stale",
    "live_events",
]

_M24 = (1 << 24) - 1


@njit(cache=True)
def _phantom_on(S, P, q, now):
    """Skipped QP ``q`` loads its routes: its data on every hop once its last packet has left
    it (:mod:`~.flowphantom`), its ACKs on its ACK route now."""
    R = S.wh_rate_Bpps[q]
    for j in range(S.r_off[2 * q], S.r_off[2 * q + 1]):
        if S.fs_pon[j] == PHANTOM_ON:  # still on from its last skip: its packets since are too few
            data_load(S, S.r_ports[j], -S.fs_data_bps[q], now)
        S.fs_pon[j] = PHANTOM_OFF
        S.fs_nport[S.r_ports[j]] += 1
    S.fs_data_bps[q] = R * BPS_PER_BYTE_PER_PS * (P.mtu + P.hdr_bytes + P.int_bytes) / P.mtu
    S.fs_last[q] = S.qp_nxt[q]
    S.fs_first[q] = -1
    for j in range(S.r_off[2 * q], S.r_off[2 * q + 1]):
        if S.fs_seen[j] >= S.fs_last[q]:
            data_load(S, S.r_ports[j], S.fs_data_bps[q], now)
            S.fs_pon[j] = PHANTOM_ON
        else:
            S.fs_pon[j] = PHANTOM_ARMED
    phantom_on_qp(S, P, q)


@njit(cache=True)
def _phantom_off(S, P, q, now):
    """QP ``q``'s skip ends: its data load leaves each hop as its next packet reaches it (one
    still waiting for its last packet is cancelled), its ACK load now."""
    S.fs_first[q] = S.qp_nxt[q]
    for j in range(S.r_off[2 * q], S.r_off[2 * q + 1]):
        if S.fs_pon[j] == PHANTOM_ARMED:
            S.fs_pon[j] = PHANTOM_OFF
        S.fs_nport[S.r_ports[j]] -= 1
    phantom_off_qp(S, q)


@njit(cache=True)
def _shift_timers(S, P, q, dt):
    """Move QP ``q``'s own pending events (DCQCN's timers) by ``dt`` ps."""
    mask = S.wh_mask
    mask[P.n_ports + q] = True
    shift_mask(S, mask, dt)
    mask[P.n_ports + q] = False


@njit(cache=True)
def _window_reset(S, q):
    """QP ``q`` needs a new window: the next sample only sets the baseline."""
    S.wh_n[q] = -1
    S.wh_last[q] = S.qp_una[q]
    S.wh_tlast_ps[q] = S.wh_tack_ps[q]


@njit(cache=True)
def _skip(S, P, q, R, now):
    """Skip QP ``q`` at delivered rate ``R`` (bytes/ps) until its tail; True if it did."""
    rem = S.qp_size[q] - S.qp_una[q]
    dt = (rem - tail_margin(S, P, q, R)) / R
    if dt < P.wh_min_skip_ps:
        return False
    dti = (int(dt) // PS_PER_NS) * PS_PER_NS
    got = credit(S, P, q, R * dti)
    if got <= 0:
        return False
    S.wh_rate_Bpps[q] = R
    S.fs_t0_ps[q] = now
    S.fs_t1_ps[q] = now + dti
    S.fs_gen[q] += 1
    push(S, now + dti, EV_FLAND, (S.fs_gen[q] << 24) | q, -1)
    S.cnt[C_FS_PEND] += 1
    S.cnt[C_FS_LIVE] += 1
    S.qp_next_avail_ps[q] = NEVER
    _shift_timers(S, P, q, dti)
    _phantom_on(S, P, q, now)
    S.cnt[C_WH_SKIPS] += 1
    S.cnt[C_WH_STEADY] += 1
    S.cnt[C_WH_BYTES] += got
    return True


@njit(cache=True)
def _resume(S, P, q, now):
    """End QP ``q``'s skip at ``now``: phantom off, sender back, a new window."""
    _phantom_off(S, P, q, now)
    S.cnt[C_FS_LIVE] -= 1
    S.fs_t0_ps[q] = -1
    S.fs_t1_ps[q] = -1
    cc_resume(S, P, q)  # HPCC seeds its INT history again
    S.qp_next_avail_ps[q] = now
    nic = S.qp_nic[q]
    nic_update_next_avail(S, nic, now, now)
    calls.nic_dequeue(S, P, nic, now)
    _window_reset(S, q)


@njit(cache=True, inline="always")
def fs_stale(S, arg):
    """Whether landing event ``arg`` belongs to a skip already rolled back."""
    q = arg & _M24
    return (arg >> 24) != S.fs_gen[q] or S.fs_t1_ps[q] < 0


@njit(cache=True, inline="always")
def live_events(S):
    """Pending events that can still act: the heap's, less the landings of rolled-back skips
    (which the event loop drops unseen, so that they neither keep the samplers running nor move
    the clock)."""
    return S.cnt[C_HEAPN] - (S.cnt[C_FS_PEND] - S.cnt[C_FS_LIVE])


@njit(cache=True)
def fs_land(S, P, arg, now):
    """``EV_FLAND``: a flow skip reached its planned end."""
    _resume(S, P, arg & _M24, now)


@njit(cache=True)
def _skip_back(S, P, q, now):
    """Roll QP ``q``'s skip back to ``now``: keep the bytes of the elapsed time only."""
    rem = (S.fs_t1_ps[q] - now) // PS_PER_NS * PS_PER_NS
    elapsed = S.fs_t1_ps[q] - rem - S.fs_t0_ps[q]
    keep_credit(S, P, q, S.wh_rate_Bpps[q] * elapsed)
    if rem > 0:
        _shift_timers(S, P, q, -rem)
    S.cnt[C_WH_BACKS] += 1
    _resume(S, P, q, now)


@njit(cache=True)
def fs_on_change(S, P, q, now):
    """QP ``q`` starts or finishes: roll back every flow skip sharing a port of its data route.

    The ports are marked in ``fs_mark``, not in ``wh_mask``: a roll-back shifts the flow's own
    timers back through ``wh_mask``, and ports marked there had their pending events (packets on
    their links, transmissions) moved back in time with them."""
    mask = S.fs_mark
    hit = False
    for j in range(S.r_off[2 * q], S.r_off[2 * q + 1]):
        port = S.r_ports[j]
        if S.fs_nport[port] > 0:
            mask[port] = True
            hit = True
    if not hit:
        return
    for i in range(S.cnt[C_WH_NACT]):
        f = S.wh_act[i]
        if f == q or S.fs_t1_ps[f] <= now:
            continue
        for j in range(S.r_off[2 * f], S.r_off[2 * f + 1]):
            if mask[S.r_ports[j]]:
                _skip_back(S, P, f, now)
                break
    for j in range(S.r_off[2 * q], S.r_off[2 * q + 1]):
        mask[S.r_ports[j]] = False


@njit(cache=True)
def fs_on_start(S, P, q, now):
    """A network flow is released: it joins the active list with an empty window."""
    S.wh_act[S.cnt[C_WH_NACT]] = q
    S.cnt[C_WH_NACT] += 1
    _window_reset(S, q)
    wh_calls.fs_on_change(S, P, np.int64(q), now)


@njit(cache=True)
def fs_sample(S, P, now):
    """The sampler of flow skips: drop finished flows, sample every flow not skipped, skip those
    whose window is steady."""
    act = S.wh_act
    n = 0
    for i in range(S.cnt[C_WH_NACT]):
        q = act[i]
        if not S.qp_done[q]:
            act[n] = q
            n += 1
    S.cnt[C_WH_NACT] = n
    for i in range(n):
        q = act[i]
        if S.fs_t1_ps[q] >= 0 or not sample_rates(S, P, q):
            continue
        if not P.wh_ff:
            continue
        steady, R = window_stats(S, P, q)
        if steady and R > 0.0:
            _skip(S, P, q, R, now)
