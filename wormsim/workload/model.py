"""Model shapes: presets and inline specifications.

A :class:`ModelSpec` is either a preset name (``model: gpt-13b``) or an inline shape. Presets follow
the published shapes; the GPT and MoE shapes of the Wormhole evaluation use AICB's presets (its
traces came from AICB).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ModelSpec", "PRESETS", "preset_names", "resolve_model"]


class ModelSpec(BaseModel):
    """Shape of a transformer model (dense or MoE).

    Attributes
    ----------
    name : str
        Preset name or a label for an inline model.
    num_layers, hidden_size, num_heads : int
        Transformer layers ``L``, hidden size ``h``, attention heads ``a``.
    num_kv_heads : int or None
        KV heads for GQA; ``None`` means multi-head attention (``num_heads``).
    ffn_hidden_size : int or None
        FFN hidden size ``f``; ``None`` means ``4h``.
    swiglu : bool
        SwiGLU MLP (three matrices) instead of GeLU (two).
    vocab_size, seq_length : int
        Vocabulary ``V`` and training sequence length ``s``.
    num_experts : int
        Routed experts ``E`` (0 for a dense model).
    moe_top_k : int
        Experts per token ``k``.
    expert_ffn_hidden_size : int or None
        FFN hidden size of one expert; ``None`` means ``ffn_hidden_size``.
    num_shared_experts : int
        Shared experts every token passes through (DeepSeek style).
    first_dense_layers : int
        Leading layers with a dense MLP in a MoE model.
    tie_embeddings : bool
        Input embedding and output layer share weights (Megatron GPT default).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field("custom", max_length=200, description="Preset name or a label.")
    num_layers: int = Field(gt=0, le=100_000, description="Transformer layers L.")
    hidden_size: int = Field(gt=0, le=1 << 20, description="Hidden size h.")
    num_heads: int = Field(gt=0, le=1 << 16, description="Attention heads a.")
    num_kv_heads: int | None = Field(
        default=None, gt=0, le=1 << 16, description="KV heads (GQA); null: num_heads (MHA)."
    )
    ffn_hidden_size: int | None = Field(
        default=None, gt=0, le=1 << 24, description="FFN hidden size f; null: 4h."
    )
    swiglu: bool = Field(False, description="SwiGLU MLP (3 matrices) instead of GeLU (2).")
    vocab_size: int = Field(default=50257, gt=0, le=1 << 24, description="Vocabulary V, tokens.")
    seq_length: int = Field(
        default=2048, gt=0, le=1 << 24, description="Training sequence length s, tokens."
    )
    num_experts: int = Field(
        default=0, ge=0, le=1 << 16, description="Routed experts E (0: dense model)."
    )
    moe_top_k: int = Field(default=2, gt=0, le=1 << 10, description="Experts per token k.")
    expert_ffn_hidden_size: int | None = Field(
        default=None, gt=0, le=1 << 24, description="FFN hidden size of one expert; null: f."
    )
    num_shared_experts: int = Field(
        default=0, ge=0, le=1 << 10, description="Shared experts every token passes through."
    )
    first_dense_layers: int = Field(
        default=0, ge=0, le=100_000, description="Leading layers with a dense MLP (MoE)."
    )
    tie_embeddings: bool = Field(
        True, description="Input embedding and output layer share weights."
    )

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.num_kv_heads is not None and self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"model.num_kv_heads ({self.num_kv_heads}) must divide model.num_heads "
                f"({self.num_heads})"
            )
        if self.num_experts and self.moe_top_k > self.num_experts:
            raise ValueError(
                f"model.moe_top_k ({self.moe_top_k}) exceeds model.num_experts ({self.num_experts})"
            )
        if self.first_dense_layers > self.num_layers:
            raise ValueError("model.first_dense_layers exceeds model.num_layers")
        return self

    # Derived shapes -----------------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        """KV heads (``num_heads`` without GQA)."""
        return self.num_kv_heads or self.num_heads

    @property
    def head_dim(self) -> int:
        """Head dimension ``h / a``."""
        return self.hidden_size // self.num_heads

    @property
    def ffn(self) -> int:
        """Dense FFN hidden size."""
        return self.ffn_hidden_size or 4 * self.hidden_size

    @property
    def expert_ffn(self) -> int:
        """Expert FFN hidden size."""
        return self.expert_ffn_hidden_size or self.ffn

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.num_experts > 0

    def is_moe_layer(self, layer: int) -> bool:
        """True when global layer ``layer`` has a MoE MLP."""
        return self.is_moe and layer >= self.first_dense_layers

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices per MLP: 3 for SwiGLU, 2 for GeLU."""
        return 3 if self.swiglu else 2

    def attention_params(self) -> int:
        """Attention weights and biases of one layer (QKV, output projection)."""
        h, d, a, kv = self.hidden_size, self.head_dim, self.num_heads, self.kv_heads
        qkv = h * (a * d + 2 * kv * d) + (a * d + 2 * kv * d)
        proj = a * d * h + h
        return qkv + proj

    def dense_mlp_params(self) -> int:
        """Weights and biases of one dense MLP."""
        return self.mlp_matrices * self.hidden_size * self.ffn + self.ffn + self.hidden_size

    def expert_params(self) -> int:
        """Weights of one routed expert."""
        return self.mlp_matrices * self.hidden_size * self.expert_ffn

    def layernorm_params(self) -> int:
        """Two layer norms (weight and bias) per layer."""
        return 4 * self.hidden_size

    def embedding_params(self) -> int:
        """Word embedding ``V·h`` (position embeddings are counted with it: ``s·h``)."""
        return self.vocab_size * self.hidden_size + self.seq_length * self.hidden_size

    def total_params(self) -> int:
        """All parameters of the model (tied embeddings counted once)."""
        layers = 0
        for layer in range(self.num_layers):
            layers += self.attention_params() + self.layernorm_params()
            if self.is_moe_layer(layer):
                layers += (self.num_experts + self.num_shared_experts) * self.expert_params()
                layers += self.hidden_size * self.num_experts  # router
            else:
                layers += self.dense_mlp_params()
        head = 0 if self.tie_embeddings else self.vocab_size * self.hidden_size
        return layers + self.embedding_params() + head


def _gpt(name: str, layers: int, hidden: int, heads: int, **kw: Any) -> dict[str, Any]:
    return dict(name=name, num_layers=layers, hidden_size=hidden, num_heads=heads, **kw)


def _llama(
    name: str,
    layers: int,
    hidden: int,
    heads: int,
    kv: int,
    ffn: int,
    vocab: int,
    seq: int,
    **kw: Any,
) -> dict[str, Any]:
    return dict(
        name=name,
        num_layers=layers,
        hidden_size=hidden,
        num_heads=heads,
        num_kv_heads=kv,
        ffn_hidden_size=ffn,
        swiglu=True,
        vocab_size=vocab,
        seq_length=seq,
        tie_embeddings=False,
        **kw,
    )


#: Preset name -> ModelSpec fields.
PRESETS: dict[str, dict[str, Any]] = {
    # GPT-3 family (Brown et al. 2020); 1.3B uses 16 heads of 128 (the paper's 24 does not divide).
    "gpt3-125m": _gpt("gpt3-125m", 12, 768, 12),
    "gpt3-350m": _gpt("gpt3-350m", 24, 1024, 16),
    "gpt3-760m": _gpt("gpt3-760m", 24, 1536, 16),
    "gpt3-1.3b": _gpt("gpt3-1.3b", 24, 2048, 16),
    "gpt3-2.7b": _gpt("gpt3-2.7b", 32, 2560, 32),
    "gpt3-6.7b": _gpt("gpt3-6.7b", 32, 4096, 32),
    "gpt3-13b": _gpt("gpt3-13b", 40, 5120, 40),
    "gpt3-175b": _gpt("gpt3-175b", 96, 12288, 96),
    # Wormhole Table 1 GPT shapes (AICB scripts/megatron_gpt.sh).
    "gpt-7b": _gpt("gpt-7b", 36, 4096, 32),
    "gpt-13b": _gpt("gpt-13b", 40, 5120, 40),
    "gpt-22b": _gpt("gpt-22b", 48, 6144, 64),
    "gpt-175b": _gpt("gpt-175b", 96, 12288, 96),
    # Wormhole Table 1 MoE shapes: 8x7B is AICB's Mixtral preset; the others are the GPT shape of
    # the same size with E experts, top-2, expert FFN 4h (AICB's GPT MoE convention).
    "moe-8x7b": _llama("moe-8x7b", 32, 4096, 32, 8, 14336, 32000, 2048, num_experts=8, moe_top_k=2),
    "moe-8x13b": _gpt("moe-8x13b", 40, 5120, 40, num_experts=8, moe_top_k=2),
    "moe-8x22b": _gpt("moe-8x22b", 48, 6144, 64, num_experts=8, moe_top_k=2),
    "moe-32x22b": _gpt("moe-32x22b", 48, 6144, 64, num_experts=32, moe_top_k=2),
    # LLaMA-2 / LLaMA-3.
    "llama2-7b": _llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096),
    "llama2-13b": _llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096),
    "llama2-70b": _llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096),
    "llama3-8b": _llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192),
    "llama3-70b": _llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192),
    # Mixtral 8x7B (training at 4K context).
    "mixtral-8x7b": _llama(
        "mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096, num_experts=8, moe_top_k=2
    ),
    # DeepSeek-V3-like: MLA approximated by 128-head MHA of head dim 56 (h/a); 3 dense layers,
    # 256 routed experts of FFN 2048 plus 1 shared, top-8.
    "deepseek-v3": _llama(
        "deepseek-v3",
        61,
        7168,
        128,
        128,
        18432,
        129280,
        4096,
        num_experts=256,
        moe_top_k=8,
        expert_ffn_hidden_size=2048,
        num_shared_experts=1,
        first_dense_layers=3,
    ),
}


def preset_names() -> list[str]:
    """Names of all model presets."""
    return sorted(PRESETS)


def resolve_model(value: Any) -> Any:
    """Turn a preset name (or ``{preset: name, **overrides}``) into ModelSpec fields.

    Raises
    ------
    ValueError
        For an unknown preset, listing the known ones.
    """
    if isinstance(value, str):
        value = {"preset": value}
    if isinstance(value, dict) and "preset" in value:
        value = dict(value)
        name = value.pop("preset")
        if name not in PRESETS:
            raise ValueError(
                f"unknown model preset {name!r}; choose one of: {', '.join(preset_names())}, "
                "or give an inline shape (num_layers, hidden_size, num_heads, ...)"
            )
        return {**PRESETS[name], **value}
    return value
