"""Shortest-path ECMP routing compiled into per-flow source routes.

BFS from every destination host gives the equal-cost next hops of each node. A flow's route is
chosen once, at flow start, by hashing at every node with several next hops:

* ``"ns3"`` reproduces HPCC ns-3 exactly: ``MurmurHash3_x86_32`` over the little-endian words
  ``sip, dip, sport | dport << 16`` with ``seed = switch node id``; the candidate list is in ns-3's
  BFS discovery order (neighbours iterated hosts first ascending, then switches descending id);
  ``sport = 10000 + number of earlier flows with the same (src, dst)``, ``dport = 100``; the ACK
  path is hashed with the ACK's own header (sip = receiver, dip = sender, sport = 100,
  dport = the data flow's sport).
* ``"hash"``: the same next-hop sets, our own hash of ``(src, dst, connection, seed)``. A
  *connection* is the queue pair a flow travels on: NCCL opens one per (communicator, channel,
  peer) and sends every step of every collective of that channel over it, so all of them take
  one path (an RDMA QP's UDP source port, and so its ECMP hash, is fixed for its lifetime).
  Without connection ids each flow is its own connection.

Routes are lists of egress ports (the source NIC's port first); flow ``f``'s data route is route
``2f`` and its ACK route ``2f+1`` in ``(route_offsets, route_ports)``.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.topology import Topology
from wormsim.units import BITS_PER_BYTE, BPS_PER_BYTE_PER_NS_INT, NS_PER_S, PS_PER_NS

__all__ = ["flow_routes", "murmur3_32", "host_ip", "compile_routes", "pair_rtt_bdp", "bfs_tables"]

_M32 = np.int64(0xFFFFFFFF)


@njit(cache=True, inline="always")
def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF


@njit(cache=True)
def murmur3_32(w0: int, w1: int, w2: int, seed: int) -> int:
    """MurmurHash3_x86_32 of three little-endian uint32 words (12 bytes)."""
    h = seed & 0xFFFFFFFF
    for w in (w0, w1, w2):
        k = (w & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
        k = _rotl(k, 15)
        k = k * 0x1B873593 & 0xFFFFFFFF
        h ^= k
        h = _rotl(h, 13)
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 12
    h ^= h >> 16
    h = h * 0x85EBCA6B & 0xFFFFFFFF
    h ^= h >> 13
    h = h * 0xC2B2AE35 & 0xFFFFFFFF
    h ^= h >> 16
    return h


def host_ip(node: int) -> int:
    """HPCC host IP of a node id."""
    return 0x0B000001 + (node // 256) * 0x10000 + (node % 256) * 0x100


@njit(cache=True, inline="always")
def _ip(node: int) -> int:
    return 0x0B000001 + (node // 256) * 0x10000 + (node % 256) * 0x100


def _neighbour_order(n_nodes, is_switch, port_node, port_peer, offs, nports):
    """Per node, its ports sorted in ns-3 neighbour order (hosts asc, then switches desc; ports
    to the same neighbour in their given order). numpy's stable sort, not a kernel: a sort in a
    kernel costs seconds of its first compile."""
    nports = np.asarray(nports, np.int64)
    peer = np.asarray(port_peer, np.int64)[nports]
    keys = np.where(np.asarray(is_switch)[peer] != 0, (1 << 40) - peer, peer)
    node = np.repeat(np.arange(n_nodes, dtype=np.int64), np.diff(offs))
    return nports[np.lexsort((keys, node))]


@njit(cache=True)
def _bfs(
    root,
    n_nodes,
    is_switch,
    port_peer,
    port_rate,
    port_delay,
    offs,
    nports,
    payload,
    dist,
    pos,
    delay,
    txd,
    bw,
):
    for i in range(n_nodes):
        dist[i] = -1
        pos[i] = -1
    q = np.empty(n_nodes, np.int64)
    q[0] = root
    qn = 1
    dist[root] = 0
    pos[root] = 0
    delay[root] = 0
    txd[root] = 0
    bw[root] = np.iinfo(np.int64).max
    i = 0
    while i < qn:
        now = q[i]
        i += 1
        for j in range(offs[now], offs[now + 1]):
            p = nports[j]
            nxt = port_peer[p]
            if dist[nxt] < 0:
                dist[nxt] = dist[now] + 1
                delay[nxt] = delay[now] + port_delay[p]
                txd[nxt] = txd[now] + payload * BPS_PER_BYTE_PER_NS_INT // port_rate[p]
                bw[nxt] = min(bw[now], port_rate[p])
                if is_switch[nxt]:
                    pos[nxt] = qn
                    q[qn] = nxt
                    qn += 1


@njit(cache=True)
def _pair_rtt_bdp(
    hosts, n_nodes, is_switch, port_peer, port_rate, port_delay, offs, nports, payload
):
    """ns-3's maxRtt (ns) and maxBdp (bytes) over all host pairs (delays in ps -> ns)."""
    dist = np.empty(n_nodes, np.int64)
    pos = np.empty(n_nodes, np.int64)
    delay = np.empty(n_nodes, np.int64)
    txd = np.empty(n_nodes, np.int64)
    bw = np.empty(n_nodes, np.int64)
    max_rtt = 0
    max_bdp = 0
    for h in hosts:
        _bfs(
            h,
            n_nodes,
            is_switch,
            port_peer,
            port_rate,
            port_delay,
            offs,
            nports,
            payload,
            dist,
            pos,
            delay,
            txd,
            bw,
        )
        for g in hosts:
            if dist[g] < 0:
                continue
            rtt = (delay[g] // PS_PER_NS) * 2 + txd[g]
            bdp = rtt * bw[g] // NS_PER_S // BITS_PER_BYTE if g != h else 0
            if g == h:
                rtt = 0
            max_rtt = max(max_rtt, rtt)
            max_bdp = max(max_bdp, bdp)
    return max_rtt, max_bdp


@njit(cache=True)
def _route_one(
    src,
    dst,
    nw0,
    nw1,
    nw2,
    mode,
    seed,
    fidx,
    dist,
    pos,
    is_switch,
    port_node,
    port_peer,
    offs,
    nports,
    out,
    n_out,
):
    """Append the egress ports from ``src`` to ``dst`` to ``out``; returns the new length."""
    u = src
    guard = 0
    cand = np.empty(64, np.int64)
    while u != dst:
        nc = 0
        for j in range(offs[u], offs[u + 1]):
            p = nports[j]
            v = port_peer[p]
            if dist[v] == dist[u] - 1 and (is_switch[v] or v == dst) and nc < 64:
                # insertion by BFS position (ns-3 discovery order)
                k = nc
                while k > 0 and pos[port_peer[cand[k - 1]]] > pos[v]:
                    cand[k] = cand[k - 1]
                    k -= 1
                cand[k] = p
                nc += 1
        if nc == 0:
            return -1
        if nc == 1:
            pick = cand[0]
        elif mode == 0:
            pick = cand[murmur3_32(nw0, nw1, nw2, u) % nc]
        else:
            pick = cand[murmur3_32(src * 7919 + dst, fidx, seed, u * 2654435761 + 17) % nc]
        out[n_out] = pick
        n_out += 1
        u = port_peer[pick]
        guard += 1
        if guard > 4096:
            return -1
    return n_out


@njit(cache=True)
def _compile_routes(
    r_dst,
    order,
    f_src,
    f_dst,
    f_sport,
    f_conn,
    mode,
    seed,
    n_nodes,
    is_switch,
    port_node,
    port_peer,
    port_rate,
    port_delay,
    offs,
    nports,
):
    nf = f_src.shape[0]
    dist = np.empty(n_nodes, np.int64)
    pos = np.empty(n_nodes, np.int64)
    delay = np.empty(n_nodes, np.int64)
    txd = np.empty(n_nodes, np.int64)
    bw = np.empty(n_nodes, np.int64)
    # route 2f is flow f's data route (to its dst ``r_dst[2f]``), 2f+1 its ACK route (to its src);
    # routes are computed grouped by destination (``order``: the routes sorted by it, stably),
    # one BFS from each, so the work is linear in the routes
    nr = 2 * nf
    lens = np.zeros(nr, np.int64)
    at = np.zeros(nr, np.int64)  # where each route sits in ``buf`` (destination order)
    buf = np.empty(max(8 * nr, 64), np.int32)
    scratch = np.empty(4160, np.int64)  # _route_one stops after 4096 hops
    used = 0
    ok = True
    i = 0
    while i < nr:
        h = r_dst[order[i]]
        _bfs(
            h,
            n_nodes,
            is_switch,
            port_peer,
            port_rate,
            port_delay,
            offs,
            nports,
            np.int64(1000),  # typed, not a literal: _bfs compiles once for both callers
            dist,
            pos,
            delay,
            txd,
            bw,
        )
        while i < nr and r_dst[order[i]] == h:
            k = order[i]
            i += 1
            f = k // 2
            r = k - 2 * f
            if r == 0:
                a, b = f_src[f], f_dst[f]
                w0, w1, w2 = _ip(a), _ip(b), f_sport[f] | (100 << 16)
            else:
                a, b = f_dst[f], f_src[f]
                w0, w1, w2 = _ip(a), _ip(b), 100 | (f_sport[f] << 16)
            n = _route_one(
                a,
                b,
                w0,
                w1,
                w2,
                mode,
                seed + r * 1000003,
                f_conn[f],
                dist,
                pos,
                is_switch,
                port_node,
                port_peer,
                offs,
                nports,
                scratch,
                0,
            )
            if n < 0:
                ok = False
                continue
            if used + n > buf.shape[0]:
                grown = np.empty(2 * buf.shape[0] + n, np.int32)
                for j in range(used):  # a loop: a slice assignment compiles numba's shape error
                    grown[j] = buf[j]
                buf = grown
            for j in range(n):
                buf[used + j] = scratch[j]
            at[k] = used
            lens[k] = n
            used += n
    offsets = np.zeros(nr + 1, np.int64)
    for k in range(nr):
        offsets[k + 1] = offsets[k] + lens[k]
    ports = np.empty(offsets[-1], np.int32)
    for k in range(nr):
        o = offsets[k]
        s = at[k]
        for j in range(lens[k]):
            ports[o + j] = buf[s + j]
    return offsets, ports, ok


def _tables(topo: Topology) -> tuple[np.ndarray, ...]:
    nports = _neighbour_order(
        topo.n_nodes,
        topo.is_switch,
        topo.port_node,
        topo.port_peer,
        topo.node_port_offsets,
        topo.node_ports.astype(np.int64),
    )
    return (
        topo.n_nodes,
        topo.is_switch,
        topo.port_node.astype(np.int64),
        topo.port_peer.astype(np.int64),
        topo.port_rate_bps,
        topo.port_delay_ps,
        topo.node_port_offsets,
        nports,
    )


def bfs_tables(topo: Topology) -> tuple:
    """Topology arrays in the form the routing kernels use (ns-3 neighbour order)."""
    return _tables(topo)


def ns3_sports(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """ns-3 source port per flow: 10000 + earlier flows with the same (src, dst)."""
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    n = src.shape[0]
    if n == 0:
        return np.empty(0, np.int64)
    # hosts are small integers: (src, dst) as one int64 key
    s0, d0 = src - src.min(), dst - dst.min()
    pair = s0 * (int(d0.max()) + 1) + d0
    order = np.argsort(pair, kind="stable")  # each pair's flows, in flow order
    ranked = pair[order]
    idx = np.arange(n, dtype=np.int64)
    first = np.maximum.accumulate(np.where(np.r_[True, ranked[1:] != ranked[:-1]], idx, 0))
    out = np.empty(n, np.int64)
    out[order] = 10000 + idx - first
    return out


def compile_routes(
    topo: Topology,
    src: np.ndarray,
    dst: np.ndarray,
    sport: np.ndarray,
    *,
    mode: str = "hash",
    seed: int = 0,
    connection: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Data and ACK source routes for flows ``src[i] -> dst[i]``.

    ``connection`` (int64 per flow, mode ``"hash"``): flows with the same connection id (and
    endpoints) take the same paths; ``None``: flow ``i`` is connection ``i``.

    Returns
    -------
    route_offsets : int64[2n+1]
    route_ports : int32[...]
    ok : bool, False if some pair has no path.
    """
    if mode not in ("hash", "ns3"):
        raise NetsimInputError(f"routing must be 'hash' or 'ns3', not {mode!r}")
    n_nodes, is_switch, pn, pp, pr, pd, offs, nports = _tables(topo)
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    conn = np.arange(src.size, dtype=np.int64) if connection is None else connection
    r_dst = np.empty(2 * src.size, np.int64)
    r_dst[0::2] = dst
    r_dst[1::2] = src
    return _compile_routes(
        r_dst,
        np.argsort(r_dst, kind="stable"),
        src,
        dst,
        np.asarray(sport, np.int64),
        np.ascontiguousarray(conn, np.int64),
        0 if mode == "ns3" else 1,
        int(seed),
        n_nodes,
        is_switch,
        pn,
        pp,
        pr,
        pd,
        offs,
        nports,
    )


def flow_routes(
    topo: Topology,
    src: np.ndarray,
    dst: np.ndarray,
    mode: str = "hash",
    seed: int = 0,
    connection: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ns-3 source ports and compiled data/ACK routes of flows ``src[i] -> dst[i]``.

    The one place both engines number flows' routes, so their paths agree flow for flow.
    ``connection``: see :func:`compile_routes`.

    Returns
    -------
    sport, route_offsets, route_ports

    Raises
    ------
    NetsimInputError
        Naming the first flow (in the given order) whose hosts the topology does not connect.
    """
    sport = ns3_sports(src, dst)
    r_off, r_ports, ok = compile_routes(
        topo, src, dst, sport, mode=mode, seed=seed, connection=connection
    )
    if not ok:
        i = _first_unroutable(topo, src, dst)
        raise NetsimInputError(
            f"flow {i} from host {int(src[i])} to host {int(dst[i])} has no path in the "
            "topology (they are not connected); check the topology's links"
        )
    return sport, r_off, r_ports


def _first_unroutable(topo: Topology, src: np.ndarray, dst: np.ndarray) -> int:
    """Index of the first flow whose endpoints lie in different connected components."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(topo.n_nodes))
    g.add_edges_from(zip(topo.port_node.tolist(), topo.port_peer.tolist(), strict=True))
    comp = np.empty(topo.n_nodes, np.int64)
    for k, nodes in enumerate(nx.connected_components(g)):
        comp[list(nodes)] = k
    bad = np.flatnonzero(comp[np.asarray(src)] != comp[np.asarray(dst)])
    return int(bad[0]) if bad.size else 0


#: :func:`pair_rtt_bdp` of the fabrics seen last, by :func:`_fabric_digest` and payload.
_RTT_BDP: OrderedDict[tuple[bytes, int], tuple[int, int]] = OrderedDict()
_RTT_BDP_SIZE = 16
_RTT_BDP_LOCK = threading.Lock()


def _fabric_digest(topo: Topology) -> bytes:
    """A digest of every topology array the routing tables are built from (dtype, shape and
    bytes), so two fabrics share it only when those arrays are equal."""
    h = hashlib.blake2b(str(int(topo.n_nodes)).encode(), digest_size=20)
    for a in (
        topo.hosts,
        topo.is_switch,
        topo.port_node,
        topo.port_peer,
        topo.port_rate_bps,
        topo.port_delay_ps,
        topo.node_port_offsets,
        topo.node_ports,
    ):
        a = np.ascontiguousarray(a)
        h.update(f"|{a.dtype.str}{a.shape}|".encode())
        h.update(memoryview(a).cast("B"))
    return h.digest()


def pair_rtt_bdp(topo: Topology, payload: int = 1000) -> tuple[int, int]:
    """ns-3's ``maxRtt`` (ns) and ``maxBdp`` (bytes) over all host pairs.

    A BFS from every host (quadratic in the fabric's size: about 20 ms at 1,024 GPUs), done once
    per fabric: the last few fabrics' results are kept by a digest of their arrays, so the
    simulations of one fabric (the report replays each collective on its own) share it.
    """
    key = (_fabric_digest(topo), int(payload))
    with _RTT_BDP_LOCK:
        hit = _RTT_BDP.get(key)
        if hit is not None:
            _RTT_BDP.move_to_end(key)
            return hit
    n_nodes, is_switch, pn, pp, pr, pd, offs, nports = _tables(topo)
    hosts = topo.hosts.astype(np.int64)
    rtt, bdp = _pair_rtt_bdp(hosts, n_nodes, is_switch, pp, pr, pd, offs, nports, payload)
    value = (int(rtt), int(bdp))
    with _RTT_BDP_LOCK:
        _RTT_BDP[key] = value
        while len(_RTT_BDP) > _RTT_BDP_SIZE:
            _RTT_BDP.popitem(last=False)
    return value
