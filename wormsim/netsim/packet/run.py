"""Python API of the packet engine: :func:`run_packet`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
import polars as pl

from wormsim.collective.dag import DagArrays
from wormsim.humanize import human_number
from wormsim.memo import MemoSession, MemoStore
from wormsim.netsim.cc_registry import BY_NAME
from wormsim.netsim.cc_registry import SETTINGS as CC_SETTINGS
from wormsim.netsim.common.budget import CallBudget
from wormsim.netsim.common.dag_runtime import dag_runtime_arrays, n_ranks, warm_once
from wormsim.netsim.common.flow_plan import plan_flows
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.routing import pair_rtt_bdp
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import (
    FRAME_HEADER_BYTES,
    INT_HEADER_BYTES,
    PFC_FRAME_BYTES,
    NetworkSpec,
    ack_frame_bytes,
)
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.cc_link import HOOK_FIELDS, hook_addresses
from wormsim.netsim.packet.counters import published
from wormsim.netsim.packet.engine import init_kernel, run_kernel
from wormsim.netsim.packet.fields import STATE_TABLE
from wormsim.netsim.packet.handlers import HANDLER_FIELDS, handler_addresses
from wormsim.netsim.packet.port_outputs import collect as collect_port_outputs
from wormsim.netsim.packet.wormhole.entry import (
    apply_memo_hit,
    materialise_group,
    park_shadow,
    remap_shadow,
)
from wormsim.netsim.packet.wormhole.handlers import WH_HANDLER_FIELDS, wh_handler_addresses
from wormsim.netsim.result import SimResult
from wormsim.netsim.wormhole.bridge import MemoBridge
from wormsim.netsim.wormhole.namespace import memo_namespace
from wormsim.netsim.wormhole.plan import WormholePlan, plan_wormhole
from wormsim.netsim.wormhole.spec import WormholeSpec
from wormsim.units import BITS_PER_BYTE, BPS_PER_BYTE_PER_PS, NS_PER_S, PS_PER_NS, PS_PER_US_F
from wormsim.workload.scale import MEMORY_ENV, EngineBytes, available_memory, resident_bytes

__all__ = ["Monitors", "run_packet", "build_state"]


@dataclass(frozen=True)
class Monitors:
    """Optional sampled monitors (off unless ``period_ps > 0``)."""

    period_ps: int = 0
    queue_ports: tuple[int, ...] = ()
    capacity: int = 1_000_000


def _params(
    net: NetworkSpec,
    topo: Topology,
    sample_ps: int,
    plan: WormholePlan | None = None,
    link: bool = True,
) -> st.Params | st.WhParams:
    """The kernel's scalars: the physics' (:class:`~.state.Params`), and in a Wormhole run
    Wormhole's after them (:class:`~.state.WhParams`, from ``plan``), with (``link``) the
    addresses of the event handlers and the congestion control's hooks (:func:`_linked`)."""
    max_rtt, max_bdp = pair_rtt_bdp(topo, net.payload_size_bytes)
    int_bytes = INT_HEADER_BYTES[net.cc]
    physics = dict(
        cc=BY_NAME[net.cc].code,
        **dict.fromkeys(HOOK_FIELDS, 0),
        **dict.fromkeys(HANDLER_FIELDS, 0),
        int_stamp=BY_NAME[net.cc].int_stamp,
        mtu=net.payload_size_bytes,
        hdr_bytes=FRAME_HEADER_BYTES,
        int_bytes=int_bytes,
        ack_bytes=ack_frame_bytes(int_bytes),
        pfc_bytes=PFC_FRAME_BYTES,
        ack_interval=net.l2_ack_interval,
        chunk=max(net.l2_chunk_size_bytes, 1),
        nack_ps=int(net.nack_interval_us * PS_PER_US_F),
        win=int(max_bdp) if net.has_win else 0,
        base_rtt_ns=int(max(max_rtt, 1)),
        var_win=bool(net.var_win),
        rate_bound=bool(net.rate_bound),
        ack_hi=bool(net.ack_high_prio),
        sw_ack_hi=bool(net.switch_ack_high_prio),
        ecn_on=bool(net.enable_qcn),
        pfc_on=bool(net.pfc_enabled),
        buffer=int(net.buffer_size_mb * 1024 * 1024),
        reserve=net.reserve_bytes,
        resume_off=net.resume_offset_bytes,
        g=float(net.ewma_gain),
        rai_bps=float(net.rate_ai_bps),
        rhai_bps=float(net.rate_hai_bps),
        min_rate_bps=float(net.min_rate_bps),
        **{s.kernel: s.kernel_value(getattr(net, s.field)) for s in CC_SETTINGS},
        trunc_tx=bool(net.ns3_truncate_tx_ns),
        sample_ps=int(sample_ps),
        nvlink_rate_bps=float(topo.nvlink_rate_bps),
        n_ports=topo.n_ports,
    )
    if plan is None:
        P = st.Params(**physics)
    else:
        P = st.WhParams(**physics, **plan.kernel_params(), **dict.fromkeys(WH_HANDLER_FIELDS, 0))
    return _linked(P, net.cc) if link else P


