"""The experiment's ``cluster`` section: GPUs, servers, and the fabric that connects them.

GPU ``i`` is host ``i`` of the fabric (each GPU has its own NIC, as in rail-optimized clusters and
the Wormhole evaluation); server ``i // gpus_per_node`` holds it, and traffic between GPUs of one
server crosses NVLink/NVSwitch, not the fabric.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from wormsim.netsim.fabric.kinds import names

__all__ = ["ClusterSpec"]

_KINDS = names()


class ClusterSpec(BaseModel):
    """GPUs, servers and fabric.

    Attributes
    ----------
    gpus : int
        Number of GPUs (= ranks).
    gpus_per_node : int
        GPUs per server (one NVLink/NVSwitch domain).
    nvlink_gbps : float
        Per-GPU NVLink bandwidth in each direction, Gbit/s (A100: 300 GB/s = 2400 Gbps).
    topology : str
        Fabric kind: a name of :data:`~wormsim.netsim.fabric.kinds.KINDS` (the first,
        ``rail_optimized``, by default).
    host_link_gbps, fabric_link_gbps : float
        NIC-to-leaf and switch-to-switch link rates, Gbit/s.
    link_delay_ns : int
        One-way propagation delay of every fabric link, ns.
    oversubscription : float
        Leaf downlink/uplink capacity ratio (Clos).
    hosts_per_leaf : int or None
        Hosts under one leaf/ToR switch; ``None`` picks the builder's default.
    topology_file : str or None
        An HPCC ``topology.txt`` or SimAI topology file to use instead of a built-in fabric
        (:mod:`wormsim.netsim.formats.topology_file`); then ``topology``, the link rates, the delay,
        ``oversubscription`` and ``hosts_per_leaf`` have no effect, and the workload runs on the
        file's first ``gpus`` GPUs, server by server.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    gpus: int = Field(gt=0, le=1 << 20, description="Number of GPUs (= ranks).")
    gpus_per_node: int = Field(
        default=8, gt=0, le=1024, description="GPUs per server (one NVLink domain)."
    )
    nvlink_gbps: float = Field(
        default=2400.0, ge=1, le=1e6, description="Per-GPU NVLink bandwidth per direction, Gbit/s."
    )
    topology: Literal[_KINDS] = Field(  # type: ignore[valid-type]
        _KINDS[0], description=f"Fabric: {', '.join(_KINDS[:-1])} or {_KINDS[-1]}."
    )
    host_link_gbps: float = Field(
        default=100.0, ge=1, le=1e6, description="NIC-to-leaf link rate, Gbit/s."
    )
    fabric_link_gbps: float = Field(
        default=400.0, ge=1, le=1e6, description="Switch-to-switch link rate, Gbit/s."
    )
    link_delay_ns: int = Field(
        default=1000, ge=0, le=10**9, description="One-way delay of every fabric link, ns."
    )
    oversubscription: float = Field(
        default=1.0, ge=1.0, le=1e3, description="Leaf downlink/uplink capacity ratio (clos)."
    )
    hosts_per_leaf: int | None = Field(
        default=None, gt=0, le=1 << 16, description="Hosts per leaf switch; null: builder default."
    )
    topology_file: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="HPCC topology.txt or SimAI topology file instead of a built-in fabric.",
    )

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        if self.gpus % self.gpus_per_node:
            raise ValueError(
                f"cluster.gpus ({self.gpus}) must be a multiple of cluster.gpus_per_node "
                f"({self.gpus_per_node})"
            )
        return self

    @property
    def num_nodes(self) -> int:
        """Number of servers."""
        return self.gpus // self.gpus_per_node
