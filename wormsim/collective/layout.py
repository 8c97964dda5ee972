"""The cluster layout the collective stage needs: how ranks map to servers."""

from __future__ import annotations

from dataclasses import dataclass

from wormsim.collective.errors import CollectiveError

__all__ = ["ClusterLayout"]


@dataclass(frozen=True)
class ClusterLayout:
    """Rank placement: rank ``r`` lives on server ``r // gpus_per_node``.

    Parameters
    ----------
    gpus_per_node : int
        GPUs per server (the NVLink/NVSwitch domain).
    num_gpus : int
        World size; every rank in the ops table must be below it.

    Examples
    --------
    >>> ClusterLayout(gpus_per_node=8, num_gpus=16).num_servers
    2
    """

    gpus_per_node: int
    num_gpus: int

    def __post_init__(self) -> None:
        if self.gpus_per_node < 1:
            raise CollectiveError(
                f"gpus_per_node must be >= 1, got {self.gpus_per_node}; set cluster.gpus_per_node"
            )
        if self.num_gpus < 1:
            raise CollectiveError(f"num_gpus must be >= 1, got {self.num_gpus}; set cluster.gpus")

    @property
    def num_servers(self) -> int:
        """Number of servers (the last one may be partly filled)."""
        return -(-self.num_gpus // self.gpus_per_node)