def _linked(P: st.Params | st.WhParams, cc: str) -> st.Params | st.WhParams:
    """``P`` with the addresses of the event handlers (:mod:`~.handlers`; Wormhole's too in a
    Wormhole run, :mod:`~.wormhole.handlers`) and of congestion control ``cc``'s hooks
    (:mod:`~.cc_link`), compiled (or loaded from cache) for its mode."""
    wormhole = isinstance(P, st.WhParams)
    state = st.WORMHOLE_STATE if wormhole else st.PACKET_STATE
    ptype = numba.typeof(P)
    linked = {**hook_addresses(cc, state, ptype), **handler_addresses(state, ptype)}
    if wormhole:
        linked.update(wh_handler_addresses(state, ptype))
    return P._replace(**linked)


#: Route entries per QP (its data and ACK routes' ports) and DAG edges per node: what GPT-175B
#: has (4.0 and 1.8 at 256 GPUs), for :func:`engine_bytes`.
_ROUTE_ENTRIES_PER_QP = 4
_EDGES_PER_NODE = 2


def engine_bytes(net: NetworkSpec, wormhole: WormholeSpec | None = None) -> EngineBytes:
    """The engine state's bytes per QP (one per fabric flow) and per DAG node under ``net`` and
    ``wormhole`` (its window sets the sampler's), counted from the field table: what
    :func:`build_state` will allocate, for an estimate before the DAG exists."""
    wh = plan_wormhole(wormhole, net) if wormhole is not None else None
    none = dict.fromkeys(("heap", "packet", "port", "node", "qp", "wh_qp", "dag_node"), 0)
    none.update(dag_edge=0, rank=0, route_entry=0, monitored_port=0, sample=1)
    none["window"] = wh.window_samples if wh is not None else 1
    empty = STATE_TABLE.nbytes(none)
    qp = {**none, "qp": 1, "wh_qp": int(wh is not None), "route_entry": _ROUTE_ENTRIES_PER_QP}
    node = {**none, "dag_node": 1, "dag_edge": _EDGES_PER_NODE}
    return EngineBytes(
        per_qp=float(STATE_TABLE.nbytes(qp) - empty),
        per_node=float(STATE_TABLE.nbytes(node) - empty),
    )


def _refuse_if_too_big(need: int, n_qps: int, n_nodes: int, wormhole: bool) -> None:
    """Refuse a run whose engine state alone cannot fit in the memory available, before it is
    allocated (a large cluster's QPs in Wormhole mode: 12.4 M at 4,096 GPUs, 1,177 bytes each).

    What the process already holds is counted against a set budget (``WORMSIM_MEMORY_BYTES``,
    ``ulimit -v``); ``MemAvailable`` and the cgroup's figure already leave it out."""
    avail, source = available_memory()
    if avail is None:
        return
    if source in (MEMORY_ENV, "ulimit -v"):
        avail -= resident_bytes()
    if need <= avail:
        return
    mode = "Wormhole" if wormhole else "packet"
    raise NetsimInputError(
        f"the {mode} engine's state for this run needs {_size(need)} ({n_qps:,} QPs, one per "
        f"fabric flow, and {n_nodes:,} DAG nodes), and {_size(max(avail, 0))} is available "
        f"({source}); simulate it in flow mode (--mode flow), on fewer GPUs or with coarser "
        f"flows, or where more memory is free ({MEMORY_ENV} sets what may be used)"
    )


