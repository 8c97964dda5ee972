"""Wormhole memoization between the packet kernel and the memo store (paper §2 steps 2 and 4).

The kernel stops (status 3) when partitions formed or a missed partition became steady; the
:class:`MemoBridge` then, for each such partition,

* **formed** — builds its Flow Conflict Graph from the flows' sending rates at formation and their
  data and ACK routes (directed egress ports), looks it up in the run's
  :class:`~wormsim.memo.session.MemoSession` (its namespace's view of the memo store), and either
  replays the hit in the kernel (:func:`~wormsim.netsim.packet.wormhole.entry.apply_memo_hit`)
  or marks a miss;
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
canonical form nor a match. A cached miss is forgotten when this run inserts an entry into the
store bucket it searched (no other entry can turn it into a hit); hits served
from the cache are added to the store's hit counts by :meth:`MemoBridge.close`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from typing import Any, NamedTuple

import numpy as np

from wormsim.memo import (
    DEFAULT_QUANTIZER,
    LogRateQuantizer,
    MemoEntry,
    MemoSession,
    RateQuantizer,
    build_fcg,
    canonical_form,
)
from wormsim.memo.key import wl_hash_arrays
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.wormhole.conflicts import (
    ack_streams,
    data_port_ack_load,
    shared_ports,
    vertex_weights,
)
from wormsim.netsim.packet.wormhole.entry import (
    apply_memo_hit,
    materialise_group,
    park_shadow,
    remap_shadow,
)
from wormsim.netsim.packet.wormhole.fields import HOLD_WAITING
from wormsim.netsim.packet.wormhole.mirror import MIRROR_REASONS, MIRRORED, mirror_order, progress
from wormsim.netsim.packet.wormhole.skip import (
    MEMO_DONE,
    MEMO_INSERT,
    MEMO_LOOKUP,
    MEMO_MISS,
)
from wormsim.netsim.wormhole.governor import MemoGovernor
from wormsim.netsim.wormhole.plan import WormholePlan
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = ["MemoBridge", "memo_namespace", "ENGINE_MODEL", "PACKET_MODEL"]

PACKET_MODEL = 8
"""Version of what packet mode computes: bumped when its results change. Packet references kept
by benchmarks are keyed by it (history: docs/wormhole.md, "Engine and packet model versions")."""

ENGINE_MODEL = 16
"""Version of the packet engine's dynamics, part of every namespace: bump it when a kernel change
alters transients, so entries stored by the old engine are never replayed by the new one
(history: docs/wormhole.md, "Engine and packet model versions")."""

#: a vertex's weight is ((rate bucket) * _ACK_SPAN + ACK streams) * _RTT_SPAN + base-RTT bucket
_RTT_SPAN = 1 << 20
_ACK_SPAN = 1 << 8


START_UP_RTTS = 2.0
"""A flow is in its start-up while younger than this many base RTTs (plus the sample period
its partition may take to form): the flows of a ring step start over several sampler ticks
and share one start-up. On GPT-7B/64 on a k=8 fat-tree under DCTCP at 0.1 size (packet mode's
own floor: 0.02 % mean fabric-flow FCT, 0.004 % iteration), one period alone: 1.60 % / 1.11 %;
1 RTT: 0.18 / 0.04 %; 2 RTTs: 0.20 / 0.06 %; a whole steadiness window (100 us): 0.18 / 0.19 %
(flows with 20-100 us of another pattern behind them replayed as if they had just started)."""


def _same_bytes(a: np.ndarray, b: np.ndarray, mtu: int, scale: np.ndarray | None = None) -> bool:
    """Whether byte counts ``a`` and ``b`` agree flow by flow within :data:`_SHARE_SIZE_TOL` of
    ``scale`` (default ``b``: remaining bytes compared with remaining bytes), or two packets."""
    scale = b if scale is None else scale
    return bool(np.all(np.abs(a - b) <= np.maximum(_SHARE_SIZE_TOL * scale, 2 * mtu)))


_SHARE_SIZE_TOL = 0.005
"""A partition follows a same-tick leader only if each flow's remaining bytes are within this
fraction (or two packets) of its leader flow's: a follower flow finishes when its leader flow
does."""


def memo_namespace(net: NetworkSpec, topo: Topology, plan: WormholePlan) -> dict[str, Any]:
    """Everything besides the FCG that shapes a transient, as a namespace dict.

    The detector is keyed as the plan resolved it: its window in samples after a timer
    stretch, its partition rule after ``auto``. The network's RNG seed is left out so runs
    that differ only in seed share entries.
    """
    cc_params = net.model_dump(mode="json", exclude={"seed"})
    detector = {
        "theta": plan.theta,
        "window": int(plan.window_samples),
        "sample_period_ns": int(plan.sample_period_ps // 1000),
        "partition_ports": plan.partition_ports,
    }
    if plan.steadiness != "range":  # keyed only when not "range": older stores stay valid
        detector["steadiness"] = plan.steadiness
    if plan.patience_windows > 0:  # stored transients of unsettled partitions end later
        detector["patience_windows"] = plan.patience_windows
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
        "detector": detector,
        "engine_model": ENGINE_MODEL,
    }


class _Cached(NamedTuple):
    """A stored transient in a partition's own flow order."""

    entry_id: int
    sizef: np.ndarray
    rend: np.ndarray  # bytes/ps
    t_conv_ps: int
    ccs: np.ndarray  # per flow, the CC state a replay restores (no columns when none)


