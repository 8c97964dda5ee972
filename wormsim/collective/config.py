"""``CollectiveSpec``: the ``collective:`` section of an experiment."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CollectiveSpec",
    "NCCL_SIMPLE_CHUNK_BYTES",
    "NCCL_TREE_CHUNK_BYTES",
    "MIN_CHUNK_BYTES",
]

#: NCCL Simple-protocol ring chunk: 4 steps of 512 KiB (4 MiB buffer / NCCL_STEPS=8).
NCCL_SIMPLE_CHUNK_BYTES = 2 * 1024 * 1024
#: NCCL Simple-protocol tree chunk: 1 step of 512 KiB.
NCCL_TREE_CHUNK_BYTES = 512 * 1024
#: Smallest chunk accepted: smaller ones multiply the flows (and the DAG) for no insight.
MIN_CHUNK_BYTES = 4096


class CollectiveSpec(BaseModel):
    """How collectives become flows.

    Attributes
    ----------
    allreduce : {"auto", "ring", "tree", "halving_doubling", "hierarchical"}
        All-reduce algorithm; ``auto`` runs the NCCL-like selector (ring or double binary tree).
    allgather, reducescatter : {"auto", "ring"}
        All-gather / reduce-scatter algorithm (only ring is implemented).
    alltoall : {"auto", "direct"}
        All-to-all algorithm (direct: P-1 independent rounds).
    max_channels : int
        Channels of a network collective (NCCL's 2 channels per NIC peer by default); the selector
        drops channels for small messages. Intra-node groups always use 1 aggregated channel.
    granularity : {"step", "nccl_chunks"}
        ``step``: one flow per (step, channel) carrying its whole share (SimAI's flow model).
        ``nccl_chunks``: NCCL-exact chunking, at most ``nccl_chunk_bytes`` per flow and
        ceil(size / (channels * ranks * chunk)) loops, two chunk-flows (4 slices) in flight.
    intra_node : {"aggregate", "step"}
        For a ring whose members share one server: ``aggregate`` emits one flow per ring edge
        carrying all the bytes that edge carries; ``step`` emits every step.
    nvlink_step_latency_ns : float
        Latency per ring step added to the completion of intra-node collectives, in ns (default:
        NCCL's NVLink Simple ring hwLat, 3.4 us).
    p2p_chunk_bytes : int or None
        Split send/recv into chunks of this many bytes (None: one flow per message).
    nccl_chunk_bytes : int
        Ring chunk of the ``nccl_chunks`` granularity, bytes (NCCL Simple: 2 MiB).
    tree_chunk_bytes : int
        Pipelining chunk of the double binary tree, bytes (NCCL Simple: 512 KiB).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    allreduce: Literal["auto", "ring", "tree", "halving_doubling", "hierarchical"] = Field(
        "auto", description="All-reduce algorithm; auto: NCCL-like selector (ring or tree)."
    )
    allgather: Literal["auto", "ring"] = Field("auto", description="All-gather algorithm.")
    reducescatter: Literal["auto", "ring"] = Field("auto", description="Reduce-scatter algorithm.")
    alltoall: Literal["auto", "direct"] = Field("auto", description="All-to-all algorithm.")
    max_channels: int = Field(
        default=2, ge=1, le=64, description="Channels of a network collective."
    )
    granularity: Literal["step", "nccl_chunks"] = Field(
        "step", description="step: one flow per (step, channel); nccl_chunks: NCCL chunking."
    )
    intra_node: Literal["aggregate", "step"] = Field(
        "aggregate", description="Intra-server rings: one flow per edge, or every step."
    )
    nvlink_step_latency_ns: float = Field(
        default=3400.0, ge=0.0, le=1e9, description="Latency per intra-node ring step, ns."
    )
    p2p_chunk_bytes: int | None = Field(
        default=None,
        ge=MIN_CHUNK_BYTES,
        le=1 << 50,
        description="Split send/recv into chunks of this many bytes; null: one flow.",
    )
    nccl_chunk_bytes: int = Field(
        default=NCCL_SIMPLE_CHUNK_BYTES,
        ge=MIN_CHUNK_BYTES,
        le=1 << 50,
        description="Ring chunk of the nccl_chunks granularity, bytes.",
    )
    tree_chunk_bytes: int = Field(
        default=NCCL_TREE_CHUNK_BYTES,
        ge=MIN_CHUNK_BYTES,
        le=1 << 50,
        description="Pipelining chunk of the double binary tree, bytes.",
    )
