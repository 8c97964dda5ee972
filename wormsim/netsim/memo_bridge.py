"""Wormhole memoization between the packet kernel and the memo store (paper §2 steps 2 and 4).

The kernel stops (status 3) when partitions formed or a missed partition became steady; the
:class:`MemoBridge` then, for each such partition,

* **formed** — builds its Flow Conflict Graph from the flows' sending rates at formation and their
  data and ACK routes (directed egress ports), looks it up in the run's
  :class:`~wormsim.memo.session.MemoSession` (its namespace's view of the memo store), and either
  replays the hit in the kernel (:func:`~wormsim.netsim.packet.engine.apply_memo_hit`) or marks a
  miss;
* **steady after a miss** — stores the snapshot the kernel took at steady entry: ``T_conv`` (from
  formation to steady entry, detection window included, since that is the time a hit saves),
  ``Size_f`` (bytes each flow had acked in between) and the end rates (the detector's window
  means).

The session sees the store as it was when the run started plus the run's own entries, so the
run's output depends only on its inputs and that snapshot (its fingerprint), never on other runs
writing to the store meanwhile. In mode ``readwrite`` inserts also go to the SQLite store at once,
so later runs share them and a killed run keeps what it stored; in mode ``read`` they stay in the
session. Lookups go through a per-run cache keyed by the partition's *labelled* FCG (rate buckets
and shared-link counts in the partition's own flow order): within a run the same contention
pattern recurs thousands of times with the same labelling, and a cached answer needs neither the
canonical form nor a match. Cached misses are forgotten whenever this run inserts; hits served
from the cache are added to the store's hit counts by :meth:`MemoBridge.close`.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, NamedTuple

import numpy as np

from wormsim.memo import DEFAULT_QUANTIZER, MemoEntry, MemoSession, RateQuantizer, build_fcg
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.engine import apply_memo_hit
from wormsim.netsim.packet.wh import MEMO_DONE, MEMO_INSERT, MEMO_LOOKUP, MEMO_MISS
from wormsim.netsim.sim_spec import WormholeSpec
from wormsim.netsim.topology import Topology

__all__ = ["MemoBridge", "memo_namespace", "ENGINE_MODEL"]

ENGINE_MODEL = 1
"""Version of the packet engine's dynamics, part of every namespace: bump it when a kernel change
alters transients, so entries stored by the old engine are never replayed by the new one."""

_BPS_PER_BYTES_PER_PS = 8e12


def memo_namespace(
    net: NetworkSpec, topo: Topology, spec: WormholeSpec, window: int
) -> dict[str, Any]:
    """Everything besides the FCG that shapes a transient, as a namespace dict.

    ``window`` is the detector window actually used (DCQCN stretches the configured one).
    The network's RNG seed is left out so runs that differ only in seed share entries.
    """
    cc_params = net.model_dump(mode="json", exclude={"seed"})
    return {
        "cc": net.cc,
        "cc_params": cc_params,
        "link_rates_bps": sorted({int(r) for r in topo.port_rate_bps}),
        "link_delays_ps": sorted({int(d) for d in topo.port_delay_ps}),
        "buffer_bytes": int(net.buffer_size_mb * 1024 * 1024),
        "mtu_bytes": int(net.payload_size_bytes),
        "ecn": (
            {
                "kmin_kb": cc_params["kmin_kb"],
                "kmax_kb": cc_params["kmax_kb"],
                "pmax": cc_params["pmax"],
            }
            if net.enable_qcn
            else None
        ),
        "pfc": {"dynamic_threshold": net.use_dynamic_pfc_threshold} if net.pfc_enabled else None,
        "detector": {
            "theta": spec.theta,
            "window": int(window),
            "sample_period_ns": int(spec.sample_period_ns),
            "partition_ports": spec.partition_ports,
        },
        "engine_model": ENGINE_MODEL,
    }


class _Cached(NamedTuple):
    """A stored transient in a partition's own flow order."""

    entry_id: int
    sizef: np.ndarray
    rend: np.ndarray  # bytes/ps
    t_conv_ps: int