def _size(n: float) -> str:
    return f"{human_number(n / 1e9)} GB" if n >= 1e9 else f"{human_number(n / 1e6)} MB"


def build_state(
    dag: DagArrays,
    topo: Topology,
    net: NetworkSpec,
    *,
    routing: str = "hash",
    seed: int = 0,
    monitors: Monitors | None = None,
    pool: int = 4096,
    heap: int = 8192,
    wormhole: WormholeSpec | None = None,
    wormhole_plan: WormholePlan | None = None,
    link: bool = True,
) -> tuple[dict, st.Params | st.WhParams, np.ndarray, np.ndarray]:
    """Compile the DAG, topology and config into kernel state.

    Returns ``(arrays, params, flow_qp, sport)`` (wrap ``arrays`` with :func:`make_state`):
    ``flow_qp[v]`` is the QP of DAG node ``v``
    (-1 if it is not a packet flow), ``sport`` the ns-3 source port per QP. ``arrays`` holds
    exactly the fields of :data:`~wormsim.netsim.packet.fields.STATE_TABLE`, each at its declared
    dtype and shape (checked: an internal
    :class:`~wormsim.netsim.common.field_spec.FieldLayoutError`
    names a field that is not). ``wormhole_plan`` is the run's Wormhole plan (default: planned
    from ``wormhole``; ``None`` with neither: packet mode). ``link=False`` leaves the handlers'
    and hooks' addresses 0 (compiling them can take seconds); :func:`_linked` fills them.
    """
    if net.multi_rate:
        raise NetsimInputError("MULTI_RATE 1 is not supported; set MULTI_RATE 0")
    wh = wormhole_plan
    if wh is None and wormhole is not None:
        wh = plan_wormhole(wormhole, net)
    mon = monitors or Monitors()
    n = dag.n_nodes
    hs = topo.host_server
    src, dst = dag.src.astype(np.int64), dag.dst.astype(np.int64)
    fp = plan_flows(dag, topo, routing=routing, seed=seed)
    qp_nodes, flow_qp, sport = fp.qp_node, fp.flow_qp, fp.sport
    r_off, r_ports = fp.r_off, fp.r_ports
    nq = fp.n_qps
    qs, qd = fp.qp_src, fp.qp_dst
    qp_nic = r_ports[r_off[0 : 2 * nq : 2]].astype(np.int32) if nq else np.zeros(0, np.int32)
    P = _params(net, topo, mon.period_ps, wh, link)

    npt = topo.n_ports
    i64, i8, f8 = np.int64, np.int8, np.float64
    p_sw = topo.is_switch[topo.port_node].astype(i8)
    headroom = np.zeros(npt, i64)
    shift = np.zeros(npt, i64)
    kmin = np.zeros(npt, f8)
    kmax = np.ones(npt, f8)
    pmax = np.zeros(npt, f8)
    hosts = topo.hosts
    nic_rate = (
        int(topo.port_rate_bps[np.flatnonzero(topo.port_node == hosts[0])[0]])
        if hosts.size and (topo.port_node == hosts[0]).any()
        else 0
    )
    sw_fixed = np.zeros(topo.n_nodes, i64)
    for port in np.flatnonzero(p_sw):
        rate = int(topo.port_rate_bps[port])
        kmin[port], kmax[port], pmax[port] = net.ecn_for_rate(rate)
        delay_ns = int(topo.port_delay_ps[port]) // PS_PER_NS
        headroom[port] = rate * delay_ns // BITS_PER_BYTE // NS_PER_S * 3
        s = 3
        r = rate
        while r > nic_rate and s > 0:
            s -= 1
            r //= 2
        shift[port] = s
        sw_fixed[topo.port_node[port]] += headroom[port] + net.reserve_bytes
    nic_cnt = np.bincount(qp_nic, minlength=npt) if nq else np.zeros(npt, i64)
    nic_off = np.zeros(npt, i64)
    nic_off[1:] = np.cumsum(nic_cnt)[:-1]
    sizes = {  # the extents of the table's dimensions that are not fixed or derived
        "heap": heap,
        "packet": pool,
        "port": npt,
        "node": topo.n_nodes,
        "qp": nq,
        "wh_qp": nq if wh is not None else 0,
        "window": wh.window_samples if wh is not None else 1,
        "dag_node": n,
        "dag_edge": dag.child_index.shape[0],
        "rank": n_ranks(dag),
        "route_entry": r_ports.shape[0],
        "monitored_port": len(mon.queue_ports) if mon.period_ps > 0 else 0,
        "sample": mon.capacity if mon.period_ps > 0 else 1,
    }
    _refuse_if_too_big(STATE_TABLE.nbytes(sizes), nq, n, wh is not None)
    wh_rtt_ps = _base_rtts(topo, r_off, r_ports, nq, P) if wh is not None else np.zeros(0, i64)
    # every field with a constant initial value, at its declared dtype and shape, and the packet
    # pool; then the fields built from the scenario (``init=None`` in the table)
    arrays = STATE_TABLE.allocate(sizes)
    arrays.update(st.alloc_pool(pool))
    arrays.update(
        p_node=topo.port_node.astype(i64),
        p_peer=topo.port_peer.astype(i64),
        p_rate_bps=topo.port_rate_bps.astype(i64),
        p_delay_ps=topo.port_delay_ps.astype(i64),
        p_rev=topo.port_reverse.astype(i64),
        p_sw=p_sw,
        headroom=headroom,
        pfc_shift=shift,
        kmin=kmin,
        kmax=kmax,
        pmax=pmax,
        nic_off=nic_off,
        is_sw=topo.is_switch.astype(i8),
        sw_fixed=sw_fixed,
        host_server=hs.astype(i64),
        qp_node=qp_nodes.astype(i64),
        qp_src=qs,
        qp_dst=qd,
        qp_nic=qp_nic.astype(i64),
        qp_size=dag.size_bytes[qp_nodes].astype(i64),
        qp_rdata=r_off[0 : 2 * nq : 2].copy(),
        qp_rack=r_off[1 : 2 * nq : 2].copy(),
        **dag_runtime_arrays(dag),
        g_src=src,
        g_dst=dst,
        g_size=dag.size_bytes.astype(i64),
        g_qp=flow_qp,
        r_off=r_off.astype(i64),
        r_ports=r_ports.astype(i64),
        mq_ports=np.asarray(mon.queue_ports if mon.period_ps > 0 else (), i64),
        wh_rtt_ps=wh_rtt_ps,
    )
    arrays["cnt"][st.C_FREE] = pool
    arrays["cnt"][st.C_RNG] = (
        int(seed) * 0x9E3779B97F4A7C15 + int(net.seed) * 7919 + 88172645463325252
    ) & ((1 << 63) - 1) or 1
    STATE_TABLE.check(arrays, sizes)  # every field, at its declared dtype and shape
    return arrays, P, flow_qp, sport


