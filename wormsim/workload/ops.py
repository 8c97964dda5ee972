"""The ops table: the contract between the workload and collective stages.

``ops.parquet`` holds, per rank and in schedule order, the compute and communication operations of
one training iteration. One row per (rank, op). A communication op appears once on every member
rank of its communicator, and all those rows share one ``coll_id``; members are the ranks of those
rows, in ascending order (Megatron builds groups in ascending global rank). A point-to-point
transfer is one ``coll_id`` with two rows: ``send`` on the sender and ``recv`` on the receiver,
each naming the other in ``peer``.

Sizes follow the α-β convention of nccl-tests: for all-reduce,
the buffer each rank holds; for all-gather and reduce-scatter, the full (gathered) buffer; for
all-to-all, the bytes each rank sends in total (``split_bytes`` gives the per-destination split,
one entry per member in member order, when it is uneven); for send/recv, the message.

An op may start when every op in ``deps`` (op ids, normally on the same rank) has finished. A
compute op runs on its rank's compute stream; communication ops run on the network.
"""

from __future__ import annotations

import polars as pl

__all__ = ["OPS_SCHEMA", "COLLECTIVES", "GROUPS", "PHASES", "empty_ops"]

#: Collective kinds an op may name.
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall", "send", "recv")
#: Communicator kinds (Megatron names): tp, cp, ep, dp, pp (also the first/last-stage embedding
#: group), dp_cp (DDP gradients with CP), edp (expert data parallel), etp (expert tensor parallel).
GROUPS = ("tp", "cp", "ep", "dp", "pp", "dp_cp", "edp", "etp")
#: Iteration phases.
PHASES = ("fwd", "bwd", "step")

#: Column name -> polars dtype of ``ops.parquet``.
OPS_SCHEMA: dict[str, pl.DataType] = {
    "op_id": pl.Int64,  # dense 0..n-1; also the DAG node id of the op
    "rank": pl.Int32,
    "seq": pl.Int32,  # position in the rank's schedule
    "kind": pl.Utf8,  # "compute" | "comm"
    "name": pl.Utf8,  # e.g. "attn_fwd", "tp_attn_out", "pp_fwd", "dp_grad_bucket"
    "phase": pl.Utf8,  # "fwd" | "bwd" | "step"
    "stage": pl.Int32,  # pipeline stage of the rank
    "chunk": pl.Int32,  # virtual pipeline chunk (0 without interleaving)
    "layer": pl.Int32,  # global layer index, -1 when not per layer
    "microbatch": pl.Int32,  # -1 when not per micro-batch
    "duration_ps": pl.Int64,  # compute ops; 0 for comm
    "flops": pl.Float64,  # compute ops; 0 for comm
    "collective": pl.Utf8,  # one of COLLECTIVES for comm ops, "" for compute
    "group": pl.Utf8,  # one of GROUPS for comm ops, "" for compute
    "coll_id": pl.Int64,  # shared by all member rows of one collective instance; -1 for compute
    "peer": pl.Int32,  # send/recv: the other rank; -1 otherwise
    "size_bytes": pl.Int64,
    "split_bytes": pl.List(pl.Int64),  # all-to-all with an uneven split; null otherwise
    "deps": pl.List(pl.Int64),
}


def empty_ops() -> pl.DataFrame:
    """Return an empty ops table with the contract's schema."""
    return pl.DataFrame(schema=OPS_SCHEMA)
