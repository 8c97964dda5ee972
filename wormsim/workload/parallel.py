"""Parallelism: the experiment's ``parallel`` section and the rank <-> group mapping.

Ranks follow Megatron-Core's order "tp-cp-ep-dp-pp": TP varies fastest, PP slowest. Dense layers
use ``rank = tp + t*(cp + c*(dp + d*pp))``. Expert layers re-cut the ``t*c*d`` ranks of a pipeline
stage as Megatron-Core's expert rank generator does (order "etp-ep-dp-pp"): with ``L`` the rank's
index inside its stage, ``etp_i = L % etp``, ``ep_i = (L // etp) % ep`` and
``edp_i = L // (etp*ep)``. With ``etp == tp`` (Megatron's default) EP groups stride across servers;
with ``etp == 1`` and ``ep <= gpus_per_node`` they stay inside a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ParallelSpec", "RankLayout"]

_DEG = 1 << 20  # largest parallel degree


class ParallelSpec(BaseModel):
    """How one training iteration is parallelised.

    Attributes
    ----------
    tp, pp, cp, ep : int
        Tensor, pipeline, context and expert parallel degrees.
    etp : int or None
        Expert tensor-parallel degree; ``None`` means ``tp`` (Megatron's default).
    dp : int or None
        Data-parallel degree; ``None`` derives it from the cluster: ``gpus / (tp*pp*cp)``.
    sequence_parallel : bool
        Megatron sequence parallelism (TP collectives become all-gather / reduce-scatter).
    micro_batch, global_batch : int
        Sequences per micro-batch and per iteration; micro-batches per pipeline
        ``m = global_batch / (dp * micro_batch)``.
    schedule : {"1f1b", "interleaved"}
        Pipeline schedule (PipeDream-flush 1F1B, or interleaved 1F1B with ``virtual_stages``).
    virtual_stages : int
        Model chunks per pipeline rank (interleaved schedule).
    zero_stage : {0, 1, 2, 3}
        0 = DDP all-reduce; 1/2 = distributed optimizer (RS grads, AG params); 3 = FSDP.
    overlap_grad_reduce : bool
        Start each gradient bucket's collective as soon as its gradients are ready.
    bucket_params : int or None
        Gradient bucket size in parameters; ``None`` is Megatron's max(40M, 1M*dp).
    grad_reduce_bytes, param_bytes, activation_bytes : int
        Bytes per element of reduced gradients (fp32 = 4), parameters and activations (bf16 = 2).
    recompute : {"none", "full"}
        Full activation recomputation reruns the forward in the backward.
    moe_capacity_factor : float or None
        Expert capacity factor; ``None`` is dropless.
    moe_routing_skew : float
        0 = uniform routing (even all-to-all splits); > 0 draws per-expert loads from a
        Dirichlet(1/skew) per (layer, micro-batch, rank), seeded, giving uneven splits.
    seed : int
        Seed of everything random in the workload (routing).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    tp: int = Field(default=1, ge=1, le=_DEG, description="Tensor-parallel degree.")
    pp: int = Field(default=1, ge=1, le=_DEG, description="Pipeline-parallel degree (stages).")
    dp: int | None = Field(
        default=None, ge=1, le=_DEG, description="Data-parallel degree; null: gpus/(tp*pp*cp)."
    )
    cp: int = Field(default=1, ge=1, le=_DEG, description="Context-parallel degree.")
    ep: int = Field(default=1, ge=1, le=_DEG, description="Expert-parallel degree (MoE).")
    etp: int | None = Field(
        default=None, ge=1, le=_DEG, description="Expert tensor-parallel degree; null: tp."
    )
    sequence_parallel: bool = Field(False, description="Megatron sequence parallelism.")
    micro_batch: int = Field(default=1, ge=1, le=1 << 20, description="Sequences per micro-batch.")
    global_batch: int | None = Field(
        default=None,
        ge=1,
        le=1 << 31,
        description="Sequences per iteration; null: dp*micro_batch*pp.",
    )
    schedule: Literal["1f1b", "interleaved"] = Field(
        "1f1b", description="Pipeline schedule: 1f1b or interleaved."
    )
    virtual_stages: int = Field(
        default=1, ge=1, le=1 << 10, description="Model chunks per pipeline rank (interleaved)."
    )
    zero_stage: Literal[0, 1, 2, 3] = Field(
        0, description="0: DDP; 1/2: distributed optimizer; 3: FSDP."
    )
    overlap_grad_reduce: bool = Field(
        True, description="Reduce each gradient bucket as soon as it is ready."
    )
    bucket_params: int | None = Field(
        default=None,
        ge=1,
        le=1 << 50,
        description="Gradient bucket size, parameters; null: max(40M, 1M*dp).",
    )
    grad_reduce_bytes: int = Field(
        default=4, ge=1, le=16, description="Bytes per reduced gradient element (fp32: 4)."
    )
    param_bytes: int = Field(
        default=2, ge=1, le=16, description="Bytes per parameter element (bf16: 2)."
    )
    activation_bytes: int = Field(
        default=2, ge=1, le=16, description="Bytes per activation element (bf16: 2)."
    )
    recompute: Literal["none", "full"] = Field(
        "none", description="Activation recomputation: none or full."
    )
    moe_capacity_factor: float | None = Field(
        default=None, gt=0, le=1e6, description="Expert capacity factor; null: dropless."
    )
    moe_routing_skew: float = Field(
        default=0.0, ge=0, le=1e6, description="0: uniform routing; > 0: Dirichlet(1/skew)."
    )
    seed: int = Field(
        0, ge=0, le=2**63 - 1, description="Seed of everything random in the workload."
    )


@dataclass(frozen=True)
class RankLayout:
    """Resolved parallel degrees and the rank <-> coordinate mapping.

    Examples
    --------
    >>> lay = RankLayout(tp=2, cp=1, dp=2, pp=2)
    >>> lay.world
    8
    >>> lay.rank(tp=1, dp=1, pp=1)
    7
    """

    tp: int
    cp: int
    dp: int
    pp: int
    ep: int = 1
    etp: int = 1

    @property
    def world(self) -> int:
        """Number of ranks."""
        return self.tp * self.cp * self.dp * self.pp

    @property
    def edp(self) -> int:
        """Expert data-parallel degree ``t*c*d / (etp*ep)``."""
        return self.stage_size // (self.etp * self.ep)

    @property
    def stage_size(self) -> int:
        """Ranks per pipeline stage ``t*c*d``."""
        return self.tp * self.cp * self.dp

    def rank(self, tp: int = 0, cp: int = 0, dp: int = 0, pp: int = 0) -> int:
        """Global rank of a coordinate."""
        return tp + self.tp * (cp + self.cp * (dp + self.dp * pp))

    def coords(self, ranks: np.ndarray) -> dict[str, np.ndarray]:
        """Coordinates of ranks (vectorised): tp, cp, dp, pp, ep, edp."""
        r = np.asarray(ranks, dtype=np.int64)
        tp = r % self.tp
        rest = r // self.tp
        cp = rest % self.cp
        rest //= self.cp
        dp = rest % self.dp
        pp = rest // self.dp
        local = r % self.stage_size
        return {
            "tp": tp,
            "cp": cp,
            "dp": dp,
            "pp": pp,
            "etp": local % self.etp,
            "ep": (local // self.etp) % self.ep,
            "edp": local // (self.etp * self.ep),
        }

    def group_instance(self, group: str, ranks: np.ndarray) -> np.ndarray:
        """Index of the communicator of kind ``group`` that each rank belongs to.

        Two ranks share a communicator iff they have the same instance index. Used to give every
        collective instance its own ``coll_id``.
        """
        c = self.coords(ranks)
        t, cc, d = self.tp, self.cp, self.dp
        if group == "tp":
            return c["cp"] + cc * (c["dp"] + d * c["pp"])
        if group == "cp":
            return c["tp"] + t * (c["dp"] + d * c["pp"])
        if group == "dp":
            return c["tp"] + t * (c["cp"] + cc * c["pp"])
        if group == "dp_cp":
            return c["tp"] + t * c["pp"]
        if group == "pp":
            return c["tp"] + t * (c["cp"] + cc * c["dp"])
        et, ep, edp = self.etp, self.ep, self.edp
        if group == "ep":
            return c["etp"] + et * (c["edp"] + edp * c["pp"])
        if group == "edp":
            return c["etp"] + et * (c["ep"] + ep * c["pp"])
        if group == "etp":
            return c["ep"] + ep * (c["edp"] + edp * c["pp"])
        raise ValueError(f"unknown group kind {group!r}")

    def members(self, group: str, rank: int) -> list[int]:
        """Ranks of the communicator of kind ``group`` that contains ``rank`` (ascending)."""
        everyone = np.arange(self.world)
        inst = self.group_instance(group, everyone)
        return [int(x) for x in everyone[inst == inst[rank]]]
