"""Benchmark: the ceiling of each candidate acceleration mechanism, by oracle count (issue 42).

Before building a mechanism that survives membership changes, this estimates how much of each
experiment of ``bench/generalization.py`` it could skip at best. Each experiment runs once in
**packet mode** (the exact reference; ``bench/oracle_trace.py``, one process per experiment):
the kernel stops every ``--period-us`` (5 us, Wormhole's sampler period) of simulated time and
every active fabric flow's bytes sent and congestion-control rate (the rate monitor's
``cc_rate``) are recorded, with every flow's start, finish, size, data route and base RTT. From
that trace alone, with hindsight (an oracle: a real mechanism must also *detect* what is counted
here), this counts the **fabric flow-bytes** (each fabric flow's bytes, sent while it is active)
that each candidate could skip:

1. ``part_win``, **whole-partition skip** (today's rule, as an oracle). A partition is a
   connected component of the active flows over shared egress ports of their *data* routes
   (NIC port included). Its membership changes when a member starts or finishes (which also
   merges and splits components). A flow's bytes count when its partition has had no change for
   one window span (the run's default: 20 samples x 5 us = 100 us; DCQCN 2 x its longest timer =
   600 us) and until the partition's next change (the first member to end ends the skip).
   ``part_ack_win``: the same with partitions over data *and* ACK ports, as Wormhole forms
   them under DCTCP and TIMELY (``partition_ports: auto``).
2. ``bn_*``, **bottleneck-scoped skip**. A change (a flow starting or finishing) reaches only the
   flows that share at least one data-route port with the changed flow (its 1-hop neighbourhood
   in the flow-port graph, approximating "the flows whose bottleneck set the change moves"). A
   flow's bytes count once no change has reached it for ``W_settle`` and until the next change
   that reaches it; ``W_settle`` = 1, 3, 10 base RTTs (the flow's own, from its route:
   propagation plus one data packet and one ACK serialization per hop) and one window span.
3. ``pv_*``, **predict-and-verify skip**. After a change reaching a flow, its rate is predicted
   and checked for ``V`` = 3 or 10 RTTs, then skipped until the next change reaching it: the
   byte share is exactly ``bn_3rtt`` / ``bn_10rtt`` (the same count), so its own columns say
   whether a fixed-point prediction would be right: for each such interval (at least two
   samples long after ``V = 3`` RTTs) the flow's **max-min fair share** over the active flows at
   the change (progressive filling on the port rates of the component it is in, by the flow
   engine's own routine, ``wormsim.netsim.common.maxmin.fill_rounds``) against the packet run's
   measured mean rate over the interval (its bytes sent / the interval, on the wire: x (payload
   + headers) / payload): median and 90th percentile of the relative error |max-min - measured|
   / measured, and the signed median (measured - max-min) / max-min (HPCC aims at 95 %
   utilisation, so about -5 % is its fixed point, not an error of max-min).
   ``pv_ccrate_err_p50_pct`` is the median error against the mean ``cc_rate`` samples instead:
   flows sharing their own NIC are paced by the NIC's scheduler, which no congestion control
   sees, so their ``cc_rate`` can sit at line rate while each sends a fraction of it.
4. ``memo_*``, **local memo**. At every change, for every port on the changed flow's data route,
   the local context: started or finished, the port's capacity, the number of flows on it after
   the change, and how many of them run within 5 % of their new max-min share (rate = the
   flow's goodput over its last sample period before the change; a flow without one, i.e.
   started since, is not at its share). ``memo_recur_pct`` is the share of contexts whose key
   was seen before in the run (a hit of a memo keyed on local context with a cold store);
   ``memo_fine_recur_pct`` the same with each flow's rate / share ratio quantised to 5 % steps
   in the key. These count contexts, not bytes.
5. ``fluid_*``, **hybrid fluid**. Bytes sent between changes anywhere in the flow's partition
   (as in 1), excluding the first ``V`` = 3 or 10 RTTs after each change (the partition is
   advanced as a fluid from the exact state once the change's transient is over).

Each share has its "events ceiling" ``1 / (1 - share)`` (``*_x``): the most a mechanism can save
if skipped bytes cost nothing and every unskipped byte costs what it costs in packet mode.

Approximations. Bytes between two samples are interpolated linearly (the flow's bytes sent at
its start, at each 5 us sample and at its finish), so a boundary inside a sample period is
placed within 5 us. ``qp_nxt`` (the next byte to send) is the bytes sent; a go-back-N
retransmission's rewind is ignored (the running maximum is used). Partitions use data ports only
(``part_ack_win`` aside), as Wormhole does under HPCC and DCQCN. The 1-hop reach ignores a
change that moves a flow's bottleneck through a chain of links (max-min is global), and the max-
min share ignores changes beyond the component. PFC pauses and ECN are not modelled by the
oracle except through the rates the packet run measured. Nothing here accounts for the cost of
detecting, verifying or replaying, so the ceilings are upper bounds.

Usage::

    python bench/oracle_ceiling.py                      # every experiment at 0.1 size
    python bench/oracle_ceiling.py --only gpt7b-64-tp4pp4 --scale 0.05
    python bench/oracle_ceiling.py --traces runs/oracle  # keep/reuse the packet traces there

Appends to ``bench/results/oracle_ceiling.jsonl`` and rewrites ``oracle_ceiling.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
HERE = Path(__file__).resolve().parent

RTT_MULTS = (1, 3, 10)
"""W_settle of the bottleneck-scoped skip, in base RTTs (plus one window span)."""
V_MULTS = (3, 10)
"""Verification period of predict-and-verify and the transient excluded by hybrid fluid, RTTs."""
AT_SHARE = 0.05
"""A flow runs at its fair share when within this relative distance of it (local memo)."""


# --- the trace --------------------------------------------------------------------------------


class Curves:
    """Bytes sent by each flow as a function of time: linear between its start (0 bytes), its
    samples and its finish (all its bytes)."""

    def __init__(self, start, finish, size, s_t, s_q, s_sent):
        n = start.size
        order = np.lexsort((s_t, s_q))
        q = s_q[order]
        cnt = np.bincount(q, minlength=n)
        self.off = np.zeros(n + 1, np.int64)
        self.off[1:] = np.cumsum(cnt + 2)
        m = int(self.off[-1])
        self.t = np.empty(m, np.int64)
        self.b = np.empty(m, np.float64)
        first = self.off[:-1]
        last = self.off[1:] - 1
        self.t[first], self.b[first] = start, 0.0
        self.t[last], self.b[last] = finish, size
        inner = np.ones(m, bool)
        inner[first] = inner[last] = False
        self.t[inner] = s_t[order]
        self.b[inner] = s_sent[order]
        for i in range(n):  # monotone, within [0, size], times not after the finish
            lo, hi = self.off[i], self.off[i + 1]
            np.maximum.accumulate(self.b[lo:hi], out=self.b[lo:hi])
            np.minimum(self.b[lo:hi], size[i], out=self.b[lo:hi])
            np.minimum(self.t[lo:hi], finish[i], out=self.t[lo:hi])

    def at(self, q: int, ts) -> np.ndarray:
        """Bytes flow ``q`` had sent at times ``ts``."""
        lo, hi = self.off[q], self.off[q + 1]
        return np.interp(np.asarray(ts, np.float64), self.t[lo:hi], self.b[lo:hi])

    def between(self, q: int, a, b) -> np.ndarray:
        """Bytes flow ``q`` sent in ``[a, b]`` (elementwise; 0 where ``b <= a``)."""
        a = np.asarray(a, np.float64)
        b = np.maximum(np.asarray(b, np.float64), a)
        return self.at(q, b) - self.at(q, a)


def skippable(curves: Curves, q: int, interrupts, finish: int, settle) -> float:
    """Bytes of flow ``q`` sent at least ``settle`` after the latest of ``interrupts`` (sorted
    times, the first its start) and before the next one (or its ``finish``)."""
    cuts = np.asarray(interrupts, np.float64)
    ends = np.append(cuts[1:], float(finish))
    return float(curves.between(q, cuts + settle, ends).sum())


def flow_links(
    r_off: np.ndarray, r_ports: np.ndarray, n: int, ack: bool = False
) -> list[tuple[int, ...]]:
    """Each QP's data-route ports (NIC egress to last switch egress), and with ``ack`` its ACK
    route's ports too."""
    hi = 2 if ack else 1
    return [tuple(int(p) for p in r_ports[r_off[2 * q] : r_off[2 * q + hi]]) for q in range(n)]


