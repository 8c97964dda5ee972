"""One pipeline stage's template: the per-stage core of the workload builder.

:class:`StageBuilder` writes the ops of one representative rank of a pipeline stage, in schedule
order, as a :class:`~wormsim.workload.template.StageTemplate`;
:func:`wormsim.workload.builder.build_ops` expands it to every rank of the stage. What one
iteration contains is described in :mod:`wormsim.workload.builder`.
"""

from __future__ import annotations

import math

import numpy as np

from .compute import (
    BACKWARD_FACTOR,
    attention_fwd_flops,
    lm_head_fwd_flops,
    mlp_fwd_flops,
    moe_fwd_flops,
)
from .plan import WorkloadPlan
from .schedule import PassSpec, stage_schedule
from .template import StageTemplate, TemplateOp

__all__ = ["StageBuilder", "_a2a_matrix"]


class StageBuilder:
    """Writes the template of one pipeline stage."""

    def __init__(self, plan: WorkloadPlan, stage: int) -> None:
        self.plan = plan
        self.stage = stage
        self.t = StageTemplate()
        m, p, hw = plan.model, plan.parallel, plan.hardware
        self.M = plan.activation_bytes
        self.tp = plan.layout.tp
        self.sp = p.sequence_parallel and self.tp > 1
        self.full_recompute = p.recompute == "full"
        f_attn = attention_fwd_flops(m, p)
        f_mlp = mlp_fwd_flops(m, p)
        f_moe = moe_fwd_flops(m, p) if m.is_moe else 0.0
        f_head = lm_head_fwd_flops(m, p)
        self.flops = {
            "attn_fwd": f_attn,
            "attn_bwd": f_attn * BACKWARD_FACTOR,
            "mlp_fwd": f_mlp,
            "mlp_bwd": f_mlp * BACKWARD_FACTOR,
            "moe_fwd": f_moe,
            "moe_bwd": f_moe * BACKWARD_FACTOR,
            "lm_head_fwd": f_head,
            "lm_head_bwd": f_head * BACKWARD_FACTOR,
        }
        self.kernel_ps = {k: int(round(v * 1e6)) for k, v in hw.kernel_times_us.items()}
        self.coll_seq = 0
        # gradient bookkeeping: per chunk, ops after which each layer's grads are final
        self.grad_ready: dict[int, int] = {}

    # -- helpers ------------------------------------------------------------------------------
    def compute(
        self, name: str, phase: str, chunk: int, layer: int, mb: int, deps: list[int] | None = None
    ) -> int:
        base = name.removesuffix("_recompute")
        flops = self.flops.get(base, 0.0)
        dur = self.kernel_ps.get(base)
        if dur is None:
            dur = self.plan.hardware.flops_to_ps(flops)
        return self.t.add(
            TemplateOp(name, "compute", phase, chunk, layer, mb, duration_ps=dur, flops=flops), deps
        )

    def coll(
        self,
        name: str,
        collective: str,
        group: str,
        size: int,
        phase: str,
        chunk: int,
        layer: int,
        mb: int,
        deps: list[int] | None = None,
        chain: bool = True,
        key: tuple | None = None,
        a2a: tuple | None = None,
    ) -> int:
        if key is None:
            self.coll_seq += 1
            key = ("stage", self.stage, self.coll_seq)
        return self.t.add(
            TemplateOp(
                name,
                "comm",
                phase,
                chunk,
                layer,
                mb,
                collective=collective,
                group=group,
                key=key,
                size_bytes=int(size),
                a2a=a2a,
            ),
            deps,
            chain,
        )

    def p2p(
        self,
        name: str,
        send: bool,
        rule: str,
        key: tuple,
        size: int,
        phase: str,
        chunk: int,
        layer: int,
        mb: int,
        deps: list[int],
    ) -> int:
        return self.t.add(
            TemplateOp(
                name,
                "comm",
                phase,
                chunk,
                layer,
                mb,
                collective="send" if send else "recv",
                group="cp" if rule.startswith("cp") else "pp",
                key=key,
                peer=rule,
                anchor_self=send,
                size_bytes=int(size),
            ),
            deps,
            chain=False,
        )

    # -- layer bodies -------------------------------------------------------------------------
    def tp_coll(self, name: str, kind: str, phase: str, chunk: int, layer: int, mb: int) -> None:
        if self.tp > 1:
            self.coll(name, kind, "tp", self.M, phase, chunk, layer, mb)

    def attention_fwd(self, chunk: int, layer: int, mb: int, phase: str, suffix: str) -> None:
        if self.sp:
            self.tp_coll("tp_attn_in" + suffix, "allgather", phase, chunk, layer, mb)
        self.cp_ring(chunk, layer, mb, phase, "attn_fwd" + suffix, backward=False)
        self.tp_coll(
            "tp_attn_out" + suffix,
            "reducescatter" if self.sp else "allreduce",
            phase,
            chunk,
            layer,
            mb,
        )

    def cp_ring(
        self, chunk: int, layer: int, mb: int, phase: str, name: str, backward: bool
    ) -> None:
        """Attention compute, split over CP ring rounds that overlap the KV exchange."""
        c = self.plan.layout.cp
        if c == 1:
            self.compute(name, phase, chunk, layer, mb)
            return
        m = self.plan.model
        kv_per_rank = max(m.kv_heads // self.tp, 1)
        kv_bytes = (
            2
            * self.plan.parallel.micro_batch
            * (m.seq_length // c)
            * kv_per_rank
            * m.head_dim
            * self.plan.parallel.activation_bytes
        )
        size = kv_bytes * (2 if backward else 1)
        start = list(self.t.pending)
        prev_recv: int | None = None
        part = -1
        sends: list[int] = []
        base_flops = self.flops.get(name.removesuffix("_recompute"), 0.0)
        for rnd in range(c):
            if rnd > 0:
                key = ("cp", self.stage, layer, mb, phase, name, rnd)
                send_deps = start if prev_recv is None else [prev_recv]
                sends.append(
                    self.p2p(
                        f"cp_{phase}_send",
                        True,
                        "cp_next",
                        key,
                        size,
                        phase,
                        chunk,
                        layer,
                        mb,
                        send_deps,
                    )
                )
                prev_recv = self.p2p(
                    f"cp_{phase}_recv", False, "cp_prev", key, size, phase, chunk, layer, mb, start
                )
            deps = start if part < 0 else [part]
            if prev_recv is not None:
                deps = deps + [prev_recv]
            dur = self.kernel_ps.get(name.removesuffix("_recompute"))
            flops = base_flops / c
            dur_ps = (dur // c) if dur is not None else self.plan.hardware.flops_to_ps(flops)
            part = self.t.add(
                TemplateOp(
                    name, "compute", phase, chunk, layer, mb, duration_ps=dur_ps, flops=flops
                ),
                deps,
            )
        self.t.pending = [part] + sends

    def mlp_fwd(self, chunk: int, layer: int, mb: int, phase: str, suffix: str) -> None:
        if self.plan.model.is_moe_layer(layer):
            self.moe(chunk, layer, mb, phase, suffix, backward=False)
            return
        if self.sp:
            self.tp_coll("tp_mlp_in" + suffix, "allgather", phase, chunk, layer, mb)
        self.compute("mlp_fwd" + suffix, phase, chunk, layer, mb)
        self.tp_coll(
            "tp_mlp_out" + suffix,
            "reducescatter" if self.sp else "allreduce",
            phase,
            chunk,
            layer,
            mb,
        )

    def moe(self, chunk: int, layer: int, mb: int, phase: str, suffix: str, backward: bool) -> None:
        """Dispatch A2A, expert-TP AG, experts, expert-TP RS, combine A2A (mirrored backward)."""
        m, p, lay = self.plan.model, self.plan.parallel, self.plan.layout
        tokens = p.micro_batch * m.seq_length // (lay.cp * (self.tp if self.sp else 1))
        disp = tokens * m.moe_top_k * m.hidden_size * p.activation_bytes
        skew = p.moe_routing_skew > 0 or p.moe_capacity_factor is not None
        mkey = ("a2a", self.stage, layer, mb, phase + suffix)
        first, second = ("combine", "dispatch") if backward else ("dispatch", "combine")
        if lay.ep > 1:
            self.coll(
                f"ep_{first}{suffix}",
                "alltoall",
                "ep",
                disp,
                phase,
                chunk,
                layer,
                mb,
                a2a=(mkey, backward) if skew else None,
            )
        if lay.etp > 1:
            self.coll(
                f"etp_gather{suffix}", "allgather", "etp", disp * lay.etp, phase, chunk, layer, mb
            )
        self.compute(("moe_bwd" if backward else "moe_fwd") + suffix, phase, chunk, layer, mb)
        if lay.etp > 1:
            self.coll(
                f"etp_scatter{suffix}",
                "reducescatter",
                "etp",
                disp * lay.etp,
                phase,
                chunk,
                layer,
                mb,
            )
        if lay.ep > 1:
            self.coll(
                f"ep_{second}{suffix}",
                "alltoall",
                "ep",
                disp,
                phase,
                chunk,
                layer,
                mb,
                a2a=(mkey, not backward) if skew else None,
            )

    def layer_fwd(
        self, chunk: int, layer: int, mb: int, phase: str = "fwd", suffix: str = ""
    ) -> None:
        if self.plan.parallel.zero_stage == 3 and not suffix:
            self.zero3_gather(chunk, layer, mb, phase)
        self.attention_fwd(chunk, layer, mb, phase, suffix)
        self.mlp_fwd(chunk, layer, mb, phase, suffix)

    def layer_bwd(self, chunk: int, layer: int, mb: int) -> None:
        if self.plan.parallel.zero_stage == 3:
            self.zero3_gather(chunk, layer, mb, "bwd")
        if self.full_recompute:
            self.layer_fwd(chunk, layer, mb, phase="bwd", suffix="_recompute")
        # MLP backward
        if self.plan.model.is_moe_layer(layer):
            self.moe(chunk, layer, mb, "bwd", "", backward=True)
        else:
            if self.sp:
                self.tp_coll("tp_mlp_out_grad", "allgather", "bwd", chunk, layer, mb)
                self.tp_coll("tp_mlp_in_regather", "allgather", "bwd", chunk, layer, mb)
            self.compute("mlp_bwd", "bwd", chunk, layer, mb)
            self.tp_coll(
                "tp_mlp_in_grad",
                "reducescatter" if self.sp else "allreduce",
                "bwd",
                chunk,
                layer,
                mb,
            )
        # attention backward
        if self.sp:
            self.tp_coll("tp_attn_out_grad", "allgather", "bwd", chunk, layer, mb)
            self.tp_coll("tp_attn_in_regather", "allgather", "bwd", chunk, layer, mb)
        self.cp_ring(chunk, layer, mb, "bwd", "attn_bwd", backward=True)
        self.tp_coll(
            "tp_attn_in_grad", "reducescatter" if self.sp else "allreduce", "bwd", chunk, layer, mb
        )
        if self.plan.parallel.zero_stage == 3:
            self.zero3_scatter(chunk, layer, mb)

    # -- ZeRO-3 -------------------------------------------------------------------------------
    @property
    def dp_group(self) -> str:
        """Gradient/parameter sharding group: DP, or DP x CP when context parallel."""
        return "dp_cp" if self.plan.layout.cp > 1 else "dp"

    def layer_param_count(self, layer: int) -> tuple[int, int]:
        """(dense-replicated, expert) parameters of one layer held by one rank."""
        m, lay = self.plan.model, self.plan.layout
        dense = m.attention_params() + m.layernorm_params()
        expert = 0
        if m.is_moe_layer(layer):
            dense += m.hidden_size * m.num_experts
            expert = (m.num_experts // lay.ep + m.num_shared_experts) * m.expert_params()
        else:
            dense += m.dense_mlp_params()
        return dense // lay.tp, expert // lay.etp

    def zero3_gather(self, chunk: int, layer: int, mb: int, phase: str) -> None:
        dense, _ = self.layer_param_count(layer)
        if self.plan.layout.dp * self.plan.layout.cp > 1:
            self.coll(
                "zero3_param_gather",
                "allgather",
                self.dp_group,
                dense * self.plan.parallel.param_bytes,
                phase,
                chunk,
                layer,
                mb,
            )

    def zero3_scatter(self, chunk: int, layer: int, mb: int) -> None:
        dense, _ = self.layer_param_count(layer)
        if self.plan.layout.dp * self.plan.layout.cp > 1:
            self.coll(
                "zero3_grad_scatter",
                "reducescatter",
                self.dp_group,
                dense * self.plan.parallel.grad_reduce_bytes,
                "bwd",
                chunk,
                layer,
                mb,
                chain=False,
                deps=list(self.t.pending),
            )

    # -- passes -------------------------------------------------------------------------------
    def first_chunk(self, chunk: int) -> bool:
        return self.stage == 0 and chunk == 0

    def last_chunk(self, chunk: int) -> bool:
        lay = self.plan.layout
        return self.stage == lay.pp - 1 and chunk == self.plan.virtual_stages - 1

    def boundary_key(self, direction: str, mb: int, stage: int, chunk: int) -> tuple:
        """Key of the p2p transfer leaving (stage, chunk) in ``direction``."""
        return ("pp", direction, mb, stage, chunk)

    def prev_of(self, chunk: int) -> tuple[int, int]:
        pp = self.plan.layout.pp
        return (self.stage - 1, chunk) if self.stage > 0 else (pp - 1, chunk - 1)

    def pp_bytes(self) -> int:
        return self.M // self.tp if self.sp else self.M

    def run_pass(self, ps: PassSpec) -> None:
        chunk, mb = ps.chunk, ps.microbatch
        layers = self.plan.chunk_layers(self.stage, chunk)
        lay = self.plan.layout
        pp_next = "pp_next" if self.stage < lay.pp - 1 else "pp_wrap_next"
        pp_prev = "pp_prev" if self.stage > 0 else "pp_wrap_prev"
        if ps.direction == "fwd":
            if not self.first_chunk(chunk):
                ps_, pc = self.prev_of(chunk)
                key = self.boundary_key("fwd", mb, ps_, pc)
                r = self.p2p(
                    "pp_recv_fwd",
                    False,
                    pp_prev,
                    key,
                    self.pp_bytes(),
                    "fwd",
                    chunk,
                    -1,
                    mb,
                    list(self.t.pending),
                )
                self.t.pending = self.t.pending + [r]
            if self.first_chunk(chunk) and self.tp > 1:
                self.tp_coll(
                    "tp_embedding",
                    "reducescatter" if self.sp else "allreduce",
                    "fwd",
                    chunk,
                    -1,
                    mb,
                )
            for layer in layers:
                self.layer_fwd(chunk, layer, mb)
            if self.last_chunk(chunk):
                if self.sp:
                    self.tp_coll("tp_lm_head_in", "allgather", "fwd", chunk, -1, mb)
                self.compute("lm_head_fwd", "fwd", chunk, -1, mb)
                if self.tp > 1:
                    for i in range(3):  # vocab-parallel cross-entropy: max, sum-exp, target
                        p = self.plan.parallel
                        size = p.micro_batch * self.plan.model.seq_length // lay.cp * 4
                        self.coll(
                            f"tp_cross_entropy_{i}", "allreduce", "tp", size, "fwd", chunk, -1, mb
                        )
            else:
                key = self.boundary_key("fwd", mb, self.stage, chunk)
                s = self.p2p(
                    "pp_send_fwd",
                    True,
                    pp_next,
                    key,
                    self.pp_bytes(),
                    "fwd",
                    chunk,
                    -1,
                    mb,
                    list(self.t.pending),
                )
                self.t.pending = self.t.pending + [s]
        else:
            if not self.last_chunk(chunk):
                nxt = (self.stage + 1, chunk) if self.stage < lay.pp - 1 else (0, chunk + 1)
                key = self.boundary_key("bwd", mb, *nxt)
                r = self.p2p(
                    "pp_recv_bwd",
                    False,
                    pp_next,
                    key,
                    self.pp_bytes(),
                    "bwd",
                    chunk,
                    -1,
                    mb,
                    list(self.t.pending),
                )
                self.t.pending = self.t.pending + [r]
            else:
                self.compute("lm_head_bwd", "bwd", chunk, -1, mb)
                if self.sp:
                    self.tp_coll("tp_lm_head_in_grad", "reducescatter", "bwd", chunk, -1, mb)
                elif self.tp > 1:
                    self.tp_coll("tp_lm_head_in_grad", "allreduce", "bwd", chunk, -1, mb)
            for layer in reversed(layers):
                self.layer_bwd(chunk, layer, mb)
                if mb == self.last_mb:
                    self.grad_ready[layer] = self.t.pending[0]
            if not self.first_chunk(chunk):
                key = self.boundary_key("bwd", mb, self.stage, chunk)
                s = self.p2p(
                    "pp_send_bwd",
                    True,
                    pp_prev,
                    key,
                    self.pp_bytes(),
                    "bwd",
                    chunk,
                    -1,
                    mb,
                    list(self.t.pending),
                )
                self.t.pending = self.t.pending + [s]
            if mb == self.last_mb:
                self.grad_ready_chunk_done(chunk)

    # -- data parallel ------------------------------------------------------------------------
    def bucket_limit(self) -> int:
        p, lay = self.plan.parallel, self.plan.layout
        return p.bucket_params or max(40_000_000, 1_000_000 * lay.dp * lay.cp)

    def grad_ready_chunk_done(self, chunk: int) -> None:
        """All micro-batches of ``chunk`` are through backward: launch its gradient buckets."""
        self.chunks_done.append(chunk)
        if self.plan.parallel.overlap_grad_reduce:
            self.launch_buckets(chunk)

    def launch_buckets(self, chunk: int) -> None:
        p, lay = self.plan.parallel, self.plan.layout
        dp_group = self.dp_group
        kind = "allreduce" if p.zero_stage == 0 else "reducescatter"
        layers = list(reversed(self.plan.chunk_layers(self.stage, chunk)))
        if p.zero_stage == 3:
            # layer gradients were reduce-scattered per layer; embeddings are reduced here
            extra = self.embedding_params(chunk)
            if extra and lay.dp * lay.cp > 1:
                self.last_dp = self.coll(
                    "dp_grad_bucket",
                    kind,
                    dp_group,
                    extra * p.grad_reduce_bytes,
                    "bwd",
                    chunk,
                    layers[-1],
                    -1,
                    deps=[self.grad_ready[layers[-1]]],
                    chain=False,
                )
                self.dp_ops.append(self.last_dp)
            experts = sum(self.layer_param_count(layer)[1] for layer in layers)
            if experts and lay.edp > 1:
                self.last_dp = self.coll(
                    "edp_grad_bucket",
                    kind,
                    "edp",
                    experts * p.grad_reduce_bytes,
                    "bwd",
                    chunk,
                    layers[-1],
                    -1,
                    deps=[self.grad_ready[layers[-1]]],
                    chain=False,
                )
                self.dp_ops.append(self.last_dp)
            return
        bucket, dense_acc, expert_acc = [], 0, 0
        limit = self.bucket_limit()
        extra = self.embedding_params(chunk)

        def flush(last_layer: int) -> None:
            nonlocal bucket, dense_acc, expert_acc
            deps = [self.grad_ready[last_layer]]
            if lay.dp * lay.cp > 1 and dense_acc:
                deps_d = deps + ([self.last_dp] if self.last_dp is not None else [])
                self.last_dp = self.coll(
                    "dp_grad_bucket",
                    kind,
                    dp_group,
                    dense_acc * p.grad_reduce_bytes,
                    "bwd",
                    chunk,
                    last_layer,
                    -1,
                    deps=deps_d,
                    chain=False,
                )
                self.dp_ops.append(self.last_dp)
            if lay.edp > 1 and expert_acc:
                deps_e = deps + ([self.last_dp] if self.last_dp is not None else [])
                self.last_dp = self.coll(
                    "edp_grad_bucket",
                    kind,
                    "edp",
                    expert_acc * p.grad_reduce_bytes,
                    "bwd",
                    chunk,
                    last_layer,
                    -1,
                    deps=deps_e,
                    chain=False,
                )
                self.dp_ops.append(self.last_dp)
            self.dp_param_count += dense_acc
            self.edp_param_count += expert_acc
            bucket, dense_acc, expert_acc = [], 0, 0

        for i, layer in enumerate(layers):
            d, e = self.layer_param_count(layer)
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
        if self.first_chunk(chunk):
            n += m.embedding_params() // lay.tp
        if self.last_chunk(chunk) and (not m.tie_embeddings or lay.pp > 1):
            n += m.vocab_size * m.hidden_size // lay.tp
        return n

    def step(self) -> None:
        """End of iteration: remaining buckets, tied-embedding AR, optimizer, param gather."""
        p, lay, m = self.plan.parallel, self.plan.layout, self.plan.model
        if not p.overlap_grad_reduce:
            self.t.pending = self.t.pending  # buckets after the last backward, in chunk order
            for chunk in self.chunks_done:
                for layer in self.plan.chunk_layers(self.stage, chunk):
                    self.grad_ready[layer] = self.t.pending[0]
                self.launch_buckets(chunk)
        deps = list(self.t.pending) + self.dp_ops
        self.t.pending = deps
        if lay.pp > 1 and m.tie_embeddings and (self.stage in (0, lay.pp - 1)):
            size = m.vocab_size * m.hidden_size // lay.tp * p.grad_reduce_bytes
            self.coll(
                "embedding_grad", "allreduce", "pp", size, "step", 0, -1, -1, key=("emb_grad",)
            )
        if self.sp:
            n_ln = sum(
                1
                for c in range(self.plan.virtual_stages)
                for _ in self.plan.chunk_layers(self.stage, c)
            )
            self.coll(
                "tp_layernorm_grad",
                "allreduce",
                "tp",
                n_ln * m.layernorm_params() * p.grad_reduce_bytes,
                "step",
                0,
                -1,
                -1,
            )
        owned = self.dp_param_count + self.edp_param_count
        if p.zero_stage >= 1:
            owned = self.dp_param_count // max(lay.dp * lay.cp, 1) + self.edp_param_count // max(
                lay.edp, 1
            )
        # Adam step: read/write fp32 master weights, two moments and the gradient (16 B/param).
        dur = self.plan.hardware.bytes_to_ps(16 * owned)
        self.t.add(TemplateOp("optimizer", "compute", "step", 0, -1, -1, duration_ps=dur))
        if p.zero_stage in (1, 2) and lay.dp * lay.cp > 1:
            dp_group = self.dp_group
            prev = list(self.t.pending)
            for size in self.bucket_sizes:
                prev = [
                    self.coll(
                        "dp_param_gather",
                        "allgather",
                        dp_group,
                        size * p.param_bytes,
                        "step",
                        0,
                        -1,
                        -1,
                        deps=prev,
                    )
                ]

    def build(self) -> StageTemplate:
        lay = self.plan.layout
        self.last_mb = self.plan.microbatches - 1
        self.chunks_done: list[int] = []
        self.last_dp: int | None = None
        self.dp_ops: list[int] = []
        self.dp_param_count = 0
        self.edp_param_count = 0
        for ps in stage_schedule(
            self.stage, lay.pp, self.plan.microbatches, self.plan.virtual_stages
        ):
            self.run_pass(ps)
        self.bucket_sizes = [
            self.t.ops[i].size_bytes // self.plan.parallel.grad_reduce_bytes
            for i in self.dp_ops
            if self.t.ops[i].group in ("dp", "dp_cp")
        ]
        self.step()
        return self.t


def _a2a_matrix(plan: WorkloadPlan, key_id: int, n_inst: int, disp: int) -> np.ndarray:
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