class _Miss(NamedTuple):
    """A lookup that found nothing, and the store bucket it searched."""

    bucket: tuple


class MemoBridge:
    """Serves the kernel's memo requests for one run.

    Parameters
    ----------
    session : MemoSession
        This run's view of the memo store, opened on :func:`memo_namespace` of this run.
    plan : WormholePlan
        The run's plan; the bridge reads: ``memo_replay`` (apply hits; with ``False`` entries
        found are counted as rejected and the partition is simulated, the store still learns
        from this run), ``data_ports_only`` (FCG edges from shared data ports only),
        ``share_transients`` (park the partitions that miss at one tick with the labelled FCG
        of an earlier miss of the same tick, its *leader*, instead of simulating each, when
        every flow has within ``_SHARE_SIZE_TOL`` of its leader flow's remaining bytes, so the
        two would run the same course) and ``sample_period_ps`` (a partition forms up to one
        period after its flows start, see :meth:`_starting`).
    quantizer : RateQuantizer
        Rate buckets of the FCG vertices.
    governor : MemoGovernor
        Pauses lookups while they save fewer packets than they cost (default: its defaults).

    Attributes
    ----------
    hits, misses, inserts, rejected, parked : int
        Hits replayed; lookups without an entry; entries stored by this run; entries found but
        not replayed (a flow would have finished inside the stored transient, or ``replay`` is
        off), whose partitions were simulated instead; misses parked behind a leader (counted
        in ``misses`` too). A stored entry that does not decode is never used (lookups that
        would have found it miss) and is counted by the session.
    """

    def __init__(
        self,
        session: MemoSession,
        plan: WormholePlan,
        quantizer: RateQuantizer = DEFAULT_QUANTIZER,
        governor: MemoGovernor | None = None,
    ) -> None:
        self.session = session
        self.replay = plan.memo_replay
        self.share = plan.share_transients
        # FCG edges: ports of the data route only (r_off[2q]..r_off[2q+1]) or data and ACK
        self.route_end = 1 if plan.data_ports_only else 2
        self.quantizer = quantizer
        self._cache: dict[tuple, _Cached | _Miss] = {}
        self._missed: dict[tuple, list[tuple]] = {}  # store bucket -> keys cached as misses
        self._cached_hits: Counter[int] = Counter()
        self.hits = self.misses = self.inserts = self.rejected = self.parked = 0
        self.remapped = self.unmatched = 0
        self.unmatched_why: Counter[str] = Counter()  # why re-formed shadows did not match
        self.wall_s = 0.0
        # misses of the current service call (one sampler tick): labelled key -> leader
        self._leaders: dict[tuple, list] = {}  # [root, QPs, followers, labelled key]
        self._acks: np.ndarray | None = None  # ACK streams per port, this service call
        # root -> (QPs, vertex weights, start-up mask) of a miss: its entry is keyed by the
        # partition as it formed, and its flows' start-ups are judged as they were then
        self._formed: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._leader_of: dict[int, list] = {}  # the same lists by root
        self._qp_hosts: tuple[np.ndarray, np.ndarray] | None = None
        self.period_ps = plan.sample_period_ps
        self.governor = MemoGovernor() if governor is None else governor
        self._root_mask: np.ndarray | None = None  # scratch of service(): labels pending
        self._unpaused = 0  # partitions of decided pauses the kernel has not formed yet
        self._shadow_bytes = 0  # shadow credit (kernel counter) the governor has counted

    def close(self) -> None:
        """Hand the hits served from the cache to the session and close it (hit counts go to
        the store in mode ``readwrite``)."""
        self.session.add_hits(self._cached_hits)
        self._cached_hits.clear()
        self.session.close()

    def finish(self, A: dict[str, np.ndarray]) -> None:
        """Take the end of run state ``A`` into the counters (a pause the run outlived)."""
        self._unpaused = int(A["cnt"][st.C_WH_MEMO_PAUSE])

    def counters(self) -> dict[str, float]:
        """Memo counters for ``summary.json``."""
        return {
            "memo_hits": self.hits,
            "memo_misses": self.misses,
            "memo_inserts": self.inserts,
            "memo_rejected": self.rejected,
            "memo_parked": self.parked,
            "memo_shadows_unmatched": self.unmatched,
            "memo_wall_s": round(self.wall_s, 4),
            "memo_pauses": self.governor.pauses,
            "memo_paused_partitions": self.governor.paused_partitions - self._unpaused,
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
        self._leaders.clear()
        self._leader_of.clear()
        self._acks = None
        if roots.size:
            if self._root_mask is None or self._root_mask.size != lab.size + 1:
                self._root_mask = np.zeros(lab.size + 1, bool)  # by label + 1 (-1: none)
            mask = self._root_mask
            mask[roots + 1] = True
            active = act[mask[lab[act] + 1]]
            mask[roots + 1] = False
            members = active[np.lexsort((active, lab[active]))]  # by label, then QP
            bounds = np.searchsorted(lab[members], roots)
            ends = np.append(bounds[1:], members.size)
            reformed = []
            for r, a, b in zip(roots.tolist(), bounds.tolist(), ends.tolist(), strict=True):
                qs = members[a:b]
                if memo[r] != MEMO_LOOKUP:
                    self._insert(A, r, qs)
                elif self.share and (A["wh_qgrp"][qs] >= 0).any():
                    reformed.append((r, qs))  # after this tick's leaders are known
                else:
                    self._lookup(A, S, P, r, qs)
            for r, qs in reformed:
                self._reform(A, S, P, r, qs)
        self.wall_s += time.perf_counter() - t0

    # -- internals --------------------------------------------------------------------------
    def _fcg(self, A: dict[str, np.ndarray], qs: np.ndarray, weights: np.ndarray | None = None):
        """The partition's Flow Conflict Graph, vertices weighted by :meth:`_weights`."""
        r_off, r_ports, r0 = A["r_off"], A["r_ports"], A["wh_r0_bps"]
        end = self.route_end
        g = build_fcg(
            (
                (int(q), float(r0[q]), r_ports[r_off[2 * q] : r_off[2 * q + end]].tolist())
                for q in qs.tolist()
            ),
            self.quantizer,
        )
        weights = self._weights(A, qs) if weights is None else weights
        for q, w in zip(qs.tolist(), weights.tolist(), strict=True):
            g.nodes[q]["weight"] = w
        return g

    def _weights(
        self, A: dict[str, np.ndarray], qs: np.ndarray, rates: np.ndarray | None = None
    ) -> np.ndarray:
        """One integer per flow of ``qs``: its start-rate bucket (or that of ``rates``, bit/s),
        its base-RTT bucket (the rate quantizer's log buckets over picoseconds) and, with
        data-port partitions, the ACK streams of active flows crossing its data ports.

        Two flows alone on a 2-hop and on a 6-hop path are not the same pattern, nor are flows
        with and without other flows' ACKs on their uplinks (in a data-parallel ring each
        flow's uplink carries the ACKs of the flow into it): keyed by start rate alone, a k=4
        fat-tree permutation was 5.5 % off in mean FCT (29 % on one flow), 0.31 % with both."""
        q64 = np.ascontiguousarray(qs, np.int64)
        r0 = A["wh_r0_bps"][q64] if rates is None else np.asarray(rates, np.float64)
        if self.route_end == 1:
            if self._acks is None:  # once per service call: the active flows do not change
                act = A["wh_act"][: int(A["cnt"][st.C_WH_NACT])].astype(np.int64)
                self._acks = ack_streams(A["r_off"], A["r_ports"], act, A["p_free"].shape[0])
            load = data_port_ack_load(A["r_off"], A["r_ports"], q64, self._acks)
        else:
            load = np.zeros(q64.size, np.int64)
        rtt = A["wh_rtt"][q64].astype(np.float64)
        if isinstance(self.quantizer, LogRateQuantizer):  # jitted, the same buckets
            lq = math.log1p(self.quantizer.quantum)
            return vertex_weights(
                np.ascontiguousarray(r0, np.float64), rtt, load, self.quantizer.floor_bps, lq,
                _ACK_SPAN, _RTT_SPAN,
            )  # fmt: skip
        rate_b = np.array([self.quantizer.bucket(float(x)) for x in r0.tolist()], np.int64)
        rtt_b = np.array([self.quantizer.bucket(float(x)) for x in rtt.tolist()], np.int64)
        return (rate_b * _ACK_SPAN + np.minimum(load, _ACK_SPAN - 1)) * _RTT_SPAN + (
            rtt_b % _RTT_SPAN
        )

    def _lookup(
        self, A: dict[str, np.ndarray], S: st.State, P: st.Params, r: int, qs: np.ndarray
    ) -> None:
        weights = self._weights(A, qs)  # once: the key, the FCG and the entry share them
        key = self._labelled_key(A, qs, weights=weights)
        if self.share:
            if self._follow(A, S, P, key, r, qs):
                self._govern(A, P, 0.0)  # a park pays as its shadow is credited (counted later)
                return
        found = self._cache.get(key)
        if isinstance(found, _Cached):
            self._cached_hits[found.entry_id] += 1
        elif found is None and not self.session.holds(bucket := self._bucket(key)):
            # most lookups of a run that keeps meeting new patterns: nothing to match, so no
            # graph to build (the FCG and its canonical form were 3/4 of the bridge's time)
            found = _Miss(bucket)
            self._missed.setdefault(bucket, []).append(key)
            self._cache[key] = found
        elif found is None:
            fcg = self._fcg(A, qs, weights)
            cf = canonical_form(fcg)
            hit = self.session.lookup(fcg, cf)
            if hit is None:
                found = _Miss(self.session.bucket(fcg, cf))
                self._missed.setdefault(found.bucket, []).append(key)
            else:
                found = _Cached(
                    hit.entry_id,
                    np.array([hit.sent_bytes[q] for q in qs.tolist()], np.int64),
                    np.array([hit.end_rates_bps[q] for q in qs.tolist()]) / BPS_PER_BYTE_PER_PS,
                    int(hit.t_conv_ps),
                    np.array([hit.cc_state[q] for q in qs.tolist()], np.float64)
                    if hit.cc_state
                    else np.zeros((qs.size, 0)),
                )
            self._cache[key] = found
        if self.share:  # this tick's identical partitions follow this one, whatever it does
            self._leaders[key] = self._leader_of[r] = [r, qs, 0, key]
        if isinstance(found, _Miss):
            self.misses += 1
            A["wh_memo"][r] = MEMO_MISS
            # the entry is keyed by the partition as it formed: its context then, not at insert
            self._formed[r] = (qs.copy(), weights, self._starting(A, r, qs))
            self._govern(A, P, 0.0)
            return
        sizef = (
            self._aged(A, r, qs, found.sizef, found.rend, +1, self._starting(A, r, qs))
            if self.replay
            else None
        )
        if sizef is not None and apply_memo_hit(
            S, P, r, qs.astype(np.int64), sizef, found.rend, found.t_conv_ps, found.ccs
        ):
            self.hits += 1
            self._govern(A, P, float(sizef.sum()))
        else:
            self.rejected += 1
            A["wh_memo"][r] = MEMO_DONE
            self._govern(A, P, 0.0)

    def _govern(self, A: dict[str, np.ndarray], P: st.Params, saved_bytes: float) -> None:
        """Count a lookup with the governor and hand the kernel any pause it decides.

        ``saved_bytes`` is what this lookup saved at once (a hit's replayed bytes). What
        parking saved is counted as the kernel credits it to shadow flows (as they finish with
        their leader or are materialised), since the last lookup: a follower that soon breaks
        away from its leader saved only what it mirrored until then, not its remaining bytes."""
        shadow = int(A["cnt"][st.C_WH_SHADOW_BYTES])
        saved_bytes += shadow - self._shadow_bytes
        self._shadow_bytes = shadow
        pause = self.governor.observe(saved_bytes / P.mtu)
        if pause:
            cnt = A["cnt"]
            cnt[st.C_WH_MEMO_PAUSE] = max(int(cnt[st.C_WH_MEMO_PAUSE]), pause)

    def _follow(
        self, A: dict[str, np.ndarray], S: st.State, P: st.Params, key: tuple, r: int,
        qs: np.ndarray,
    ) -> bool:  # fmt: skip
        """Make partition ``r`` a shadow of this tick's leader of ``key`` if there is one and
        every flow has its leader flow's remaining bytes; whether it did."""
        lead = self._leaders.get(key)
        if lead is None:
            return False
        lead_r, lead_qs, n_followers, _ = lead
        # what is left of each flow by now (a leader's replay just applied not counted yet)
        both = np.concatenate((qs, lead_qs))
        rem = A["qp_size"][both] + A["qp_credit"][both] - self._progress(A, both)
        if not _same_bytes(rem[: qs.size], rem[qs.size :], P.mtu):
            return False
        # and the same bytes in flight: acknowledged progress alone is blind to a flow that
        # started earlier and has more on the wire (at 1 % message size a flow that started
        # 0.97 us before its leader, neither acked yet, finished with it: 17 % late)
        flight = A["qp_nxt"][both] - A["qp_una"][both]
        if not _same_bytes(flight[: qs.size], flight[qs.size :], P.mtu, rem[qs.size :]):
            return False
        first = n_followers == 0
        park_shadow(S, P, r, lead_r, qs.astype(np.int64), lead_qs.astype(np.int64), first)
        lead[2] += 1
        self.parked += 1
        return True

    def _reform(
        self, A: dict[str, np.ndarray], S: st.State, P: st.Params, r: int, qs: np.ndarray
    ) -> None:
        """A shadow re-formed (its leader finished a flow or it was released flows): keep it
        parked behind the leader's re-formed partition if it still mirrors it, else bring it
        back and look it up as any partition."""
        order = self._mirror_order(A, qs, P.mtu)
        if order is not None:
            lead, fo = order
            lead_r, lead_qs, n_followers, _ = lead
            g = int(A["wh_qgrp"][fo[0]])
            remap_shadow(
                S, P, r, g, lead_r, fo.astype(np.int64), lead_qs.astype(np.int64),
                n_followers == 0,
            )  # fmt: skip
            lead[2] += 1
            self.remapped += 1
            return
        self.unmatched += 1
        grp = A["wh_qgrp"][qs]
        for g in np.unique(grp[grp >= 0]).tolist():
            materialise_group(S, P, int(g))
        started = A["wh_lab"][qs] >= 0  # (held flows keep the rate they started at)
        A["wh_r0_bps"][qs[started]] = A["qp_rate_bps"][qs[started]]
        A["wh_memo"][r] = MEMO_LOOKUP
        self._lookup(A, S, P, r, qs)

    def _mirror_order(self, A: dict[str, np.ndarray], qs: np.ndarray, mtu: int):
        """(leader, ``qs`` in the order of the leader's QPs) if re-formed shadow ``qs`` (one
        parked group and flows held on it) mirrors a partition that leads at this tick: parked
        QPs by the leader QPs they mirror, held ones by start time and size; same labelled FCG
        (parked QPs weighted by their leader QP's rate) and remaining bytes
        (:func:`~wormsim.netsim.packet.wormhole.mirror.mirror_order`). Else None."""
        parked = qs[A["wh_hold"][qs] != HOLD_WAITING]
        if parked.size == 0 or A["wh_mapq"][parked[0]] < 0:
            return self._unmatched("no_parked")
        lead = self._leader_of.get(int(A["wh_lab"][A["wh_mapq"][parked[0]]]))
        if lead is None:
            return self._unmatched("no_leader")
        src, dst = self._hosts(A)
        code, fo, r0 = mirror_order(
            np.ascontiguousarray(qs, np.int64), np.ascontiguousarray(lead[1], np.int64), mtu,
            _SHARE_SIZE_TOL, int(A["cnt"][st.C_NOW]), src, dst, A["qp_start"], A["qp_size"],
            A["qp_credit"], A["qp_una"], A["wh_qgrp"], A["wh_hold"], A["wh_mapq"], A["wh_vcred"],
            A["wh_lu0"], A["wh_r0_bps"], A["wh_lab"], A["wh_t0"], A["wh_t1"], A["wh_state"],
            A["wh_memo"], A["wh_cred"],
        )  # fmt: skip
        if code != MIRRORED:
            return self._unmatched(MIRROR_REASONS[code])
        if self._labelled_key(A, fo, r0) != lead[3]:
            return self._unmatched("key")
        return lead, fo

    def _hosts(self, A: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Source and destination host of every QP (from the DAG arrays in the state)."""
        if self._qp_hosts is None:
            node = A["qp_node"]
            self._qp_hosts = A["g_src"][node], A["g_dst"][node]
        return self._qp_hosts

    @staticmethod
    def _progress(A: dict[str, np.ndarray], qs: np.ndarray) -> np.ndarray:
        """Bytes QPs ``qs`` have done by now
        (:func:`~wormsim.netsim.packet.wormhole.mirror.progress`)."""
        return progress(
            np.ascontiguousarray(qs, np.int64), int(A["cnt"][st.C_NOW]), A["qp_una"],
            A["qp_credit"], A["wh_lab"], A["wh_t0"], A["wh_t1"], A["wh_state"], A["wh_memo"],
            A["wh_cred"],
        )  # fmt: skip

    def _unmatched(self, why: str) -> None:
        self.unmatched_why[why] += 1

    def _labelled_key(
        self, A: dict[str, np.ndarray], qs: np.ndarray, rates: np.ndarray | None = None,
        weights: np.ndarray | None = None,
    ) -> tuple:  # fmt: skip
        """The FCG of flows ``qs`` with vertices numbered in that order (not canonical), weighted
        by :meth:`_weights` of their start rates (or ``rates``, bit/s, one per flow; or the
        ``weights`` already computed), then the pairs sharing ports and how many, as bytes."""
        i, j, shared = shared_ports(
            A["r_off"], A["r_ports"], np.ascontiguousarray(qs, np.int64), self.route_end
        )
        if weights is None:
            weights = self._weights(A, qs, rates)
        return weights.tobytes(), i.tobytes(), j.tobytes(), shared.tobytes()

    def _young(self, A: dict[str, np.ndarray], r: int, qs: np.ndarray) -> np.ndarray:
        """Which flows of partition ``r`` were younger than :data:`START_UP_RTTS` base RTTs plus
        a sample period when it formed."""
        qs64 = np.asarray(qs, np.int64)
        age = A["wh_tform"][r] - A["qp_start"][qs64]
        return age < START_UP_RTTS * A["wh_rtt"][qs64] + self.period_ps

    def _starting(self, A: dict[str, np.ndarray], r: int, qs: np.ndarray) -> np.ndarray:
        """Which flows of partition ``r``, as it forms, are in their start-up: :meth:`_young`
        and never credited (their whole life simulated packet by packet)."""
        return self._young(A, r, qs) & (A["qp_credit"][np.asarray(qs, np.int64)] == 0)

    def _aged(
        self, A: dict[str, np.ndarray], r: int, qs: np.ndarray, sizef: np.ndarray,
        rend: np.ndarray, sign: int, starting: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """Transient bytes ``sizef`` of partition ``r``'s flows moved to or from flow age 0.

        A partition forms at a sampler tick after its flows start, so a flow is already ``a``
        into its transient at the tick, with ``u`` bytes acknowledged. Past the transient a
        flow has acknowledged ``R t - D`` bytes at age ``t`` (``D``: what its start-up cost),
        so the bytes from the tick to age ``a + T`` are ``R (a + T) - D - u``: they depend on
        ``a`` and ``u``. Replaying one flow's ``Size_f`` onto another of a different phase left
        it behind by ``R (a' - a) - (u' - u)`` (every replayed ring step of GPT-7B/64 on a k=8
        fat-tree under DCTCP finished 8 us late). Entries keep ``Size_f + u - R a``
        (``sign = -1``), a hit replays ``that + R a' - u'`` (``+1``), for the flows
        ``starting`` marks (:meth:`_starting`, judged when the partition formed, on both
        sides). The flows of a ring step start over several sampler ticks and their partition
        re-forms as they join: judged by one sample period alone, the flows already 5-20 us
        old at the hit were replayed from age 0 and that fat-tree run ended 1.1 % late.

        A hit also resumes the flow with the packets it had in flight at the tick, a start-up
        pipe short of the steady ``R x base RTT`` a skip from steady state keeps: it is
        credited the difference, or it finishes that much late (a flow 0.5 us old at its
        tick: 3.7 us on a 4 us RTT). Other flows are left as they are."""
        qs64 = np.asarray(qs, np.int64)
        age = np.maximum(A["wh_tform"][r] - A["qp_start"][qs64], 0)
        shift = rend * age - A["wh_una0"][qs64]
        if sign > 0:  # a hit also credits the pipe the flow has not filled yet
            flight = A["qp_nxt"][qs64] - A["qp_una"][qs64]
            shift = shift + np.maximum(rend * A["wh_rtt"][qs64] - flight, 0)
        return np.maximum(np.rint(sizef + sign * np.where(starting, shift, 0)), 0).astype(np.int64)

    def _bucket(self, key: tuple) -> tuple[str, str, int, int]:
        """The store bucket (:meth:`MemoSession.bucket`) of the FCG whose labelled key is
        ``key``, from the key's arrays alone."""
        weights, i, j, shared = (np.frombuffer(b, np.int64) for b in key)
        wl = wl_hash_arrays(weights.tolist(), i.tolist(), j.tolist(), shared.tolist())
        return self.quantizer.spec, wl, int(weights.size), int(i.size)

    def _insert(self, A: dict[str, np.ndarray], r: int, qs: np.ndarray) -> None:
        A["wh_memo"][r] = MEMO_DONE
        formed = self._formed.pop(r, None)
        same = formed is not None and np.array_equal(formed[0], qs)
        fcg = self._fcg(A, qs, formed[1] if same else None)
        # start-ups as judged at formation (its skip may already have credited the flows)
        starting = formed[2] if same else self._young(A, r, qs)
        entry = MemoEntry(
            end_rates_bps={int(q): float(A["wh_rend_Bpps"][q]) * BPS_PER_BYTE_PER_PS for q in qs},
            sent_bytes=dict(
                zip(
                    qs.tolist(),
                    self._aged(
                        A, r, qs, A["wh_sizef"][qs], A["wh_rend_Bpps"][qs], -1, starting
                    ).tolist(),
                    strict=True,
                )
            ),
            t_conv_ps=int(A["wh_tconv"][r]),
            cc_state={int(q): tuple(A["wh_ccs"][q].tolist()) for q in qs},
        )
        cf = canonical_form(fcg)
        if self.session.insert(fcg, entry, cf).created:
            self.inserts += 1
            # only an entry of a cached miss's own bucket can turn it into a hit
            for key in self._missed.pop(self.session.bucket(fcg, cf), ()):
                del self._cache[key]