# --- changes that reach a flow ----------------------------------------------------------------


def reach_times(start, finish, links) -> list[np.ndarray]:
    """Per flow, the sorted times of the changes that reach it: its own start, then every start
    or finish, strictly inside its life, of a flow sharing a port with it (1-hop reach)."""
    by_port: dict[int, list[int]] = defaultdict(list)
    for q, ls in enumerate(links):
        for p in set(ls):
            by_port[p].append(q)
    ev_port = {}
    for p, qs in by_port.items():
        qs = np.asarray(qs)
        ev_port[p] = np.sort(np.concatenate([start[qs], finish[qs]]))
    out = []
    for q, ls in enumerate(links):
        s, f = start[q], finish[q]
        parts = [np.array([s], np.int64)]
        for p in set(ls):
            e = ev_port[p]
            parts.append(e[np.searchsorted(e, s, "right") : np.searchsorted(e, f, "left")])
        out.append(np.unique(np.concatenate(parts)))
    return out


# --- partitions over time (components of active flows over shared ports) --------------------


def _maxmin(members: list[int], links, cap: np.ndarray) -> np.ndarray:
    """Max-min fair rates (bit/s) of ``members`` over their ports (progressive filling)."""
    from wormsim.netsim.common.maxmin import fill_rounds

    ports: dict[int, int] = {}
    f_res = []
    f_roff = [0]
    for q in members:
        for p in set(links[q]):
            f_res.append(ports.setdefault(p, len(ports)))
        f_roff.append(len(f_res))
    nres = len(ports)
    f_res_a = np.asarray(f_res, np.int64)
    pc = np.empty(nres, np.float64)
    for p, i in ports.items():
        pc[i] = cap[p]
    n = len(members)
    rate = np.zeros(n)
    fill_rounds(
        np.arange(n, dtype=np.int64), n, np.arange(nres, dtype=np.int64), nres,
        np.asarray(f_roff, np.int64), f_res_a, pc, np.bincount(f_res_a, minlength=nres),
        np.zeros(nres), np.zeros(nres), np.zeros(n), rate,
    )  # fmt: skip
    return rate


