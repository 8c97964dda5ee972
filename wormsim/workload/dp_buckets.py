"""Data-parallel gradient traffic of one pipeline stage: Megatron buckets and the ZeRO variants.

:class:`GradBuckets` writes, into its :class:`~wormsim.workload.stage_builder.StageBuilder`'s
template, the gradient reduction of the stage: buckets of layer gradients reduced over the DP (or
DP x CP) group (all-reduce for DDP, reduce-scatter for ZeRO-1/2), expert gradients over the
expert-data-parallel group, ZeRO-3's per-layer parameter all-gathers and gradient reduce-scatters,
and ZeRO-1/2's parameter all-gathers after the optimizer step. What else an iteration contains:
:mod:`wormsim.workload.builder`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .plan import WorkloadPlan

if TYPE_CHECKING:
    from .stage_builder import StageBuilder

__all__ = ["GradBuckets", "dp_group", "layer_param_count", "bucket_limit"]


def dp_group(plan: WorkloadPlan) -> str:
    """Gradient/parameter sharding group: DP, or DP x CP when context parallel."""
    return "dp_cp" if plan.layout.cp > 1 else "dp"


def layer_param_count(plan: WorkloadPlan, layer: int) -> tuple[int, int]:
    """(dense-replicated, expert) parameters of one layer held by one rank."""
    m, lay = plan.model, plan.layout
    dense = m.attention_params() + m.layernorm_params()
    expert = 0
    if m.is_moe_layer(layer):
        dense += m.hidden_size * m.num_experts
        expert = (m.num_experts // lay.ep + m.num_shared_experts) * m.expert_params()
    else:
        dense += m.dense_mlp_params()
    return dense // lay.tp, expert // lay.etp


def bucket_limit(plan: WorkloadPlan) -> int:
    """Gradient bucket size in parameters: ``parallel.bucket_params``, or max(40M, 1M·dp·cp)."""
    p, lay = plan.parallel, plan.layout
    return p.bucket_params or max(40_000_000, 1_000_000 * lay.dp * lay.cp)


class GradBuckets:
    """The data-parallel gradient traffic of one pipeline stage, written into its builder.

    In the backward of the last micro-batch the builder records in :attr:`grad_ready` the op after
    which each layer's gradients are final, and calls :meth:`chunk_done` when a model chunk is
    through; the chunk's buckets are launched then (``parallel.overlap_grad_reduce``) or by
    :meth:`launch_remaining` at the end of the iteration. Bucket collectives are off the main
    chain, chained to one another, and collected in :attr:`dp_ops` for the optimizer step to wait
    for.
    """

    def __init__(self, builder: StageBuilder) -> None:
        self.b = builder
        self.plan = builder.plan
        self.stage = builder.stage
        self.group = dp_group(builder.plan)
        # gradient bookkeeping: per chunk, ops after which each layer's grads are final
        self.grad_ready: dict[int, int] = {}
        self.chunks_done: list[int] = []
        self.last_dp: int | None = None
        self.dp_ops: list[int] = []
        self.dp_param_count = 0
        self.edp_param_count = 0
        self.bucket_sizes: list[int] = []

    # -- data parallel ------------------------------------------------------------------------
    def chunk_done(self, chunk: int) -> None:
        """All micro-batches of ``chunk`` are through backward: launch its gradient buckets."""
        self.chunks_done.append(chunk)
        if self.plan.parallel.overlap_grad_reduce:
            self.launch(chunk)

    def launch_remaining(self) -> None:
        """Without overlap: every finished chunk's buckets, after the last backward."""
        t = self.b.t
        for chunk in self.chunks_done:  # buckets after the last backward, in chunk order
            for layer in self.plan.chunk_layers(self.stage, chunk):
                self.grad_ready[layer] = t.pending[0]
            self.launch(chunk)

    def _reduce(
        self, name: str, *, group: str, params: int, chunk: int, layer: int, deps: list[int]
    ) -> None:
        """One bucket's gradient collective over ``group``, off the main chain."""
        p = self.plan.parallel
        kind = "allreduce" if p.zero_stage == 0 else "reducescatter"
        self.last_dp = self.b.coll(
            name,
            collective=kind,
            group=group,
            size=params * p.grad_reduce_bytes,
            phase="bwd",
            chunk=chunk,
            layer=layer,
            mb=-1,
            deps=deps,
            chain=False,
        )
        self.dp_ops.append(self.last_dp)

    def launch(self, chunk: int) -> None:
        """Write the gradient buckets of ``chunk``, its layers in backward order."""
        p, lay = self.plan.parallel, self.plan.layout
        layers = list(reversed(self.plan.chunk_layers(self.stage, chunk)))
        if p.zero_stage == 3:
            # layer gradients were reduce-scattered per layer; embeddings are reduced here
            extra = self.embedding_params(chunk)
            if extra and lay.dp * lay.cp > 1:
                self._reduce(
                    "dp_grad_bucket",
                    group=self.group,
                    params=extra,
                    chunk=chunk,
                    layer=layers[-1],
                    deps=[self.grad_ready[layers[-1]]],
                )
            experts = sum(layer_param_count(self.plan, layer)[1] for layer in layers)
            if experts and lay.edp > 1:
                self._reduce(
                    "edp_grad_bucket",
                    group="edp",
                    params=experts,
                    chunk=chunk,
                    layer=layers[-1],
                    deps=[self.grad_ready[layers[-1]]],
                )
            return
        bucket: list[int] = []
        dense_acc, expert_acc = 0, 0
        limit = bucket_limit(self.plan)
        extra = self.embedding_params(chunk)

        def flush(last_layer: int) -> None:
            nonlocal bucket, dense_acc, expert_acc
            deps = [self.grad_ready[last_layer]]
            if lay.dp * lay.cp > 1 and dense_acc:
                deps_d = deps + ([self.last_dp] if self.last_dp is not None else [])
                self._reduce(
                    "dp_grad_bucket",
                    group=self.group,
                    params=dense_acc,
                    chunk=chunk,
                    layer=last_layer,
                    deps=deps_d,
                )
            if lay.edp > 1 and expert_acc:
                deps_e = deps + ([self.last_dp] if self.last_dp is not None else [])
                self._reduce(
                    "edp_grad_bucket",
                    group="edp",
                    params=expert_acc,
                    chunk=chunk,
                    layer=last_layer,
                    deps=deps_e,
                )
            self.dp_param_count += dense_acc
            self.edp_param_count += expert_acc
            bucket, dense_acc, expert_acc = [], 0, 0

        for i, layer in enumerate(layers):
            d, e = layer_param_count(self.plan, layer)
            if i == len(layers) - 1:
                d += extra
            bucket.append(layer)
            dense_acc += d
            expert_acc += e
            if dense_acc + expert_acc >= limit:
                flush(layer)
        if bucket:
            flush(bucket[-1])

    def embedding_params(self, chunk: int) -> int:
        """Embedding / output-layer parameters held on this (stage, chunk), per TP rank."""
        m, lay = self.plan.model, self.plan.layout
        n = 0
        if self.b.first_chunk(chunk):
            n += m.embedding_params() // lay.tp
        if self.b.last_chunk(chunk) and (not m.tie_embeddings or lay.pp > 1):
            n += m.vocab_size * m.hidden_size // lay.tp
        return n

    # -- optimizer step -----------------------------------------------------------------------
    def snapshot_bucket_sizes(self) -> None:
        """Keep the sizes (parameters) of the DP buckets written so far, for :meth:`param_gather`.

        Taken when the passes are done and before :meth:`launch_remaining`: without
        ``parallel.overlap_grad_reduce`` no bucket is written yet, so ZeRO-1/2 then gathers no
        parameters.
        """
        t, grad_bytes = self.b.t, self.plan.parallel.grad_reduce_bytes
        self.bucket_sizes = [
            t.ops[i].size_bytes // grad_bytes
            for i in self.dp_ops
            if t.ops[i].group in ("dp", "dp_cp")
        ]

    def owned_params(self) -> int:
        """Parameters whose optimizer state this rank updates (its shard with ZeRO >= 1)."""
        p, lay = self.plan.parallel, self.plan.layout
        owned = self.dp_param_count + self.edp_param_count
        if p.zero_stage >= 1:
            owned = self.dp_param_count // max(lay.dp * lay.cp, 1) + self.edp_param_count // max(
                lay.edp, 1
            )
        return owned

    def param_gather(self) -> None:
        """ZeRO-1/2: all-gather the updated parameters, bucket after bucket, on the main chain."""
        p, lay = self.plan.parallel, self.plan.layout
        if p.zero_stage in (1, 2) and lay.dp * lay.cp > 1:
            prev = list(self.b.t.pending)
            for size in self.bucket_sizes:
                prev = [
                    self.b.coll(
                        "dp_param_gather",
                        collective="allgather",
                        group=self.group,
                        size=size * p.param_bytes,
                        phase="step",
                        chunk=0,
                        layer=-1,
                        mb=-1,
                        deps=prev,
                    )
                ]

    # -- ZeRO-3 -------------------------------------------------------------------------------
    def zero3_gather(self, *, chunk: int, layer: int, mb: int, phase: str) -> None:
        """ZeRO-3: all-gather one layer's parameters before its forward or backward."""
        dense, _ = layer_param_count(self.plan, layer)
        if self.plan.layout.dp * self.plan.layout.cp > 1:
            self.b.coll(
                "zero3_param_gather",
                collective="allgather",
                group=self.group,
                size=dense * self.plan.parallel.param_bytes,
                phase=phase,
                chunk=chunk,
                layer=layer,
                mb=mb,
            )

    def zero3_scatter(self, *, chunk: int, layer: int, mb: int) -> None:
        """ZeRO-3: reduce-scatter one layer's gradients after its backward, off the main chain."""
        dense, _ = layer_param_count(self.plan, layer)
        if self.plan.layout.dp * self.plan.layout.cp > 1:
            self.b.coll(
                "zero3_grad_scatter",
                collective="reducescatter",
                group=self.group,
                size=dense * self.plan.parallel.grad_reduce_bytes,
                phase="bwd",
                chunk=chunk,
                layer=layer,
                mb=mb,
                chain=False,
                deps=list(self.b.t.pending),
            )
