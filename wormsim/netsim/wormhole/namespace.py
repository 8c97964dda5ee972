"""What besides its Flow Conflict Graph shapes a memoized transient: the memo namespace of a run
(:func:`memo_namespace`), and the model versions it carries (:data:`ENGINE_MODEL`)."""

from __future__ import annotations

from typing import Any

from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.wormhole.plan import WormholePlan
from wormsim.units import PS_PER_NS

__all__ = ["memo_namespace", "ENGINE_MODEL", "PACKET_MODEL"]

PACKET_MODEL = 8
"""Version of what packet mode computes: bumped when its results change. Packet references kept
by benchmarks are keyed by it (history: docs/wormhole.md, "Engine and packet model versions")."""

ENGINE_MODEL = 17
"""Version of the packet engine's dynamics, part of every namespace: bump it when a kernel change
alters transients, so entries stored by the old engine are never replayed by the new one
(history: docs/wormhole.md, "Engine and packet model versions")."""


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
        "sample_period_ns": int(plan.sample_period_ps // PS_PER_NS),
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