def partition_pass(start, finish, links, cap, on_change=None, rates=True):
    """Sweep the flows' starts and finishes in time order, keeping the partitions.

    Returns ``(changes, mm_t, mm_rate)``: per flow, the sorted times its partition changed
    (its start first); and per flow the times and values of its max-min fair rate (recomputed
    for every partition that changes). ``on_change(t, started, finished, link_flows, mm)`` is
    called after each batch of same-time changes (``mm``: every flow's current max-min rate).
    Without ``rates`` no max-min rate is computed (``mm`` stays 0).
    """
    n = start.size
    times = np.unique(np.concatenate([start, finish]))
    s_order = np.argsort(start, kind="stable")
    f_order = np.argsort(finish, kind="stable")
    si = fi = 0
    link_flows: dict[int, set[int]] = defaultdict(set)
    comp_of = np.full(n, -1, np.int64)
    comps: dict[int, list[int]] = {}
    next_id = 0
    changes: list[list[int]] = [[] for _ in range(n)]
    mm_t: list[list[int]] = [[] for _ in range(n)]
    mm_r: list[list[float]] = [[] for _ in range(n)]
    mm = np.zeros(n)
    for t in times.tolist():
        started = []
        while si < n and start[s_order[si]] == t:
            started.append(int(s_order[si]))
            si += 1
        ended = []
        while fi < n and finish[f_order[fi]] == t:
            ended.append(int(f_order[fi]))
            fi += 1
        # a flow that starts and ends at the same instant never joins
        both = set(started) & set(ended)
        started = [q for q in started if q not in both]
        ended = [q for q in ended if q not in both]
        touched = set()
        for q in ended:
            touched.add(int(comp_of[q]))
        for q in started:
            for p in links[q]:
                for y in link_flows[p]:
                    touched.add(int(comp_of[y]))
        members = set()
        for c in touched:
            members.update(comps.pop(c))
        for q in ended:
            members.discard(q)
            comp_of[q] = -1
            for p in links[q]:
                link_flows[p].discard(q)
        for q in started:
            members.add(q)
            for p in links[q]:
                link_flows[p].add(q)
        seen_ports: set[int] = set()
        while members:  # components of the affected flows, by a search over ports
            root = members.pop()
            comp = [root]
            stack = [root]
            while stack:
                y = stack.pop()
                for p in links[y]:
                    if p in seen_ports:
                        continue
                    seen_ports.add(p)
                    for z in link_flows[p]:
                        if z in members:
                            members.discard(z)
                            comp.append(z)
                            stack.append(z)
            cid = next_id
            next_id += 1
            comps[cid] = comp
            rr = _maxmin(comp, links, cap) if rates else np.zeros(len(comp))
            for q, r in zip(comp, rr.tolist(), strict=True):
                comp_of[q] = cid
                changes[q].append(t)
                mm_t[q].append(t)
                mm_r[q].append(r)
                mm[q] = r
        if on_change is not None:
            on_change(t, started, ended, link_flows, mm)
    return (
        [np.asarray(c, np.int64) for c in changes],
        [np.asarray(x, np.int64) for x in mm_t],
        [np.asarray(x) for x in mm_r],
    )


