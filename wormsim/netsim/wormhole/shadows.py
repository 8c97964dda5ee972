"""Shadow partitions on the Python side: parking a partition behind a same-tick leader, and
keeping a re-formed shadow behind its leader's re-formed partition (:class:`Shadows`). The kernel
half is :mod:`wormsim.netsim.packet.wormhole.shadow`."""

from __future__ import annotations

from collections import Counter

import numpy as np

from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.wormhole.entry import materialise_group, park_shadow, remap_shadow
from wormsim.netsim.packet.wormhole.fields import HOLD_WAITING
from wormsim.netsim.packet.wormhole.mirror import MIRROR_REASONS, MIRRORED, mirror_order, progress
from wormsim.netsim.wormhole.keys import PartitionKeys

__all__ = ["Shadows", "SHARE_SIZE_TOL", "same_bytes"]

SHARE_SIZE_TOL = 0.005
"""A partition follows a same-tick leader only if each flow's remaining bytes are within this
fraction (or two packets) of its leader flow's: a follower flow finishes when its leader flow
does."""


def same_bytes(a: np.ndarray, b: np.ndarray, mtu: int, scale: np.ndarray | None = None) -> bool:
    """Whether byte counts ``a`` and ``b`` agree flow by flow within :data:`SHARE_SIZE_TOL` of
    ``scale`` (default ``b``: remaining bytes compared with remaining bytes), or two packets."""
    scale = b if scale is None else scale
    return bool(np.all(np.abs(a - b) <= np.maximum(SHARE_SIZE_TOL * scale, 2 * mtu)))


class Shadows:
    """This tick's leaders and the shadows parked or kept behind them, for one run.

    Parameters
    ----------
    keys : PartitionKeys
        How partitions are keyed (a re-formed shadow must have its leader's labelled key).

    Attributes
    ----------
    parked, remapped, unmatched : int
        Partitions parked behind a leader; re-formed shadows kept behind their leader's
        re-formed partition; re-formed shadows that no longer mirrored one, brought back.
    unmatched_why : Counter
        Why re-formed shadows did not match.
    """

    def __init__(self, keys: PartitionKeys) -> None:
        self.keys = keys
        # misses of the current service call (one sampler tick): labelled key -> leader
        self._leaders: dict[tuple, list] = {}  # [root, QPs, followers, labelled key]
        self._leader_of: dict[int, list] = {}  # the same lists by root
        self._qp_hosts: tuple[np.ndarray, np.ndarray] | None = None
        self.parked = self.remapped = self.unmatched = 0
        self.unmatched_why: Counter[str] = Counter()

    def new_tick(self) -> None:
        """A new service call: no partition leads yet."""
        self._leaders.clear()
        self._leader_of.clear()

    def lead(self, key: tuple, r: int, qs: np.ndarray) -> None:
        """Partition ``r`` (flows ``qs``, labelled key ``key``) leads this tick's partitions of
        its key, whatever its lookup found."""
        self._leaders[key] = self._leader_of[r] = [r, qs, 0, key]

    def follow(
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
        if not same_bytes(rem[: qs.size], rem[qs.size :], P.mtu):
            return False
        # and the same bytes in flight: acknowledged progress alone is blind to a flow that
        # started earlier and has more on the wire (at 1 % message size a flow that started
        # 0.97 us before its leader, neither acked yet, finished with it: 17 % late)
        flight = A["qp_nxt"][both] - A["qp_una"][both]
        if not same_bytes(flight[: qs.size], flight[qs.size :], P.mtu, rem[qs.size :]):
            return False
        first = n_followers == 0
        park_shadow(S, P, r, lead_r, qs.astype(np.int64), lead_qs.astype(np.int64), first)
        lead[2] += 1
        self.parked += 1
        return True

    def remap(
        self, A: dict[str, np.ndarray], S: st.State, P: st.Params, r: int, qs: np.ndarray
    ) -> bool:
        """Keep re-formed shadow ``r`` (flows ``qs``) parked behind its leader's re-formed
        partition if it still mirrors it; whether it did."""
        order = self._mirror_order(A, qs, P.mtu)
        if order is None:
            return False
        lead, fo = order
        lead_r, lead_qs, n_followers, _ = lead
        g = int(A["wh_qgrp"][fo[0]])
        remap_shadow(
            S, P, r, g, lead_r, fo.astype(np.int64), lead_qs.astype(np.int64), n_followers == 0,
        )  # fmt: skip
        lead[2] += 1
        self.remapped += 1
        return True

    def bring_back(
        self, A: dict[str, np.ndarray], S: st.State, P: st.Params, qs: np.ndarray
    ) -> None:
        """Materialise the shadow groups of flows ``qs``, which no longer mirror a leader."""
        self.unmatched += 1
        grp = A["wh_qgrp"][qs]
        for g in np.unique(grp[grp >= 0]).tolist():
            materialise_group(S, P, int(g))

    def _mirror_order(
        self, A: dict[str, np.ndarray], qs: np.ndarray, mtu: int
    ) -> tuple[list, np.ndarray] | None:
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
            SHARE_SIZE_TOL, int(A["cnt"][st.C_NOW]), src, dst, A["qp_start_ps"], A["qp_size"],
            A["qp_credit"], A["qp_una"], A["wh_qgrp"], A["wh_hold"], A["wh_mapq"], A["wh_vcred"],
            A["wh_lu0"], A["wh_r0_bps"], A["wh_lab"], A["wh_t0_ps"], A["wh_t1_ps"], A["wh_state"],
            A["wh_memo"], A["wh_cred"],
        )  # fmt: skip
        if code != MIRRORED:
            return self._unmatched(MIRROR_REASONS[code])
        if self.keys.labelled_key(A, fo, r0) != lead[3]:
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
            A["qp_credit"], A["wh_lab"], A["wh_t0_ps"], A["wh_t1_ps"], A["wh_state"], A["wh_memo"],
            A["wh_cred"],
        )  # fmt: skip

    def _unmatched(self, why: str) -> None:
        self.unmatched_why[why] += 1
