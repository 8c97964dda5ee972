"""Whether a partition's flows have converged to their fair shares.

The steadiness test looks at each flow's window alone. A flow that has not passed it for
``patience_windows`` is tested on its window's block means instead (:mod:`.steady`), which
accepts a congestion control's stationary oscillation wider than theta; but a share that is
still drifting towards fairness over milliseconds (HPCC's incast: four flows at unequal rates
that converge for far longer than a window) looks as stationary inside one window. Flows that
converged deliver the same fraction of their max-min fair share (the control's target
utilisation, less headers); a partition whose flows do not is still converging.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.common.maxmin import fill_rounds
from wormsim.netsim.packet.state import C_WH_NACT
from wormsim.netsim.packet.wormhole.steady import window_stats
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = ["fair_share_spread", "patient_partition_converged"]


@njit(cache=True)
def fair_share_spread(S, qs, delivered_Bpps):
    """(max - min) / mean over flows ``qs`` of delivered rate / max-min fair rate, the fair
    rates filled over the ports of their data routes at the ports' line rates."""
    m = qs.size
    f_roff = np.zeros(m + 1, np.int64)
    for i in range(m):
        q = qs[i]
        f_roff[i + 1] = f_roff[i] + S.r_off[2 * q + 1] - S.r_off[2 * q]
    f_res = np.empty(f_roff[m], np.int64)  # resources are the ports themselves
    npt = S.p_rate_bps.shape[0]
    cap = np.empty(npt, np.float64)
    cnt = np.zeros(npt, np.int64)
    res = np.empty(f_res.size, np.int64)
    nres = np.int64(0)  # typed, not a literal: fill_rounds compiles once
    for i in range(m):
        q = qs[i]
        k = f_roff[i]
        for j in range(S.r_off[2 * q], S.r_off[2 * q + 1]):
            port = S.r_ports[j]
            if cnt[port] == 0:
                cap[port] = S.p_rate_bps[port]
                res[nres] = port
                nres += 1
            cnt[port] += 1
            f_res[k] = port
            k += 1
    rate = np.zeros(m, np.float64)
    fill_rounds(np.arange(m), m, res, nres, f_roff, f_res, cap, cnt, np.empty(npt),
                np.empty(npt), np.empty(m), rate)  # fmt: skip
    lo = 1e300
    hi = 0.0
    sm = 0.0
    for i in range(m):
        x = delivered_Bpps[i] * BPS_PER_BYTE_PER_PS / rate[i] if rate[i] > 0 else 0.0
        lo = min(lo, x)
        hi = max(hi, x)
        sm += x
    mean = sm / m
    return (hi - lo) / mean if mean > 0 else 1e300


@njit(cache=True)
def patient_partition_converged(S, P, r):
    """Whether the flows of partition ``r`` (one of which was unsettled for ``P.wh_patience``
    samples) deliver the same fraction of their max-min fair shares, within 2 theta."""
    act = S.wh_act
    n = S.cnt[C_WH_NACT]
    m = 0
    for i in range(n):
        if S.wh_lab[act[i]] == r:
            m += 1
    qs = np.empty(m, np.int64)
    rates = np.empty(m, np.float64)
    k = 0
    for i in range(n):
        q = act[i]
        if S.wh_lab[q] == r:
            qs[k] = q
            rates[k] = window_stats(S, P, q)[1]
            k += 1
    return fair_share_spread(S, qs, rates) < 2.0 * P.wh_theta