class MemoContexts:
    """The local contexts of the ports a change touches, and how many were seen before.

    A flow's rate entering a change is its goodput over its last sample period before the change
    (bytes sent, on the wire: x ``wire``), not its ``cc_rate``: flows that share their own NIC
    are paced by the NIC's scheduler, which no congestion control sees (their ``cc_rate`` stays
    at line rate while each sends a fraction of it).
    """

    def __init__(self, cap, links, start, s_t, s_q, s_sent, n, wire=1.0):
        self.cap, self.links, self.wire = cap, links, wire
        self.s_t, self.s_q, self.s_sent = s_t, s_q, s_sent
        self.i = 0
        self.rate = np.full(n, np.nan)
        self.last_t = np.asarray(start, np.float64).copy()
        self.last_b = np.zeros(n)
        self.coarse: set = set()
        self.fine: set = set()
        self.n = self.hits = self.fine_hits = 0

    def _advance(self, t):
        j = int(np.searchsorted(self.s_t, t, "left"))  # samples strictly before the change
        while self.i < j:  # one sampling instant at a time
            k = int(np.searchsorted(self.s_t, self.s_t[self.i], "right"))
            q = self.s_q[self.i : k]
            b = self.s_sent[self.i : k].astype(np.float64)
            dt = self.s_t[self.i] - self.last_t[q]
            ok = dt > 0
            self.rate[q[ok]] = (b[ok] - self.last_b[q[ok]]) * 8e12 * self.wire / dt[ok]
            self.last_t[q], self.last_b[q] = self.s_t[self.i], b
            self.i = k

    def __call__(self, t, started, ended, link_flows, mm):
        self._advance(t)
        for kind, qs in (("start", started), ("end", ended)):
            for q in qs:
                for p in set(self.links[q]):
                    fl = np.fromiter(link_flows[p], np.int64)
                    ratio = self.rate[fl] / np.maximum(mm[fl], 1.0)
                    at = int(np.sum(np.abs(ratio - 1.0) <= AT_SHARE))
                    c = (kind, int(self.cap[p]), fl.size, at)
                    quant = np.where(np.isnan(ratio), -1, np.round(np.clip(ratio, 0, 2) / 0.05))
                    f = (kind, int(self.cap[p]), tuple(sorted(quant.astype(int).tolist())))
                    self.n += 1
                    self.hits += c in self.coarse
                    self.fine_hits += f in self.fine
                    self.coarse.add(c)
                    self.fine.add(f)


# --- one experiment ---------------------------------------------------------------------------


def _pct(x: float, total: float) -> float:
    return round(100 * x / total, 2) if total > 0 else 0.0


def _x(pct: float) -> float:
    return round(1 / max(1 - pct / 100, 1e-6), 2)


