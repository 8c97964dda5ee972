"""Max-min fair rates by progressive filling: the one routine both engines use.

The flow engine re-fills the flows a batch of starts and drains can affect
(:func:`~wormsim.netsim.flow.maxmin.rerate`); the packet engine's NVLink fluid model fills every
intra-server flow over the GPUs' egress and ingress (:mod:`wormsim.netsim.packet.dag_exec`). Both
hand :func:`fill_rounds` the flows to fill, their resources and the residual capacities; the
unit of rate is the caller's (bytes/ps in the flow engine, bit/s in the packet engine).
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit

__all__ = ["fill_rounds"]


@njit(cache=True)
def fill_rounds(act, nact, res, nres, f_roff, f_res, cap, cnt, sh, nbmin, fmin, rate):
    """Progressive filling in rounds; returns the number of rounds.

    A resource whose fair share is not above the fair share of any resource its flows cross (a
    local minimum) saturates at that share, so all its flows freeze there; a round freezes every
    local minimum at once (the global one at least), so a few rounds suffice in practice.

    Parameters
    ----------
    act : int64 scratch, ``act[:nact]`` the flows to fill (reordered in place).
    res : int64 scratch, ``res[:nres]`` the resources they cross (those without unfrozen flows
        are dropped as filling goes).
    f_roff, f_res : flow ``v`` crosses resources ``f_res[f_roff[v]:f_roff[v+1]]``.
    cap, cnt : per resource, the residual capacity and the number of unfrozen flows (both
        updated as flows freeze).
    sh, nbmin, fmin : float64 scratch (per resource, per resource, per flow).
    rate : per flow, written: the max-min fair rate of every flow of ``act[:nact]``.
    """
    rounds = 0
    while nact > 0:
        rounds += 1
        k = 0  # the resources that still have unfrozen flows
        for i in range(nres):
            r = res[i]
            if cnt[r] > 0:
                res[k] = r
                k += 1
        nres = k
        for i in range(nres):
            r = res[i]
            sh[r] = cap[r] / cnt[r]
            nbmin[r] = np.inf
        for i in range(nact):
            v = act[i]
            m = np.inf
            for k in range(f_roff[v], f_roff[v + 1]):
                s = sh[f_res[k]]
                if s < m:
                    m = s
            fmin[v] = m
            for k in range(f_roff[v], f_roff[v + 1]):
                r = f_res[k]
                if m < nbmin[r]:
                    nbmin[r] = m
        keep = 0
        for i in range(nact):
            v = act[i]
            hit = False
            for k in range(f_roff[v], f_roff[v + 1]):
                r = f_res[k]
                if sh[r] <= nbmin[r]:
                    hit = True
                    break
            if hit:
                x = fmin[v]
                rate[v] = x
                for k in range(f_roff[v], f_roff[v + 1]):
                    r = f_res[k]
                    cap[r] -= x
                    cnt[r] -= 1
            else:
                act[keep] = v
                keep += 1
        nact = keep
    return rounds
