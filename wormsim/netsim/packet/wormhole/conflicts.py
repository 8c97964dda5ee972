"""Which flows of a partition share which ports: the edges of its Flow Conflict Graph, jitted.

The memo bridge keys its per-run cache by a partition's *labelled* FCG (vertices in the
partition's own flow order) and compares re-formed shadow partitions with their leaders by the
same key, tens of thousands of times at 1,024 GPUs on partitions of a hundred flows; counting
shared ports pair by pair in Python was a tenth of the bridge's time there.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit

__all__ = ["shared_ports", "ack_streams", "data_port_ack_load", "vertex_weights"]


@njit(cache=True, inline="always")
def _first_on_route(r_ports: np.ndarray, a: int, t: int) -> bool:
    """Whether the port at ``r_ports[t]`` does not occur earlier in the route ``r_ports[a:t]``."""
    p = r_ports[t]
    for u in range(a, t):
        if r_ports[u] == p:
            return False
    return True


@njit(cache=True)
def shared_ports(
    r_off: np.ndarray, r_ports: np.ndarray, qs: np.ndarray, route_end: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of flows ``qs`` that share egress ports, and how many they share.

    Parameters
    ----------
    r_off, r_ports : the compiled routes: QP ``q``'s data route is
        ``r_ports[r_off[2q]:r_off[2q+1]]``, its ACK route runs on to ``r_off[2q+2]``.
    qs : the partition's QPs, in the order that numbers the vertices.
    route_end : 1 to count data ports only, 2 for data and ACK ports.

    Returns
    -------
    (i, j, shared) : int64 arrays, ``i < j`` positions in ``qs``, sorted by ``(i, j)``; a port a
    flow crosses twice counts once.
    """
    n = qs.size
    total = 0
    for i in range(n):
        q = qs[i]
        total += r_off[2 * q + route_end] - r_off[2 * q]
    port = np.empty(total, np.int64)
    owner = np.empty(total, np.int64)
    k = 0
    for i in range(n):
        q = qs[i]
        a, b = r_off[2 * q], r_off[2 * q + route_end]
        for t in range(a, b):
            p = r_ports[t]
            if _first_on_route(r_ports, a, t):
                port[k] = p
                owner[k] = i
                k += 1
    order = np.argsort(port[:k], kind="mergesort")  # stable: owners ascend within a port
    n_pairs = 0
    g = 0
    while g < k:
        h = g
        while h < k and port[order[h]] == port[order[g]]:
            h += 1
        n_pairs += (h - g) * (h - g - 1) // 2
        g = h
    code = np.empty(n_pairs, np.int64)
    c = 0
    g = 0
    while g < k:
        h = g
        while h < k and port[order[h]] == port[order[g]]:
            h += 1
        for x in range(g, h):
            for y in range(x + 1, h):
                code[c] = owner[order[x]] * n + owner[order[y]]
                c += 1
        g = h
    code.sort()
    m = 0
    for x in range(n_pairs):
        if x == 0 or code[x] != code[x - 1]:
            m += 1
    ii = np.empty(m, np.int64)
    jj = np.empty(m, np.int64)
    w = np.zeros(m, np.int64)
    m = -1
    for x in range(n_pairs):
        if x == 0 or code[x] != code[x - 1]:
            m += 1
            ii[m] = code[x] // n
            jj[m] = code[x] % n
        w[m] += 1
    return ii, jj, w


@njit(cache=True)
def ack_streams(
    r_off: np.ndarray, r_ports: np.ndarray, act: np.ndarray, n_ports: int
) -> np.ndarray:
    """How many of the active flows ``act`` return their ACKs through each port (int64[n_ports];
    a port an ACK route crosses twice counts once)."""
    cnt = np.zeros(n_ports, np.int64)
    for i in range(act.size):
        q = act[i]
        a, b = r_off[2 * q + 1], r_off[2 * q + 2]
        for t in range(a, b):
            p = r_ports[t]
            if _first_on_route(r_ports, a, t):
                cnt[p] += 1
    return cnt


@njit(cache=True)
def data_port_ack_load(
    r_off: np.ndarray, r_ports: np.ndarray, qs: np.ndarray, acks: np.ndarray
) -> np.ndarray:
    """Per flow of ``qs``: the ACK streams (:func:`ack_streams`) summed over its data ports."""
    out = np.zeros(qs.size, np.int64)
    for i in range(qs.size):
        q = qs[i]
        a, b = r_off[2 * q], r_off[2 * q + 1]
        for t in range(a, b):
            p = r_ports[t]
            if _first_on_route(r_ports, a, t):
                out[i] += acks[p]
    return out


@njit(cache=True, inline="always")
def _log_bucket(x: float, floor: float, log1p_quantum: float) -> int:
    """``LogRateQuantizer.bucket``: 0 below the floor, else 1 + round(log(x / floor) / log1p(q))
    (half to even, as Python's ``round``)."""
    if x < floor:
        return 0
    return 1 + np.int64(np.rint(np.log(x / floor) / log1p_quantum))


@njit(cache=True)
def vertex_weights(
    rate_bps: np.ndarray, rtt_ps: np.ndarray, ack_load: np.ndarray, floor: float,
    log1p_quantum: float, ack_span: int, rtt_span: int,
) -> np.ndarray:  # fmt: skip
    """Flow Conflict Graph vertex weights: ((rate bucket) × ``ack_span`` + ACK streams, capped)
    × ``rtt_span`` + (base-RTT bucket mod ``rtt_span``), buckets as ``LogRateQuantizer``'s."""
    out = np.empty(rate_bps.size, np.int64)
    for i in range(rate_bps.size):
        b = _log_bucket(rate_bps[i], floor, log1p_quantum)
        t = _log_bucket(rtt_ps[i], floor, log1p_quantum) % rtt_span
        a = min(ack_load[i], ack_span - 1)
        out[i] = (b * ack_span + a) * rtt_span + t
    return out
