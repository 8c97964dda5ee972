"""Per-collective statistics of a DAG (for ``wormsim collective show``)."""

from __future__ import annotations

import polars as pl

__all__ = ["collective_summary"]


def collective_summary(
    dag: pl.DataFrame, gpus_per_node: int, ops: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Summarise a DAG per group x collective x algorithm.

    Parameters
    ----------
    dag : polars.DataFrame
        A ``dag.parquet`` table.
    gpus_per_node : int
        Server of rank ``r`` is ``r // gpus_per_node`` (for bytes leaving servers).
    ops : polars.DataFrame, optional
        The ops table the DAG came from; gives exact instance counts (distinct ``coll_id``).
        Without it ``instances`` is null.

    Returns
    -------
    polars.DataFrame
        ``group, collective, algorithm, ops, instances, flows, total_bytes,
        inter_server_bytes``, sorted by ``total_bytes`` descending. ``ops`` counts the comm op
        nodes (one per member per instance); a send/recv pair is counted under ``send``.
    """
    keys = ["group", "collective", "algorithm"]
    comm_nodes = dag.filter(
        (pl.col("kind") == "delay")
        & (pl.col("node_id") == pl.col("op_id"))
        & (pl.col("collective") != "")
    ).with_columns(
        collective=pl.when(pl.col("collective") == "recv")
        .then(pl.lit("send"))
        .otherwise(pl.col("collective"))
    )
    op_counts = comm_nodes.group_by(keys).agg(ops=pl.len())
    flow_stats = (
        dag.filter(pl.col("kind") == "flow")
        .with_columns(inter=(pl.col("src") // gpus_per_node) != (pl.col("dst") // gpus_per_node))
        .group_by(keys)
        .agg(
            flows=pl.len(),
            total_bytes=pl.col("size_bytes").sum(),
            inter_server_bytes=pl.col("size_bytes").filter(pl.col("inter")).sum(),
        )
    )
    out = op_counts.join(flow_stats, on=keys, how="full", coalesce=True)
    if ops is not None:
        inst = (
            ops.filter(pl.col("kind") == "comm")
            .select("op_id", "coll_id")
            .join(comm_nodes.select("op_id", *keys), on="op_id")
            .group_by(keys)
            .agg(instances=pl.col("coll_id").n_unique())
        )
        out = out.join(inst, on=keys, how="left")
    else:
        out = out.with_columns(instances=pl.lit(None, dtype=pl.UInt32))
    return (
        out.with_columns(
            pl.col("ops", "flows").fill_null(0).cast(pl.Int64),
            pl.col("instances").cast(pl.Int64),
            pl.col("total_bytes", "inter_server_bytes").fill_null(0).cast(pl.Int64),
        )
        .select(*keys, "ops", "instances", "flows", "total_bytes", "inter_server_bytes")
        .sort("total_bytes", *keys, descending=[True, False, False, False])
    )
