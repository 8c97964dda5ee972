"""Port-level partitions: connected components of the flow-port graph, by union-find.

A partition (Wormhole paper §3, Alg. 1) is a maximal set of flows that share an egress port
directly or transitively; flows of different partitions share no port. This is the one
partitioner of the project: :func:`~.wh.wh_partition` runs it on the active
QPs at every sampler tick, and ``tests/netsim/packet/wormhole/test_partition.py`` checks it against
networkx's connected components.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit

__all__ = ["find_root", "union_ports", "components"]


@njit(cache=True)
def find_root(par: np.ndarray, x: int) -> int:
    """Root of ``x`` in the union-find forest ``par`` (path halving)."""
    while par[x] != x:
        par[x] = par[par[x]]
        x = par[x]
    return x


@njit(cache=True)
def union_ports(qs, n, r_off, r_ports, data_only, par, pown, touched):
    """Union the first ``n`` QPs of ``qs`` over the ports they cross.

    Parameters
    ----------
    qs : int64 array, the QPs (``qs[:n]``).
    r_off, r_ports : compiled routes (data route ``r_off[2q]..r_off[2q+1]``, ACK route on to
        ``r_off[2q+2]``).
    data_only : count the data route only.
    par : int64 per QP, the forest (``par[q] = q`` is set here for every QP of ``qs[:n]``); the
        smaller QP id becomes the root of a union, so a component's root is its smallest QP.
    pown : int64 per port, ``-1`` on entry; left holding the first QP seen on each port.
    touched : int64 scratch per port; ``touched[:k]`` lists the ports seen.

    Returns
    -------
    k : the number of ports seen.
    """
    for i in range(n):
        par[qs[i]] = qs[i]
    k = 0
    for i in range(n):
        q = qs[i]
        end = r_off[2 * q + 1] if data_only else r_off[2 * q + 2]
        for j in range(r_off[2 * q], end):
            port = r_ports[j]
            o = pown[port]
            if o < 0:
                pown[port] = q
                touched[k] = port
                k += 1
            else:
                a = find_root(par, q)
                b = find_root(par, o)
                if a < b:
                    par[b] = a
                elif b < a:
                    par[a] = b
    return k


@njit(cache=True)
def components(qs, r_off, r_ports, data_only, n_qps, n_ports):
    """Root (smallest member QP) of the partition of every QP of ``qs``, from scratch."""
    par = np.empty(n_qps, np.int64)
    pown = np.full(n_ports, -1, np.int64)
    touched = np.empty(n_ports, np.int64)
    union_ports(qs, qs.size, r_off, r_ports, data_only, par, pown, touched)
    root = np.empty(qs.size, np.int64)
    for i in range(qs.size):
        root[i] = find_root(par, qs[i])
    return root