def _base_rtts(topo: Topology, r_off, r_ports, nq: int, P: st.Params) -> np.ndarray:
    """Per-QP base RTT (ps): propagation plus one full data packet / ACK serialization per hop.

    Each sum is taken in route order, as a loop over one route would (and as ``numpy.sum`` does
    for fewer than nine terms); the routes are walked one hop position at a time over all QPs
    at once, since a Python loop over QPs took minutes at 1,024 GPUs (3.3 M QPs)."""
    r_off = np.asarray(r_off, np.int64)
    r_ports = np.asarray(r_ports, np.int64)
    data_b = P.mtu + P.hdr_bytes + P.int_bytes
    rate = topo.port_rate_bps.astype(np.float64)
    delay = topo.port_delay_ps.astype(np.int64)
    d_lo, d_hi = r_off[0 : 2 * nq : 2], r_off[1 : 2 * nq + 1 : 2]
    a_lo, a_hi = d_hi, r_off[2 : 2 * nq + 2 : 2]
    t = _route_sums(r_ports, d_lo, d_hi, delay) + _route_sums(r_ports, a_lo, a_hi, delay)
    t += _route_sums(r_ports, d_lo, d_hi, data_b * BPS_PER_BYTE_PER_PS / rate).astype(np.int64)
    t += _route_sums(r_ports, a_lo, a_hi, P.ack_bytes * BPS_PER_BYTE_PER_PS / rate).astype(np.int64)
    return t


