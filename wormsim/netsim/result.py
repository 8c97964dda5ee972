"""What a network simulation returns, whichever engine ran it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from wormsim.memo import MemoRunInfo

__all__ = ["SimResult"]


@dataclass
class SimResult:
    """Output of :func:`~wormsim.netsim.simulate.simulate` (and of the engines it calls).

    Attributes
    ----------
    node_start_ps, node_finish_ps : int64[n_nodes]
        When every DAG node started and finished (ps; -1 = never). A fabric flow finishes when
        its sender receives the ACK covering its last byte (flow engine: when its last byte has
        drained plus the route's latency).
    counters : dict
        Engine counters for ``summary.json`` (``events_processed``, ``sim_wall_s``,
        ``compile_s``, ...; Wormhole adds its own, see :mod:`wormsim.netsim.wormhole.counters`).
    flow_qp : int64[n_nodes]
        QP of each fabric flow, -1 for other nodes
        (:class:`~wormsim.netsim.common.flow_plan.FlowPlan`).
    sport : int64[n_qps]
        Source port of each QP (ns-3 numbering).
    routes : (r_off, r_ports)
        The compiled routes the engine used (see
        :class:`~wormsim.netsim.common.flow_plan.FlowPlan`).
    rate_samples, queue_samples : polars.DataFrame
        Monitors (``time_ps, qp, node_id, rate_bps`` and ``time_ps, port, bytes``), empty
        unless asked for.
    qp_acked_bytes, qp_credit_bytes : int64[n_qps]
        Bytes each QP had acknowledged packet by packet, and bytes Wormhole credited it without
        simulating them (empty in flow mode).
    memo : MemoRunInfo or None
        The memo store state a Wormhole run with memoization started from; its
        :meth:`~wormsim.memo.MemoRunInfo.summary` goes to ``summary.json``.
    wormhole_plan : dict or None
        What a Wormhole run's engine chose from its spec and its congestion control
        (:meth:`~wormsim.netsim.wormhole.plan.WormholePlan.summary`, with the memo governor's
        settings as ``memo_governor`` when it memoized).
    port_outputs : dict of str to array[n_ports]
        The per-port outputs of :data:`~wormsim.netsim.packet.port_outputs.PORT_OUTPUTS`, by
        their ``result`` name, each also an attribute (``peak_queue_bytes``, ``pfc_paused_ps``,
        ``pfc_pause_frames``, ``ecn_marks``, ...; zeros in flow mode, which has no queues, PFC
        or ECN).
    """

    node_start_ps: np.ndarray
    node_finish_ps: np.ndarray
    counters: dict[str, float]
    flow_qp: np.ndarray
    sport: np.ndarray
    routes: tuple[np.ndarray, np.ndarray]
    rate_samples: pl.DataFrame = field(default_factory=pl.DataFrame)
    queue_samples: pl.DataFrame = field(default_factory=pl.DataFrame)
    qp_acked_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    qp_credit_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    memo: MemoRunInfo | None = None
    wormhole_plan: dict | None = None
    port_outputs: dict[str, np.ndarray] = field(default_factory=dict)

    def __getattr__(self, name: str) -> np.ndarray:
        """A per-port output by its name (``result.ecn_marks``)."""
        outputs = self.__dict__.get("port_outputs", {})  # not yet set while unpickling
        if name in outputs:
            return outputs[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def summary(self, mode: str) -> dict:
        """The keys every ``summary.json`` of a simulation has: the counters (as plain numbers),
        ``mode``, ``sim_wall_s``, ``events_processed``, and the memo store state a Wormhole run
        started from (``memo_store``, ``memo_mode``, ``memo_fingerprint``), and in Wormhole
        mode the run's plan (``wormhole_plan``: the partition rule ``auto`` resolved to, the
        steadiness test, the detector window in samples after a timer stretch, the skip unit,
        memo replay, the kernel's Wormhole scalars, ...)."""
        counters = {
            k: (float(v) if isinstance(v, float) else int(v)) for k, v in self.counters.items()
        }
        out = {
            **counters,
            "mode": mode,
            "sim_wall_s": float(counters.get("sim_wall_s", 0.0)),
            "events_processed": int(counters.get("events_processed", 0)),
        }
        if self.memo is not None:
            out.update(self.memo.summary())
        if self.wormhole_plan is not None:
            out["wormhole_plan"] = dict(self.wormhole_plan)
        return out

    def write_monitors(self, out_dir: str | Path) -> None:
        """Write the monitors as ``rate_samples.parquet`` and ``queue_samples.parquet``."""
        from wormsim.rundir import write_parquet

        out = Path(out_dir)
        write_parquet(out / "rate_samples.parquet", self.rate_samples)
        write_parquet(out / "queue_samples.parquet", self.queue_samples)
