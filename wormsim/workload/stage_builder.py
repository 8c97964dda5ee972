"""One pipeline stage's template: the per-stage core of the workload builder.

:class:`StageBuilder` writes the ops of one representative rank of a pipeline stage, in schedule
order, as a :class:`~wormsim.workload.template.StageTemplate`;
:func:`wormsim.workload.builder.build_ops` expands it to every rank of the stage. What one
iteration contains is described in :mod:`wormsim.workload.builder`.

The builder itself writes compute, the TP collectives around attention and MLP, the CP
ring-attention rounds, the pipeline send/recv of each pass and the end of the iteration; it hands
MoE layers to :func:`~wormsim.workload.moe_routing.moe_layer` and the data-parallel gradient
traffic to :class:`~wormsim.workload.dp_buckets.GradBuckets`.
"""

from __future__ import annotations

from wormsim.units import PS_PER_US_F

from .compute import (
    BACKWARD_FACTOR,
    attention_fwd_flops,
    lm_head_fwd_flops,
    mlp_fwd_flops,
    moe_fwd_flops,
)
from .dp_buckets import GradBuckets
from .moe_routing import moe_layer
from .plan import WorkloadPlan
from .schedule import PassSpec, stage_schedule
from .template import StageTemplate, TemplateOp

__all__ = ["StageBuilder"]


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
        self.kernel_ps = {k: int(round(v * PS_PER_US_F)) for k, v in hw.kernel_times_us.items()}
        self.coll_seq = 0
        self.last_mb = plan.microbatches - 1
        self.grads = GradBuckets(self)

    # -- helpers ------------------------------------------------------------------------------
    def compute(
        self, name: str, phase: str, chunk: int, layer: int, mb: int, deps: list[int] | None = None
    ) -> int:
        """A compute op on the main chain (after ``deps`` if given); returns its index."""
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
        *,
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
        """A collective of ``size`` bytes over ``group``; returns its index.

        After ``deps`` (default: the main chain), and the main chain's new tail with ``chain``.
        ``key`` is the logical key the group's members share (default: the next of this stage);
        ``a2a`` the (matrix key, transpose) of an uneven all-to-all.
        """
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
        *,
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
        """One side of a point-to-point transfer with the peer of ``rule``, off the main chain."""
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
        """A TP collective of the activation message ``M`` (none without TP)."""
        if self.tp > 1:
            self.coll(
                name,
                collective=kind,
                group="tp",
                size=self.M,
                phase=phase,
                chunk=chunk,
                layer=layer,
                mb=mb,
            )

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
                        send=True,
                        rule="cp_next",
                        key=key,
                        size=size,
                        phase=phase,
                        chunk=chunk,
                        layer=layer,
                        mb=mb,
                        deps=send_deps,
                    )
                )
                prev_recv = self.p2p(
                    f"cp_{phase}_recv",
                    send=False,
                    rule="cp_prev",
                    key=key,
                    size=size,
                    phase=phase,
                    chunk=chunk,
                    layer=layer,
                    mb=mb,
                    deps=start,
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
            moe_layer(
                self, chunk=chunk, layer=layer, mb=mb, phase=phase, suffix=suffix, backward=False
            )
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

    def layer_fwd(
        self, chunk: int, layer: int, mb: int, phase: str = "fwd", suffix: str = ""
    ) -> None:
        if self.plan.parallel.zero_stage == 3 and not suffix:
            self.grads.zero3_gather(chunk=chunk, layer=layer, mb=mb, phase=phase)
        self.attention_fwd(chunk, layer, mb, phase, suffix)
        self.mlp_fwd(chunk, layer, mb, phase, suffix)

    def layer_bwd(self, chunk: int, layer: int, mb: int) -> None:
        if self.plan.parallel.zero_stage == 3:
            self.grads.zero3_gather(chunk=chunk, layer=layer, mb=mb, phase="bwd")
        if self.full_recompute:
            self.layer_fwd(chunk, layer, mb, phase="bwd", suffix="_recompute")
        # MLP backward
        if self.plan.model.is_moe_layer(layer):
            moe_layer(self, chunk=chunk, layer=layer, mb=mb, phase="bwd", suffix="", backward=True)
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
            self.grads.zero3_scatter(chunk=chunk, layer=layer, mb=mb)

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

    def pp_p2p(
        self, name: str, *, send: bool, rule: str, key: tuple, phase: str, chunk: int, mb: int
    ) -> None:
        """A pipeline send or recv of one pass: after the main chain, and waited for by it."""
        op = self.p2p(
            name,
            send=send,
            rule=rule,
            key=key,
            size=self.pp_bytes(),
            phase=phase,
            chunk=chunk,
            layer=-1,
            mb=mb,
            deps=list(self.t.pending),
        )
        self.t.pending = self.t.pending + [op]

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
                self.pp_p2p(
                    "pp_recv_fwd",
                    send=False,
                    rule=pp_prev,
                    key=key,
                    phase="fwd",
                    chunk=chunk,
                    mb=mb,
                )
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
                            f"tp_cross_entropy_{i}",
                            collective="allreduce",
                            group="tp",
                            size=size,
                            phase="fwd",
                            chunk=chunk,
                            layer=-1,
                            mb=mb,
                        )
            else:
                key = self.boundary_key("fwd", mb, self.stage, chunk)
                self.pp_p2p(
                    "pp_send_fwd", send=True, rule=pp_next, key=key, phase="fwd", chunk=chunk, mb=mb
                )
        else:
            if not self.last_chunk(chunk):
                nxt = (self.stage + 1, chunk) if self.stage < lay.pp - 1 else (0, chunk + 1)
                key = self.boundary_key("bwd", mb, *nxt)
                self.pp_p2p(
                    "pp_recv_bwd",
                    send=False,
                    rule=pp_next,
                    key=key,
                    phase="bwd",
                    chunk=chunk,
                    mb=mb,
                )
            else:
                self.compute("lm_head_bwd", "bwd", chunk, -1, mb)
                if self.sp:
                    self.tp_coll("tp_lm_head_in_grad", "reducescatter", "bwd", chunk, -1, mb)
                elif self.tp > 1:
                    self.tp_coll("tp_lm_head_in_grad", "allreduce", "bwd", chunk, -1, mb)
            for layer in reversed(layers):
                self.layer_bwd(chunk, layer, mb)
                if mb == self.last_mb:
                    self.grads.grad_ready[layer] = self.t.pending[0]
            if not self.first_chunk(chunk):
                key = self.boundary_key("bwd", mb, self.stage, chunk)
                self.pp_p2p(
                    "pp_send_bwd", send=True, rule=pp_prev, key=key, phase="bwd", chunk=chunk, mb=mb
                )
            if mb == self.last_mb:
                self.grads.chunk_done(chunk)

    # -- end of iteration ---------------------------------------------------------------------
    def step(self) -> None:
        """End of iteration: remaining buckets, tied-embedding AR, optimizer, param gather."""
        p, lay, m = self.plan.parallel, self.plan.layout, self.plan.model
        if not p.overlap_grad_reduce:
            self.grads.launch_remaining()
        deps = list(self.t.pending) + self.grads.dp_ops
        self.t.pending = deps
        if lay.pp > 1 and m.tie_embeddings and (self.stage in (0, lay.pp - 1)):
            size = m.vocab_size * m.hidden_size // lay.tp * p.grad_reduce_bytes
            self.coll(
                "embedding_grad",
                collective="allreduce",
                group="pp",
                size=size,
                phase="step",
                chunk=0,
                layer=-1,
                mb=-1,
                key=("emb_grad",),
            )
        if self.sp:
            n_ln = sum(
                1
                for c in range(self.plan.virtual_stages)
                for _ in self.plan.chunk_layers(self.stage, c)
            )
            self.coll(
                "tp_layernorm_grad",
                collective="allreduce",
                group="tp",
                size=n_ln * m.layernorm_params() * p.grad_reduce_bytes,
                phase="step",
                chunk=0,
                layer=-1,
                mb=-1,
            )
        # Adam step: read/write fp32 master weights, two moments and the gradient (16 B/param).
        dur = self.plan.hardware.bytes_to_ps(16 * self.grads.owned_params())
        self.t.add(TemplateOp("optimizer", "compute", "step", 0, -1, -1, duration_ps=dur))
        self.grads.param_gather()

    def build(self) -> StageTemplate:
        """Write the stage's passes in schedule order, then the end of the iteration."""
        lay = self.plan.layout
        for ps in stage_schedule(
            self.stage, lay.pp, self.plan.microbatches, self.plan.virtual_stages
        ):
            self.run_pass(ps)
        self.grads.snapshot_bucket_sizes()
        self.step()
        return self.t
