"""Stage 1: from model, parallelism and hardware to ``ops.parquet``.

The schedule of every rank of a pipeline stage is the same up to rank ids, so the builder writes one
template per stage and expands it to all ``t·c·d`` ranks (:mod:`wormsim.workload.template`).

What one iteration contains (Megatron-LM semantics):

- per layer and micro-batch, TP collectives around attention and MLP (2 AR forward and 2 AR backward
  without sequence parallelism; AG/RS with it, including the backward re-gathers), CP ring-attention
  send/recv rounds, MoE dispatch/combine all-to-alls (4 per layer and micro-batch) with expert-TP
  all-gather/reduce-scatter;
- pipeline send/recv of activations and gradients per micro-batch, in the 1F1B or interleaved order,
  with Megatron's batched send+recv before each pass;
- data-parallel gradient reduction in Megatron buckets (all-reduce for DDP, reduce-scatter and
  parameter all-gather for ZeRO-1/2, per-layer all-gathers and reduce-scatters for ZeRO-3),
  expert gradients over the expert-data-parallel group, the tied-embedding all-reduce between the
  first and last stage, and the optimizer step.
"""

from __future__ import annotations

import polars as pl

from .hardware import HardwareSpec
from .model import ModelSpec
from .moe_routing import a2a_matrix
from .parallel import ParallelSpec
from .plan import WorkloadPlan, microbatches, plan_workload, resolve_layout
from .stage_builder import StageBuilder
from .template import expand_stage

__all__ = ["WorkloadPlan", "plan_workload", "build_ops", "resolve_layout", "microbatches"]


# --------------------------------------------------------------------------------------------
# Expansion to all ranks of a stage


def build_ops(
    model: ModelSpec, par: ParallelSpec, hardware: HardwareSpec, gpus: int
) -> pl.DataFrame:
    """Build the ops table of one training iteration.

    Parameters
    ----------
    model, par, hardware : ModelSpec, ParallelSpec, HardwareSpec
        The experiment's model, parallel and hardware sections.
    gpus : int
        Number of GPUs (ranks).

    Returns
    -------
    polars.DataFrame
        The ops table (schema :data:`wormsim.workload.ops.OPS_SCHEMA`), rank-major, schedule
        order within a rank.

    Examples
    --------
    >>> from wormsim.workload.model import ModelSpec, resolve_model
    >>> ops = build_ops(ModelSpec(**resolve_model("gpt3-125m")), ParallelSpec(tp=2, pp=2),
    ...                 HardwareSpec(), gpus=8)
    >>> ops["rank"].n_unique()
    8
    """
    plan = plan_workload(model, par, hardware, gpus)
    key_ids: dict[tuple, int] = {}
    frames = []
    base = 0
    for stage in range(plan.layout.pp):
        tmpl = StageBuilder(plan, stage).build()
        frames.append(
            expand_stage(
                plan.layout,
                stage,
                tmpl,
                key_ids,
                base,
                lambda mid, n, size: a2a_matrix(plan, mid, n, size),
            )
        )
        base += len(tmpl.ops) * plan.layout.stage_size
    return pl.concat(frames, rechunk=True)
