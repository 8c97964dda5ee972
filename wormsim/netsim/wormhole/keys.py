"""How the memo bridge names a partition: its flows' vertex weights, its *labelled* key (the
per-run cache's), its Flow Conflict Graph (the store's) and the store bucket a key falls in
(:class:`PartitionKeys`)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from wormsim.memo import LogRateQuantizer, RateQuantizer, build_fcg
from wormsim.memo.key import wl_hash_arrays
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.wormhole.conflicts import (
    ack_streams,
    data_port_ack_load,
    shared_ports,
    vertex_weights,
)

__all__ = ["PartitionKeys"]

#: a vertex's weight is ((rate bucket) * _ACK_SPAN + ACK streams) * _RTT_SPAN + base-RTT bucket
_RTT_SPAN = 1 << 20
_ACK_SPAN = 1 << 8


class PartitionKeys:
    """The keys of partitions in one run.

    Parameters
    ----------
    quantizer : RateQuantizer
        Rate buckets of the FCG vertices.
    data_ports_only : bool
        FCG edges from shared data ports only (``partition_ports="data"``); each vertex then
        also carries the ACK streams crossing its flow's data ports.
    """

    def __init__(self, quantizer: RateQuantizer, data_ports_only: bool) -> None:
        self.quantizer = quantizer
        # FCG edges: ports of the data route only (r_off[2q]..r_off[2q+1]) or data and ACK
        self.route_end = 1 if data_ports_only else 2
        self._acks: np.ndarray | None = None  # ACK streams per port, this service call

    def new_tick(self) -> None:
        """Forget what was computed for the previous service call (the active flows)."""
        self._acks = None

    def weights(
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
                self._acks = ack_streams(A["r_off"], A["r_ports"], act, A["p_free_ps"].shape[0])
            load = data_port_ack_load(A["r_off"], A["r_ports"], q64, self._acks)
        else:
            load = np.zeros(q64.size, np.int64)
        rtt = A["wh_rtt_ps"][q64].astype(np.float64)
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

    def labelled_key(
        self, A: dict[str, np.ndarray], qs: np.ndarray, rates: np.ndarray | None = None,
        weights: np.ndarray | None = None,
    ) -> tuple:  # fmt: skip
        """The FCG of flows ``qs`` with vertices numbered in that order (not canonical), weighted
        by :meth:`weights` of their start rates (or ``rates``, bit/s, one per flow; or the
        ``weights`` already computed), then the pairs sharing ports and how many, as bytes."""
        i, j, shared = shared_ports(
            A["r_off"], A["r_ports"], np.ascontiguousarray(qs, np.int64), self.route_end
        )
        if weights is None:
            weights = self.weights(A, qs, rates)
        return weights.tobytes(), i.tobytes(), j.tobytes(), shared.tobytes()

    def fcg(
        self, A: dict[str, np.ndarray], qs: np.ndarray, weights: np.ndarray | None = None
    ) -> nx.Graph:
        """The partition's Flow Conflict Graph, vertices weighted by :meth:`weights`."""
        r_off, r_ports, r0 = A["r_off"], A["r_ports"], A["wh_r0_bps"]
        end = self.route_end
        g = build_fcg(
            (
                (int(q), float(r0[q]), r_ports[r_off[2 * q] : r_off[2 * q + end]].tolist())
                for q in qs.tolist()
            ),
            self.quantizer,
        )
        weights = self.weights(A, qs) if weights is None else weights
        for q, w in zip(qs.tolist(), weights.tolist(), strict=True):
            g.nodes[q]["weight"] = w
        return g

    def bucket(self, key: tuple) -> tuple[str, str, int, int]:
        """The store bucket (:meth:`~wormsim.memo.MemoSession.bucket`) of the FCG whose labelled
        key is ``key``, from the key's arrays alone."""
        weights, i, j, shared = (np.frombuffer(b, np.int64) for b in key)
        wl = wl_hash_arrays(weights.tolist(), i.tolist(), j.tolist(), shared.tolist())
        return self.quantizer.spec, wl, int(weights.size), int(i.size)
