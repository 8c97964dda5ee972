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
session.

The bridge coordinates; each concern is a module of this package: the namespace
(:mod:`~wormsim.netsim.wormhole.namespace`), partition keys (:mod:`~wormsim.netsim.wormhole.keys`),
lookups through the run's cache and the replay's start-up correction
(:mod:`~wormsim.netsim.wormhole.replay`), what a miss and an insert record
(:mod:`~wormsim.netsim.wormhole.record`), shadow partitions
(:mod:`~wormsim.netsim.wormhole.shadows`) and when lookups pause
(:mod:`~wormsim.netsim.wormhole.governor`).
"""

from __future__ import annotations

import time

import numpy as np

from wormsim.memo import DEFAULT_QUANTIZER, MemoSession, RateQuantizer, canonical_form
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.wormhole.entry import apply_memo_hit
from wormsim.netsim.packet.wormhole.skip import MEMO_DONE, MEMO_INSERT, MEMO_LOOKUP, MEMO_MISS
from wormsim.netsim.wormhole.governor import MemoGovernor
from wormsim.netsim.wormhole.keys import PartitionKeys
from wormsim.netsim.wormhole.namespace import ENGINE_MODEL, PACKET_MODEL, memo_namespace
from wormsim.netsim.wormhole.plan import WormholePlan
from wormsim.netsim.wormhole.record import Formation, memo_entry
from wormsim.netsim.wormhole.replay import Lookups, Miss, aged, young
from wormsim.netsim.wormhole.shadows import Shadows

__all__ = ["MemoBridge", "memo_namespace", "ENGINE_MODEL", "PACKET_MODEL"]


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
        every flow has within ``SHARE_SIZE_TOL`` of its leader flow's remaining bytes, so the
        two would run the same course) and ``sample_period_ps`` (a partition forms up to one
        period after its flows start, see :meth:`_starting`).
    quantizer : RateQuantizer
        Rate buckets of the FCG vertices.
    governor : MemoGovernor
        Pauses lookups while they save fewer packets than they cost (default: its defaults).

    Attributes
    ----------
    hits, misses, inserts, rejected : int
        Hits replayed; lookups without an entry; entries stored by this run; entries found but
        not replayed (a flow would have finished inside the stored transient, or ``replay`` is
        off), whose partitions were simulated instead. A stored entry that does not decode is
        never used (lookups that would have found it miss) and is counted by the session.
    keys, lookups, shadows : PartitionKeys, Lookups, Shadows
        Its parts: how partitions are keyed, the lookups through the run's cache, the shadow
        partitions (``shadows.parked``: misses parked behind a leader, counted in ``misses``
        too).
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
        self.keys = PartitionKeys(quantizer, plan.data_ports_only)
        self.lookups = Lookups(session, self.keys)
        self.shadows = Shadows(self.keys)
        self.hits = self.misses = self.inserts = self.rejected = 0
        self.wall_s = 0.0
        # root -> a miss as it formed: its entry is keyed by the partition as it formed, and
        # its flows' start-ups are judged as they were then
        self._formed: dict[int, Formation] = {}
        self.period_ps = plan.sample_period_ps
        self.governor = MemoGovernor() if governor is None else governor
        self._root_mask: np.ndarray | None = None  # scratch of service(): labels pending
        self._unpaused = 0  # partitions of decided pauses the kernel has not formed yet
        self._shadow_bytes = 0  # shadow credit (kernel counter) the governor has counted

    def close(self) -> None:
        """Hand the hits served from the cache to the session and close it (hit counts go to
        the store in mode ``readwrite``)."""
        self.session.add_hits(self.lookups.cached_hits)
        self.lookups.cached_hits.clear()
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
            "memo_parked": self.shadows.parked,
            "memo_shadows_unmatched": self.shadows.unmatched,
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
        self.shadows.new_tick()
        self.keys.new_tick()
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
    def _lookup(
        self, A: dict[str, np.ndarray], S: st.State, P: st.Params, r: int, qs: np.ndarray
    ) -> None:
        weights = self.keys.weights(A, qs)  # once: the key, the FCG and the entry share them
        key = self.keys.labelled_key(A, qs, weights=weights)
        if self.share:
            if self.shadows.follow(A, S, P, key, r, qs):
                self._govern(A, P, 0.0)  # a park pays as its shadow is credited (counted later)
                return
        found = self.lookups.find(A, qs, key, weights)
        if self.share:  # this tick's identical partitions follow this one, whatever it does
            self.shadows.lead(key, r, qs)
        if isinstance(found, Miss):
            self.misses += 1
            A["wh_memo"][r] = MEMO_MISS
            # the entry is keyed by the partition as it formed: its context then, not at insert
            self._formed[r] = Formation(qs.copy(), weights, self._starting(A, r, qs))
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

    def _reform(
        self, A: dict[str, np.ndarray], S: st.State, P: st.Params, r: int, qs: np.ndarray
    ) -> None:
        """A shadow re-formed (its leader finished a flow or it was released flows): keep it
        parked behind the leader's re-formed partition if it still mirrors it, else bring it
        back and look it up as any partition."""
        if self.shadows.remap(A, S, P, r, qs):
            return
        self.shadows.bring_back(A, S, P, qs)
        started = A["wh_lab"][qs] >= 0  # (held flows keep the rate they started at)
        A["wh_r0_bps"][qs[started]] = A["qp_rate_bps"][qs[started]]
        A["wh_memo"][r] = MEMO_LOOKUP
        self._lookup(A, S, P, r, qs)

    def _starting(self, A: dict[str, np.ndarray], r: int, qs: np.ndarray) -> np.ndarray:
        """Which flows of partition ``r``, as it forms, are in their start-up: young
        (:func:`~wormsim.netsim.wormhole.replay.young`) and never credited (their whole life
        simulated packet by packet)."""
        starting = young(A, r, qs, self.period_ps)
        return starting & (A["qp_credit"][np.asarray(qs, np.int64)] == 0)

    def _aged(
        self, A: dict[str, np.ndarray], r: int, qs: np.ndarray, sizef: np.ndarray,
        rend: np.ndarray, sign: int, starting: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """Transient bytes ``sizef`` of partition ``r``'s flows moved to (``sign = +1``, a hit)
        or from (``-1``, an entry) flow age 0 (:func:`~wormsim.netsim.wormhole.replay.aged`)."""
        return aged(A, r, qs, sizef, rend, sign, starting)

    def _insert(self, A: dict[str, np.ndarray], r: int, qs: np.ndarray) -> None:
        A["wh_memo"][r] = MEMO_DONE
        formed = self._formed.pop(r, None)
        same = formed is not None and np.array_equal(formed.qs, qs)
        fcg = self.keys.fcg(A, qs, formed.weights if same else None)
        # start-ups as judged at formation (its skip may already have credited the flows)
        starting = formed.starting if same else young(A, r, qs, self.period_ps)
        sent = self._aged(A, r, qs, A["wh_sizef"][qs], A["wh_rend_Bpps"][qs], -1, starting)
        entry = memo_entry(A, r, qs, sent)
        cf = canonical_form(fcg)
        if self.session.insert(fcg, entry, cf).created:
            self.inserts += 1
            # only an entry of a cached miss's own bucket can turn it into a hit
            self.lookups.forget_bucket(self.session.bucket(fcg, cf))