def count(tr: dict, wire: float) -> dict:
    """Every candidate's share (see the module docstring) from a trace of
    :func:`oracle_trace.collect`; ``wire`` = (payload + headers) / payload of a data packet."""
    start, finish = tr["qp_start"].astype(np.int64), tr["qp_finish"].astype(np.int64)
    ok = (start >= 0) & (finish >= start)
    if not ok.all():
        raise ValueError(f"{int((~ok).sum())} flows never ran")
    size = tr["qp_size"].astype(np.float64)
    rtt = tr["qp_rtt"].astype(np.float64)
    window = float(tr["window_ps"])
    cap = tr["port_rate_bps"]
    n = start.size
    links = flow_links(tr["r_off"], tr["r_ports"], n)
    s_t, s_q = tr["s_t"], tr["s_q"].astype(np.int64)
    curves = Curves(start, finish, size, s_t, s_q, tr["s_sent"])
    memo = MemoContexts(cap, links, start, s_t, s_q, tr["s_sent"], n, wire)
    changes, mm_t, mm_r = partition_pass(start, finish, links, cap, on_change=memo)
    reach = reach_times(start, finish, links)
    # today's partitions under DCTCP and TIMELY join ACK ports too (partition_ports: auto)
    links_ack = flow_links(tr["r_off"], tr["r_ports"], n, ack=True)
    changes_ack = partition_pass(start, finish, links_ack, cap, rates=False)[0]
    # the rate samples of each flow, for predict-and-verify's check
    order = np.lexsort((s_t, s_q))
    st_sorted, sr_sorted = s_t[order], tr["s_rate"][order].astype(np.float64)
    soff = np.zeros(n + 1, np.int64)
    soff[1:] = np.cumsum(np.bincount(s_q, minlength=n))
    acc: dict[str, float] = defaultdict(float)
    errs, signed, cerrs = [], [], []
    period = float(tr["period_ps"])
    for q in range(n):
        f = int(finish[q])
        acc["part_win"] += skippable(curves, q, changes[q], f, window)
        acc["part_ack_win"] += skippable(curves, q, changes_ack[q], f, window)
        for v in V_MULTS:
            acc[f"fluid_{v}rtt"] += skippable(curves, q, changes[q], f, v * rtt[q])
        for k in RTT_MULTS:
            acc[f"bn_{k}rtt"] += skippable(curves, q, reach[q], f, k * rtt[q])
        acc["bn_win"] += skippable(curves, q, reach[q], f, window)
        # predict-and-verify: max-min at the change against the measured rate after V
        r = reach[q]
        a = r + V_MULTS[0] * rtt[q]
        b = np.append(r[1:], f)
        long = (b - a) >= 2 * period
        if not long.any():
            continue
        ts = st_sorted[soff[q] : soff[q + 1]]
        rs = sr_sorted[soff[q] : soff[q + 1]]
        pred = mm_r[q][np.searchsorted(mm_t[q], r[long], "right") - 1]
        for ai, bi, pr in zip(a[long], b[long], pred, strict=True):
            lo, hi = np.searchsorted(ts, ai, "left"), np.searchsorted(ts, bi, "left")
            if hi - lo < 2 or pr <= 0:
                continue
            cc = rs[lo:hi].mean()
            cerrs.append(abs(pr - cc) / cc)
            gput = float(curves.between(q, ai, bi)) * 8 * wire / ((bi - ai) / 1e12)
            if gput > 0:
                errs.append(abs(pr - gput) / gput)
                signed.append((gput - pr) / pr)
    total = float(size.sum())
    row: dict = {
        "flows": n,
        "fabric_gb": round(total / 1e9, 3),
        "window_us": window / 1e6,
        "rtt_us_p50": round(float(np.median(rtt)) / 1e6, 2),
        "fct_us_p50": round(float(np.median(finish - start)) / 1e6, 1),
        "changes": int(np.unique(np.concatenate([start, finish])).size),
        # interruptions a flow sees after its start: its partition's changes, and the changes
        # that reach it (1 hop); equal counts mean scoping cannot help beyond the partition
        "part_changes_per_flow": round(float(np.mean([c.size for c in changes])) - 1, 2),
        "reach_changes_per_flow": round(float(np.mean([r.size for r in reach])) - 1, 2),
    }
    for k in ("part_win", "part_ack_win", *(f"bn_{m}rtt" for m in RTT_MULTS), "bn_win",
              *(f"fluid_{v}rtt" for v in V_MULTS)):  # fmt: skip
        pct = _pct(acc[k], total)
        row[f"{k}_pct"] = pct
        row[f"{k}_x"] = _x(pct)

    def qtl(xs, p):
        return round(100 * float(np.percentile(xs, p)), 2) if xs else None

    row.update(
        pv_intervals=len(errs),
        pv_err_p50_pct=qtl(errs, 50),
        pv_err_p90_pct=qtl(errs, 90),
        pv_signed_p50_pct=qtl(signed, 50),
        pv_ccrate_err_p50_pct=qtl(cerrs, 50),
        memo_contexts=memo.n,
        memo_keys=len(memo.coarse),
        memo_recur_pct=_pct(memo.hits, memo.n),
        memo_fine_recur_pct=_pct(memo.fine_hits, memo.n),
    )
    return row


def _wire_factor(name: str) -> float:
    import generalization as gen

    from wormsim.experiment import load_experiment
    from wormsim.netsim.network_config import FRAME_HEADER_BYTES, INT_HEADER_BYTES

    e = gen._BY_NAME[name]
    net = load_experiment(e.path, list(e.overrides)).network
    mtu = net.payload_size_bytes
    return (mtu + FRAME_HEADER_BYTES + INT_HEADER_BYTES[net.cc]) / mtu


