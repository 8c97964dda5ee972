"""``CollectiveSpec``: the ``collective:`` section of an experiment."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from wormsim.collective.algorithms import AUTO, TABLE, choices

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

_PRICED = " or ".join(a.name for a in TABLE if a.nccl_model and "allreduce" in a.collectives)


class CollectiveSpec(BaseModel):
    """How collectives become flows.

    Attributes
    ----------
    allreduce, allgather, reducescatter, alltoall : str
        The algorithm of each collective: ``auto`` (the NCCL-like selector, among the algorithms
        its cost model prices) or an algorithm of :data:`~wormsim.collective.algorithms.TABLE`
        that serves it (:func:`~wormsim.collective.algorithms.choices`).
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

    allreduce: Literal[choices("allreduce")] = Field(  # type: ignore[valid-type]
        AUTO, description=f"All-reduce algorithm; auto: NCCL-like selector ({_PRICED})."
    )
    allgather: Literal[choices("allgather")] = Field(  # type: ignore[valid-type]
        AUTO, description="All-gather algorithm."
    )
    reducescatter: Literal[choices("reducescatter")] = Field(  # type: ignore[valid-type]
        AUTO, description="Reduce-scatter algorithm."
    )
    alltoall: Literal[choices("alltoall")] = Field(  # type: ignore[valid-type]
        AUTO, description="All-to-all algorithm."
    )
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
