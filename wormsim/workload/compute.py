"""FLOPs of the compute phases of one transformer layer, per rank and micro-batch.

Forward FLOPs follow the usual transformer count (2 FLOPs per multiply-accumulate):
attention ``2·tokens·P_attn + 4·b·s²·h`` (full, not causal-halved), MLP ``2·tokens·P_mlp``;
backward costs twice the forward. Work is divided by TP (weights sharded) and CP (sequence
sharded; the attention core by CP too).
"""

from __future__ import annotations

from .model import ModelSpec
from .parallel import ParallelSpec

__all__ = [
    "attention_fwd_flops",
    "mlp_fwd_flops",
    "moe_fwd_flops",
    "lm_head_fwd_flops",
    "BACKWARD_FACTOR",
]

#: Backward = dgrad + wgrad = 2 x forward.
BACKWARD_FACTOR = 2.0


def _tokens(model: ModelSpec, par: ParallelSpec) -> float:
    """Tokens one rank's weights see per micro-batch (the full micro-batch, CP-sharded)."""
    return par.micro_batch * model.seq_length / par.cp


def attention_fwd_flops(model: ModelSpec, par: ParallelSpec) -> float:
    """Forward FLOPs of one attention block (QKV, core attention, output projection)."""
    h, d, a, kv = model.hidden_size, model.head_dim, model.num_heads, model.kv_heads
    tokens = _tokens(model, par)
    proj = 2.0 * tokens * (h * (a * d + 2 * kv * d) + a * d * h)
    core = 4.0 * par.micro_batch * model.seq_length * model.seq_length * a * d / par.cp
    return (proj + core) / par.tp


def mlp_fwd_flops(model: ModelSpec, par: ParallelSpec) -> float:
    """Forward FLOPs of one dense MLP."""
    return 2.0 * _tokens(model, par) * model.mlp_matrices * model.hidden_size * model.ffn / par.tp


def moe_fwd_flops(model: ModelSpec, par: ParallelSpec) -> float:
    """Forward FLOPs of one MoE block per rank under uniform routing (router, experts, shared).

    Each token visits ``k`` experts; with expert tensor parallelism equal to TP, every rank does
    ``1/tp`` of the work of the tokens that reach its experts, which under uniform routing is its
    own share.
    """
    h = model.hidden_size
    tokens = _tokens(model, par)
    router = 2.0 * tokens * h * model.num_experts / par.tp
    per_expert_token = 2.0 * model.mlp_matrices * h * model.expert_ffn
    routed = tokens * model.moe_top_k * per_expert_token / par.tp
    shared = tokens * model.num_shared_experts * per_expert_token / par.tp
    return router + routed + shared


def lm_head_fwd_flops(model: ModelSpec, par: ParallelSpec) -> float:
    """Forward FLOPs of the output layer ``2·tokens·h·V / tp``."""
    return 2.0 * _tokens(model, par) * model.hidden_size * model.vocab_size / par.tp