def trace_path(folder: Path, name: str, scale: float) -> Path:
    return folder / f"{name}-x{scale}.npz"


COLS = [
    "date", "commit", "scale", "experiment", "cc", "fabric", "flows", "fabric_gb", "window_us",
    "rtt_us_p50", "fct_us_p50", "part_changes_per_flow", "reach_changes_per_flow",
    "part_win_pct", "part_win_x", "part_ack_win_pct", "bn_1rtt_pct", "bn_3rtt_pct", "bn_3rtt_x",
    "bn_10rtt_pct", "bn_10rtt_x", "bn_win_pct", "bn_win_x", "pv_err_p50_pct", "pv_err_p90_pct",
    "pv_signed_p50_pct", "pv_ccrate_err_p50_pct", "memo_recur_pct", "memo_fine_recur_pct",
    "memo_keys", "fluid_3rtt_pct", "fluid_3rtt_x", "fluid_10rtt_pct", "fluid_10rtt_x",
    "packet_wall_s",
]  # fmt: skip

INTRO = (
    "`python bench/oracle_ceiling.py` (see its docstring for what is counted and its "
    "approximations): from one packet-mode run per experiment, the share of fabric flow-bytes "
    "each candidate mechanism of issue 42 could skip with hindsight, and `*_x` = 1 / (1 - share), "
    "the events ceiling if skipped bytes cost nothing. `part_win`: whole-partition skip after "
    "one window span (today's rule over data ports, as under HPCC and DCQCN; `part_ack_win`: "
    "over data and ACK ports, as under DCTCP and TIMELY); `bn_*`: bottleneck-scoped (a change "
    "reaches the flows "
    "sharing a port with the changed flow) after W_settle = 1, 3, 10 base RTTs or a window; "
    "predict-and-verify's share equals `bn_3rtt` / `bn_10rtt` (V = 3, 10 RTTs), `pv_*` its "
    "max-min prediction against the packet run's measured rate (goodput on the wire) after "
    "V = 3 RTTs (relative error median and p90; signed median = (measured - max-min) / max-min; "
    "`ccrate`: against the mean cc_rate instead); `memo_*`: share of local port contexts at "
    "changes whose key was seen before "
    "(coarse: flows and flows at their share; fine: every flow's rate / share in 5 % steps); "
    "`fluid_*`: between any two changes of the partition, less V = 3 or 10 RTTs after each. "
    "`*_changes_per_flow`: partition changes and 1-hop-reaching changes a flow sees after its "
    "start. `packet_wall_s`: the trace run's wall time (kernel stopped every 5 us, on a shared "
    "machine), not a speed figure."
)


def main() -> None:
    import generalization as gen
    from _records import write_md

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--only", nargs="*", default=None, help="experiment names")
    parser.add_argument("--period-us", type=float, default=5.0, help="trace sampling period")
    parser.add_argument(
        "--traces", type=Path, default=ROOT / "runs" / "oracle",
        help="folder of packet traces (made when missing, reused when present)",
    )  # fmt: skip
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.list:
        for e in gen.EXPERIMENTS:
            print(f"{e.name:30s} # {e.why}")
        return
    names = gen.chosen(parser, args.only)
    meta = gen.run_meta(args.scale)
    jsonl = RESULTS / "oracle_ceiling.jsonl"
    for name in names:
        path = trace_path(args.traces, name, args.scale)
        if not path.exists():
            cmd = [sys.executable, str(HERE / "oracle_trace.py"), name, str(args.scale),
                   str(path), "--period-us", str(args.period_us)]  # fmt: skip
            subprocess.run(cmd, check=True)
        z = np.load(path, allow_pickle=False)
        tr = {k: z[k] for k in z.files}
        c = json.loads(str(tr["counters"]))
        fabric = c["topology"] + (
            f" {c['oversubscription']:g}:1" if float(c["oversubscription"]) != 1 else ""
        )
        row = {**meta, "experiment": name, "cc": c["cc"], "fabric": fabric}
        row.update(count(tr, _wire_factor(name)))
        row.update(packet_events=c["events_processed"], packet_wall_s=c["sim_wall_s"])
        print(json.dumps(row), flush=True)
        if not args.no_record:
            with jsonl.open("a") as f:
                f.write(json.dumps(row) + "\n")
            write_md(
                jsonl, RESULTS / "oracle_ceiling.md",
                "Ceilings of candidate mechanisms, by oracle count (issue 42)", INTRO, COLS,
            )  # fmt: skip


if __name__ == "__main__":
    main()
