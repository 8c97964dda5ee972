"""The event loop of the packet engine.

:func:`run_kernel` processes events up to ``t_stop`` (ps) and returns a status (named in
:mod:`~wormsim.netsim.packet.state`) so Python can show progress, take a Ctrl-C or grow the packet
pool / heap between calls: ``RUN_FINISHED`` (no events left), ``RUN_STOPPED`` (reached ``t_stop``
or the call's event budget ``ev_stop``), ``RUN_NEEDS_ROOM`` (more pool or heap capacity needed;
nothing was lost, grow and call again), ``RUN_MEMO_PENDING`` (Wormhole memo work is pending:
partitions to look up or transients to store; serve it with
:class:`~wormsim.netsim.wormhole.bridge.MemoBridge` and call again).

A congestion control's timers are one event type, ``EV_CC``, whose arg carries the control's own
sub-code (``state.CC_SUB_BITS``): the loop hands both to ``cc.cc_on_timer`` and names no control.

The loop is physics: Wormhole acts in it only through the hooks of
:mod:`~wormsim.netsim.packet.wormhole.hooks` (its sampler's start, its room in the heap, stale
landings, parked events), and every Wormhole event type (``typ >= EV_FIRST_WH``) goes to one of
them, :func:`~wormsim.netsim.packet.wormhole.hooks.wh_event`. Wormhole's entry points called
between loop calls are in :mod:`wormsim.netsim.packet.wormhole.entry`.
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet import calls
from wormsim.netsim.packet.cc import cc_on_timer, cc_rate
from wormsim.netsim.packet.core import pkt_free, port_free, push, sw_kick
from wormsim.netsim.packet.dag_exec import (
    start_roots,
)
from wormsim.netsim.packet.heap import heap_pop, heap_replace_top
from wormsim.netsim.packet.host import host_receive
from wormsim.netsim.packet.state import (
    C_CURSEQ,
    C_EVENTS,
    C_FREE,
    C_HEAPN,
    C_MONLOST,
    C_MONQ,
    C_MONR,
    C_NOW,
    C_PFC,
    C_RESUMES,
    CC_SUB_BITS,
    CC_SUB_MASK,
    EV_ARRIVE,
    EV_CC,
    EV_DAGDONE,
    EV_FIRST_WH,
    EV_FLUID,
    EV_NICWAKE,
    EV_QPSTART,
    EV_SAMPLE,
    EV_TXDONE,
    PK_PFC,
    RUN_FINISHED,
    RUN_MEMO_PENDING,
    RUN_NEEDS_ROOM,
    RUN_STOPPED,
    raw_params,
)
from wormsim.netsim.packet.wormhole import hooks

__all__ = ["run_kernel", "init_kernel", "arrive"]

_M24 = (1 << 24) - 1


@njit(cache=True)
def init_kernel(S, P_, now):
    """Release the DAG roots and start the samplers (call once before :func:`run_kernel`)."""
    P = raw_params(P_)
    start_roots(S, P, now)
    if P.sample_ps > 0:
        push(S, now, EV_SAMPLE, 0, -1)
    hooks.kernel_start(S, P, now)


@njit(cache=True)
def _sample(S, P, now):
    n = S.mr_t_ps.shape[0]
    for q in range(S.qp_size.shape[0]):
        if S.qp_start_ps[q] >= 0 and not S.qp_done[q]:
            k = S.cnt[C_MONR]
            if k < n:
                S.mr_t_ps[k] = now
                S.mr_f[k] = q
                S.mr_r_bps[k] = cc_rate(S, P, q)
                S.cnt[C_MONR] = k + 1
            else:
                S.cnt[C_MONLOST] += 1
    m = S.mq_t_ps.shape[0]
    for i in range(S.mq_ports.shape[0]):
        port = S.mq_ports[i]
        k = S.cnt[C_MONQ]
        if k < m:
            S.mq_t_ps[k] = now
            S.mq_p[k] = port
            S.mq_b[k] = S.qh_bytes[port] + S.ql_bytes[port]
            S.cnt[C_MONQ] = k + 1
        else:
            S.cnt[C_MONLOST] += 1
    if hooks.live_events(S) > 0:
        push(S, now + P.sample_ps, EV_SAMPLE, 0, -1)


@njit(cache=True)
def arrive(S, P, p, port, now):
    """Packet ``p`` arrived at the far end of the link out of ``port``: a PFC frame pauses or
    resumes the port, any other packet enters the peer switch or host."""
    peer = S.p_peer[port]
    if S.pk_type[p] == PK_PFC:
        up = S.p_rev[port]
        if S.pk_cnp[p]:
            if S.paused[up] == 0:
                S.pfc_since_ps[up] = now
            S.paused[up] = 1
            hooks.port_paused(S, P, up, now)
            S.pfc_rx[up] += 1
            S.cnt[C_PFC] += 1
        else:
            if S.paused[up]:
                S.pfc_paused_ps[up] += now - S.pfc_since_ps[up]
                S.pfc_since_ps[up] = -1
            S.paused[up] = 0
            S.cnt[C_RESUMES] += 1
            if S.p_sw[up]:
                if port_free(S, up, now):
                    calls.switch_dequeue(S, P, up, now)
            elif S.p_busy[up] == 0:
                calls.nic_dequeue(S, P, up, now)
        pkt_free(S, p)
    elif S.is_sw[peer]:
        calls.switch_receive(S, P, p, S.p_rev[port], now)
    else:
        host_receive(S, P, p, now)


@njit(cache=True)
def run_kernel(S, P_, t_stop, pool_margin, heap_margin, ev_stop):
    """Process events with time <= ``t_stop`` until the event counter reaches ``ev_stop`` (both
    return ``RUN_STOPPED``; the next call carries on exactly where this one stopped); see the
    module docstring for the status."""
    P = raw_params(P_)
    ht = S.ht_ps
    cap = ht.shape[0] - hooks.heap_reserve(S, P)
    while S.cnt[C_HEAPN] > 0:
        if S.cnt[C_FREE] < pool_margin or S.cnt[C_HEAPN] > cap - heap_margin:
            return RUN_NEEDS_ROOM
        if hooks.drop_stale(S, P):
            continue
        if ht[0] > t_stop or S.cnt[C_EVENTS] >= ev_stop:
            return RUN_STOPPED
        now = ht[0]
        if hooks.parked_only(S, P, now):
            return RUN_FINISHED
        e = S.he[0]
        o = S.ho[0]
        S.cnt[C_CURSEQ] = S.hs[0]
        typ = e & 0xFF
        arg = e >> 8
        if typ == EV_ARRIVE:
            # link_pop fused with the pop: the link's next packet in flight, if any, replaces
            # the top of the heap in one pass (pop order is (time, seq) either way)
            nx = S.pk_next[arg]
            S.lk_head[o] = nx
            if nx < 0:
                S.lk_tail[o] = -1
                heap_pop(S.cnt, S.ht_ps, S.hs, S.he, S.ho)
            else:
                heap_replace_top(
                    S.cnt,
                    S.ht_ps,
                    S.hs,
                    S.he,
                    S.ho,
                    S.pk_at_ps[nx],
                    S.pk_as[nx],
                    EV_ARRIVE | (nx << 8),
                    o,
                )
        else:
            heap_pop(S.cnt, S.ht_ps, S.hs, S.he, S.ho)
        S.cnt[C_NOW] = now
        S.cnt[C_EVENTS] += 1
        if typ == EV_ARRIVE:
            calls.arrive(S, P, arg, o, now)
        elif typ == EV_TXDONE:
            if S.p_sw[arg]:
                S.p_pend[arg] = 0
                if S.p_free_ps[arg] <= now:
                    calls.switch_dequeue(S, P, arg, now)
                elif S.qh_head[arg] >= 0 or S.ql_head[arg] >= 0:
                    sw_kick(S, arg, now)
            else:
                S.p_busy[arg] = 0
                calls.nic_dequeue(S, P, arg, now)
        elif typ == EV_NICWAKE:
            port = arg & _M24
            if (arg >> 24) == S.nic_wake_g[port]:
                S.nic_wake_ps[port] = -1
                calls.nic_dequeue(S, P, port, now)
        elif typ == EV_CC:
            cc_on_timer(S, P, arg & CC_SUB_MASK, arg >> CC_SUB_BITS, now)
        elif typ == EV_DAGDONE:
            calls.dag_done_event(S, P, arg, now)
        elif typ == EV_FLUID:
            calls.fluid_event(S, P, arg, now)
        elif typ == EV_SAMPLE:
            _sample(S, P, now)
        elif typ == EV_QPSTART:
            calls.qp_start_event(S, P, arg, now)
        elif typ >= EV_FIRST_WH:
            if hooks.wh_event(S, P, typ, arg, now):
                return RUN_MEMO_PENDING
    return RUN_FINISHED