def _route_sums(r_ports: np.ndarray, lo: np.ndarray, hi: np.ndarray, per_port: np.ndarray):
    """``per_port[r_ports[lo[i]:hi[i]]].sum()`` for every ``i``, added in route order."""
    n = hi - lo
    out = np.zeros(lo.size, per_port.dtype)
    for j in range(int(n.max(initial=0))):
        (live,) = np.nonzero(n > j)
        out[live] += per_port[r_ports[lo[live] + j]]
    return out


def run_packet(
    dag: DagArrays,
    topo: Topology,
    net: NetworkSpec,
    *,
    routing: str = "hash",
    seed: int = 0,
    progress: Callable[[int, int, int], None] | None = None,
    monitors: Monitors | None = None,
    wormhole: WormholeSpec | None = None,
    memo_store: MemoStore | None = None,
    budget: CallBudget | None = None,
) -> SimResult:
    """Simulate the whole DAG packet by packet (optionally with Wormhole fast-forwarding).

    Parameters
    ----------
    dag, topo, net : the flow DAG, the network and its configuration.
    routing : ``"hash"`` (our ECMP hash) or ``"ns3"`` (exactly ns-3's choice).
    seed : seeds the ECMP hash (``"hash"``) and the RED marking RNG.
    progress : called as ``progress(sim_time_ps, nodes_done, events)`` between kernel calls
        (each about 0.1 s of work, see :class:`~wormsim.netsim.common.budget.CallBudget`).
    monitors : optional sampled per-flow rates and queue lengths.
    wormhole : ``None`` = packet mode; otherwise Wormhole with these knobs, resolved once into
        the run's :class:`~wormsim.netsim.wormhole.plan.WormholePlan` (``wormhole_plan`` of
        :meth:`SimResult.summary`); Wormhole adds its counters to ``counters``.
    memo_store : the memo store unless ``wormhole.memo_mode`` is ``"off"`` (default: open
        :func:`~wormsim.memo.resolve_store_path` of ``wormhole.memo_path``, read-only in mode
        ``"read"``). The run sees it as it is when the run starts (see
        :mod:`wormsim.memo.session`); in mode ``"read"`` it is never written.
    budget : the work bound of one kernel call (default: about 0.1 s); the results do not
        depend on it.

    Returns
    -------
    SimResult: its ``counters`` are the kernel's public counters
    (:func:`~wormsim.netsim.packet.counters.published`), ``sim_wall_s`` (run time, compile
    excluded when the kernel was already compiled), ``compile_s`` (first-call overhead) and
    ``build_s``.
    """
    t0 = time.perf_counter()
    plan = plan_wormhole(wormhole, net) if wormhole is not None else None
    A, P, flow_qp, sport = build_state(
        dag, topo, net, routing=routing, seed=seed, monitors=monitors, wormhole_plan=plan,
        link=False,
    )  # fmt: skip
    S = st.make_state(A, wormhole=plan is not None)
    t_build = time.perf_counter() - t0
    compile_s = _warm(plan is not None)
    P = _linked(P, net.cc)  # the handlers and hooks compiled by _warm (another cc's: now)
    heap_margin = 64 + int(np.diff(dag.child_offsets).max(initial=0)) * 2
    t1 = time.perf_counter()
    bridge = _memo_bridge(net, topo, plan, memo_store)
    init_kernel(S, P, 0)
    budget = budget or CallBudget()
    never = np.iinfo(np.int64).max
    while True:  # calls of bounded work: Ctrl-C and progress are served between them
        status = run_kernel(S, P, never, 64, heap_margin, budget.stop(A["cnt"][st.C_EVENTS]))
        budget.observe(A["cnt"][st.C_EVENTS])
        if status == st.RUN_MEMO_PENDING:
            bridge.service(A, S, P)
            continue
        if status == st.RUN_NEEDS_ROOM:
            A = st.grow_pool(A) if A["cnt"][st.C_FREE] < 64 else st.grow_heap(A)
            S = st.make_state(A, wormhole=plan is not None)
            continue
        if status == st.RUN_STOPPED:
            if progress is not None:
                cnt = A["cnt"]
                progress(int(cnt[st.C_NOW]), int(cnt[st.C_NODES_DONE]), int(cnt[st.C_EVENTS]))
            continue
        break
    wall = time.perf_counter() - t1
    cnt = A["cnt"]
    if progress is not None:
        progress(int(cnt[st.C_NOW]), int(cnt[st.C_NODES_DONE]), int(cnt[st.C_EVENTS]))
    counters: dict[str, float] = {**published(cnt, ("engine", "network"))}
    counters.update(sim_wall_s=wall, compile_s=compile_s, build_s=t_build)
    recorded = None
    if plan is not None:
        from wormsim.netsim.wormhole.counters import wormhole_counters

        counters.update(wormhole_counters(A, P))
        recorded = plan.summary()
        if bridge is not None:
            recorded["memo_governor"] = bridge.governor.settings()
            bridge.finish(A)
            bridge.close()
            if memo_store is None:  # opened here from wormhole.memo_path
                bridge.session.store.close()
            counters.update(bridge.counters())
    # Wormhole's credits (its arrays are empty in packet mode, where nothing is credited)
    credit = A["qp_credit"].copy() if plan is not None else np.zeros_like(A["qp_una"])
    nr, nqm = int(cnt[st.C_MONR]), int(cnt[st.C_MONQ])
    rate = pl.DataFrame(
        {
            "time_ps": A["mr_t_ps"][:nr],
            "qp": A["mr_f"][:nr],
            "node_id": A["qp_node"][A["mr_f"][:nr]],
            "rate_bps": A["mr_r_bps"][:nr],
        }
    )
    queue = pl.DataFrame(
        {"time_ps": A["mq_t_ps"][:nqm], "port": A["mq_p"][:nqm], "bytes": A["mq_b"][:nqm]}
    )
    return SimResult(
        node_start_ps=A["g_start_ps"].copy(),
        node_finish_ps=A["g_finish_ps"].copy(),
        counters=counters,
        flow_qp=flow_qp,
        sport=sport,
        routes=(A["r_off"], A["r_ports"]),
        rate_samples=rate,
        queue_samples=queue,
        qp_acked_bytes=A["qp_una"].copy(),
        qp_credit_bytes=credit,
        memo=bridge.session.info() if bridge is not None else None,
        wormhole_plan=recorded,
        port_outputs=collect_port_outputs(A, int(cnt[st.C_NOW])),
    )


