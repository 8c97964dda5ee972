"""MoE token routing: the dispatch and combine all-to-alls of an expert layer and their splits.

:func:`moe_layer` writes one MoE layer of a pipeline stage into its
:class:`~wormsim.workload.stage_builder.StageBuilder`'s template: the dispatch all-to-all over the
EP group, the expert-TP all-gather, the experts, the expert-TP reduce-scatter and the combine
all-to-all (mirrored in the backward). With skewed routing or a capacity factor the all-to-alls are
uneven, and :func:`a2a_matrix` draws their per-rank byte splits when the template is expanded
(:func:`wormsim.workload.builder.build_ops`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .plan import WorkloadPlan

if TYPE_CHECKING:
    from .stage_builder import StageBuilder

__all__ = ["moe_layer", "dispatch_bytes", "a2a_matrix"]


def dispatch_bytes(plan: WorkloadPlan, sp: bool) -> int:
    """Bytes one rank dispatches per MoE layer and micro-batch (``top_k`` copies of its tokens).

    ``sp`` is sequence parallelism in effect (``tp > 1``): the tokens are split over TP too.
    """
    m, p, lay = plan.model, plan.parallel, plan.layout
    tokens = p.micro_batch * m.seq_length // (lay.cp * (lay.tp if sp else 1))
    return tokens * m.moe_top_k * m.hidden_size * p.activation_bytes


def moe_layer(
    b: StageBuilder, *, chunk: int, layer: int, mb: int, phase: str, suffix: str, backward: bool
) -> None:
    """Dispatch A2A, expert-TP AG, experts, expert-TP RS, combine A2A (mirrored backward)."""
    p, lay = b.plan.parallel, b.plan.layout
    disp = dispatch_bytes(b.plan, b.sp)
    skew = p.moe_routing_skew > 0 or p.moe_capacity_factor is not None
    mkey = ("a2a", b.stage, layer, mb, phase + suffix)
    first, second = ("combine", "dispatch") if backward else ("dispatch", "combine")
    if lay.ep > 1:
        b.coll(
            f"ep_{first}{suffix}",
            collective="alltoall",
            group="ep",
            size=disp,
            a2a=(mkey, backward) if skew else None,
            phase=phase,
            chunk=chunk,
            layer=layer,
            mb=mb,
        )
    if lay.etp > 1:
        b.coll(
            f"etp_gather{suffix}",
            collective="allgather",
            group="etp",
            size=disp * lay.etp,
            phase=phase,
            chunk=chunk,
            layer=layer,
            mb=mb,
        )
    b.compute(("moe_bwd" if backward else "moe_fwd") + suffix, phase, chunk, layer, mb)
    if lay.etp > 1:
        b.coll(
            f"etp_scatter{suffix}",
            collective="reducescatter",
            group="etp",
            size=disp * lay.etp,
            phase=phase,
            chunk=chunk,
            layer=layer,
            mb=mb,
        )
    if lay.ep > 1:
        b.coll(
            f"ep_{second}{suffix}",
            collective="alltoall",
            group="ep",
            size=disp,
            a2a=(mkey, not backward) if skew else None,
            phase=phase,
            chunk=chunk,
            layer=layer,
            mb=mb,
        )


def a2a_matrix(plan: WorkloadPlan, key_id: int, n_inst: int, disp: int) -> np.ndarray:
    """Per-instance ep x ep dispatch byte matrix [inst, src, dst] under skewed routing."""
    m, p, lay = plan.model, plan.parallel, plan.layout
    ep = lay.ep
    rng = np.random.default_rng([p.seed, key_id])
    e = m.num_experts
    tokens_k = disp // (m.hidden_size * p.activation_bytes)  # routed token copies per rank
    if p.moe_routing_skew > 0:
        share = rng.dirichlet(np.full(e, 1.0 / p.moe_routing_skew), size=(n_inst, ep))
    else:
        share = np.full((n_inst, ep, e), 1.0 / e)
    load = np.floor(share * tokens_k).astype(np.int64)
    # hand out rounding leftovers to the largest shares so each rank routes exactly tokens_k
    short = tokens_k - load.sum(axis=2)
    top = np.argsort(-share, axis=2)[..., :1]
    np.put_along_axis(load, top, np.take_along_axis(load, top, axis=2) + short[..., None], axis=2)
    if p.moe_capacity_factor is not None:
        cap = math.ceil(tokens_k / e * p.moe_capacity_factor)
        load = np.minimum(load, cap)
    per_rank = load.reshape(n_inst, ep, ep, e // ep).sum(axis=3)
    return per_rank * m.hidden_size * p.activation_bytes