class MemoBridge:
    """Serves the kernel's memo requests for one run.

    Parameters
    ----------
    session : MemoSession
        This run's view of the memo store, opened on :func:`memo_namespace` of this run.
    quantizer : RateQuantizer
        Rate buckets of the FCG vertices.
    replay : bool
        Apply hits; with ``False`` entries found are counted as rejected and the partition is
        simulated (the store still learns from this run).

    Attributes
    ----------
    hits, misses, inserts, rejected : int
        Hits replayed; lookups without an entry; entries stored by this run; entries found but
        not replayed (a flow would have finished inside the stored transient, or ``replay`` is
        off), whose partitions were simulated instead. A stored entry that does not decode is
        never used (lookups that would have found it miss) and is counted by the session.
    """

    def __init__(
        self,
        session: MemoSession,
        quantizer: RateQuantizer = DEFAULT_QUANTIZER,
        replay: bool = True,
        data_ports_only: bool = False,
    ) -> None:
        self.session = session
        self.replay = replay
        # FCG edges: ports of the data route only (r_off[2q]..r_off[2q+1]) or data and ACK
        self.route_end = 1 if data_ports_only else 2
        self.quantizer = quantizer
        self._cache: dict[tuple, _Cached | None] = {}
        self._cached_hits: Counter[int] = Counter()
        self.hits = self.misses = self.inserts = self.rejected = 0
        self.wall_s = 0.0

    def close(self) -> None:
        """Hand the hits served from the cache to the session and close it (hit counts go to
        the store in mode ``readwrite``)."""
        self.session.add_hits(self._cached_hits)
        self._cached_hits.clear()
        self.session.close()

    def counters(self) -> dict[str, float]:
        """Memo counters for ``summary.json``."""
        return {
            "memo_hits": self.hits,
            "memo_misses": self.misses,
            "memo_inserts": self.inserts,
            "memo_rejected": self.rejected,
            "memo_wall_s": round(self.wall_s, 4),
            "memo_snapshot_entries": self.session.snapshot_entries,
            "memo_corrupt_entries": self.session.corrupt_entries,
        }

    def service(self, A: dict[str, np.ndarray], S: st.State, P: st.Params) -> None:
        """Answer every pending lookup and insert of state ``A`` (wrapped as ``S``)."""
        t0 = time.perf_counter()
        memo, lab = A["wh_memo"], A["wh_lab"]
        # only active flows carry labels: scan the kernel's active list, not every QP (at 1024
        # GPUs there are 750,000 QPs and tens of thousands of calls)
        act = A["wh_act"][: int(A["cnt"][st.C_WH_NACT])]
        state = memo[act]
        pend = act[(state == MEMO_LOOKUP) | (state == MEMO_INSERT)]
        live = lab[pend] == pend
        memo[pend[~live]] = MEMO_DONE  # labels of partitions that no longer exist
        roots = np.sort(pend[live])
        if roots.size:
            active = act[np.isin(lab[act], roots)]
            members = active[np.lexsort((active, lab[active]))]  # by label, then QP
            bounds = np.searchsorted(lab[members], roots)
            ends = np.append(bounds[1:], members.size)
            for r, a, b in zip(roots.tolist(), bounds.tolist(), ends.tolist(), strict=True):
                qs = members[a:b]
                if memo[r] == MEMO_LOOKUP:
                    self._lookup(A, S, P, r, qs)
                else:
                    self._insert(A, r, qs)
        self.wall_s += time.perf_counter() - t0

    # -- internals --------------------------------------------------------------------------
    def _fcg(self, A: dict[str, np.ndarray], qs: np.ndarray):
        r_off, r_ports, r0 = A["r_off"], A["r_ports"], A["wh_r0"]
        end = self.route_end
        return build_fcg(
            (
                (int(q), float(r0[q]), r_ports[r_off[2 * q] : r_off[2 * q + end]].tolist())
                for q in qs.tolist()
            ),
            self.quantizer,
        )

    def _lookup(
        self, A: dict[str, np.ndarray], S: st.State, P: st.Params, r: int, qs: np.ndarray
    ) -> None:
        key = self._labelled_key(A, qs)
        if key in self._cache:
            found = self._cache[key]
            if found is not None:
                self._cached_hits[found.entry_id] += 1
        else:
            hit = self.session.lookup(self._fcg(A, qs))
            found = None
            if hit is not None:
                found = _Cached(
                    hit.entry_id,
                    np.array([hit.sent_bytes[q] for q in qs.tolist()], np.int64),
                    np.array([hit.end_rates_bps[q] for q in qs.tolist()]) / _BPS_PER_BYTES_PER_PS,
                    int(hit.t_conv_ps),
                )
            self._cache[key] = found
        if found is None:
            self.misses += 1
            A["wh_memo"][r] = MEMO_MISS
            return
        if self.replay and apply_memo_hit(
            S, P, r, qs.astype(np.int64), found.sizef, found.rend, found.t_conv_ps
        ):
            self.hits += 1
        else:
            self.rejected += 1
            A["wh_memo"][r] = MEMO_DONE

    def _labelled_key(self, A: dict[str, np.ndarray], qs: np.ndarray) -> tuple:
        """The FCG of flows ``qs`` with vertices numbered in that order (not canonical)."""
        r_off, r_ports, r0 = A["r_off"], A["r_ports"], A["wh_r0"]
        on_port: dict[int, list[int]] = {}
        for i, q in enumerate(qs.tolist()):
            for port in set(r_ports[r_off[2 * q] : r_off[2 * q + self.route_end]].tolist()):
                on_port.setdefault(port, []).append(i)
        shared: Counter[tuple[int, int]] = Counter()
        for members in on_port.values():
            for k, i in enumerate(members):
                for j in members[k + 1 :]:
                    shared[(i, j)] += 1
        buckets = tuple(self.quantizer.bucket(float(r0[q])) for q in qs.tolist())
        return buckets, tuple(sorted(shared.items()))

    def _insert(self, A: dict[str, np.ndarray], r: int, qs: np.ndarray) -> None:
        A["wh_memo"][r] = MEMO_DONE
        fcg = self._fcg(A, qs)
        entry = MemoEntry(
            end_rates_bps={int(q): float(A["wh_rend"][q]) * _BPS_PER_BYTES_PER_PS for q in qs},
            sent_bytes={int(q): int(A["wh_sizef"][q]) for q in qs},
            t_conv_ps=int(A["wh_tconv"][r]),
        )
        if self.session.insert(fcg, entry).created:
            self.inserts += 1
        self._cache = {k: v for k, v in self._cache.items() if v is not None}