def _memo_bridge(
    net: NetworkSpec, topo: Topology, plan: WormholePlan | None, store: MemoStore | None
) -> MemoBridge | None:
    """The run's memo bridge on a snapshot of the store, or ``None`` with memoization off (or
    flow skips, which do not memoize: the plan's ``memo_mode`` is then ``off``)."""
    if plan is None or not plan.memo_on:
        return None
    own = store is None
    if store is None:
        store = MemoStore(plan.memo_path, readonly=plan.memo_mode == "read")
    try:
        namespace = memo_namespace(net, topo, plan)
        session = MemoSession(store, namespace, write=plan.memo_mode == "readwrite")
    except BaseException:
        if own:
            store.close()
        raise
    return MemoBridge(session, plan)


def _warm(wormhole: bool = False) -> float:
    """Compile (or load from cache) the kernels of one mode (packet, or ``wormhole``); the
    seconds spent (0.0 once done in this process). A packet-mode run compiles no Wormhole code."""

    def run(dag: DagArrays, topo: Topology) -> None:
        spec = WormholeSpec() if wormhole else None
        A, P, _, _ = build_state(dag, topo, NetworkSpec(cc="hpcc"), wormhole=spec)
        S = st.make_state(A, wormhole=wormhole)
        init_kernel(S, P, 0)
        run_kernel(S, P, np.iinfo(np.int64).max, 64, 64, np.iinfo(np.int64).max)
        if not wormhole:
            return
        # Wormhole's entry points: the memo replay (an entry too long for the flow: nothing is
        # applied) and the shadow kernels on one of its QPs
        one = np.zeros(1, np.int64)
        apply_memo_hit(S, P, 0, one, one + (1 << 60), np.ones(1), 0, np.zeros((1, 3)))
        apply_memo_hit(S, P, 0, one, one + (1 << 60), np.ones(1), 0, np.zeros((1, 0)))
        if A["wh_lead"].size:
            park_shadow(S, P, 0, 0, one * 0, one * 0, True)
            remap_shadow(S, P, 0, 0, 0, one * 0, one * 0, True)
            materialise_group(S, P, 0)

    return warm_once("wormhole" if wormhole else "packet", run)
