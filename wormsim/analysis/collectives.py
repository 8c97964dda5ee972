"""One row per collective instance: what it moved, how long it took, and how fast it would go
alone.

An instance (one ``coll_id`` of ``ops.parquet``; a send/recv pair is one instance of kind
``sendrecv``) *starts* at its sync point, when its last member is ready (a pair: when the send is
ready; see :func:`~wormsim.analysis.breakdown.op_intervals`), and *ends* when it is done on its
last member (a pair: when the send is done, its flow acknowledged). A ring across servers may run
its first steps before its last member is ready, so its duration, and its slowdown, can come out
slightly below the alone figure.

Bandwidths follow nccl-tests: ``algbw = size / duration`` with ``size`` as in ``ops.parquet``
(all-reduce: the buffer per rank; all-gather and reduce-scatter: the full buffer; all-to-all:
the bytes each rank sends), and ``busbw = algbw × factor`` (:data:`BUSBW_FACTOR`), which is the
link rate a bandwidth-optimal algorithm needs.

*Alone on an idle fabric* (:func:`alone_durations`) replays each distinct instance by itself:
its flows, gates and completion nodes, cut off from the rest of the DAG, in a simulation of its
own on a fresh fabric with the same engine, so ``slowdown = duration / alone`` isolates what
contention with the rest of the iteration cost. Instances with the same kind, group members,
size, algorithm and flows are replayed once, and so are instances that are the same up to
placement (:mod:`~wormsim.analysis.alone_key`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
import polars as pl

from wormsim.collective.dag import DagArrays, connection_ids, dag_to_arrays
from wormsim.units import BYTES_PER_US_PER_GB_PER_S_F, PS_PER_US_F

__all__ = ["BUSBW_FACTOR", "busbw_factor", "collective_table", "alone_durations"]


def _ar(n: int) -> float:
    return 2.0 * (n - 1) / n if n > 1 else 0.0


def _gather(n: int) -> float:
    return (n - 1) / n if n > 1 else 0.0


#: Kind -> nccl-tests bus-bandwidth factor as a function of the member count.
BUSBW_FACTOR: dict[str, Callable[[int], float]] = {
    "allreduce": _ar,
    "allgather": _gather,
    "reducescatter": _gather,
    "alltoall": _gather,
    "sendrecv": lambda n: 1.0,
}


def busbw_factor(kind: str, n: int) -> float:
    """nccl-tests' factor: all-reduce ``2(n-1)/n``; all-gather, reduce-scatter and all-to-all
    ``(n-1)/n``; send/recv 1."""
    return BUSBW_FACTOR.get(kind, lambda n: 1.0)(n)


def _flow_facts(dag: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Per coll_id: algorithm, channels, flows and their bytes (from the DAG's flow nodes)."""
    flows = (  # the columns it reads filtered, not the whole DAG
        dag.select("kind", "op_id", "algorithm", "channel", "size_bytes")
        .filter(pl.col("kind") == "flow")
        .drop("kind")
    )
    return (
        flows.join(ops.select("op_id", "coll_id"), on="op_id", how="inner")
        .group_by("coll_id")
        .agg(
            pl.col("algorithm").filter(pl.col("algorithm") != "").first().alias("algorithm"),
            pl.col("channel").filter(pl.col("channel") >= 0).n_unique().alias("channels_count"),
            pl.len().alias("flows_count"),
            pl.col("size_bytes").sum().alias("flow_bytes"),
        )
    )


def collective_table(ops: pl.DataFrame, dag: pl.DataFrame, intervals: pl.DataFrame) -> pl.DataFrame:
    """The per-instance table (without the idle-fabric columns; see :func:`add_alone`).

    Parameters
    ----------
    ops, dag : ``ops.parquet`` and ``dag.parquet`` of the run.
    intervals : :func:`~wormsim.analysis.breakdown.op_intervals` of the run.

    Returns
    -------
    polars.DataFrame
        ``coll_id, collective, group, phase, layer, microbatch, ranks, ranks_count,
        algorithm, channels_count, flows_count, size_bytes, flow_bytes, start_ps, end_ps,
        duration_us, algbw_GBps, busbw_GBps``, ordered by start.
    """
    comm = intervals.filter(pl.col("kind") == "comm").join(
        ops.select("op_id", "size_bytes", "layer", "microbatch"), on="op_id"
    )
    kind = (
        pl.when(pl.col("collective").is_in(["send", "recv"]))
        .then(pl.lit("sendrecv"))
        .otherwise(pl.col("collective"))
    )
    table = (
        comm.with_columns(kind.alias("kind_"))
        .group_by("coll_id")
        .agg(
            pl.col("kind_").first().alias("collective"),
            pl.col("group").first(),
            pl.col("phase").first(),
            pl.col("layer").first(),
            pl.col("microbatch").first(),
            pl.col("rank").unique().sort().alias("ranks"),
            pl.col("size_bytes").max(),
            # a pair is its transfer: from the send ready to the send done (the flow's ACK;
            # the receive's done node also waits for the receiver); a collective runs from
            # its last member ready to its last member done
            pl.col("sync_ps").filter(pl.col("collective") != "recv").max().alias("start_ps"),
            pl.col("end_ps").filter(pl.col("collective") != "recv").max(),
        )
        .join(_flow_facts(dag, ops), on="coll_id", how="left")
        .with_columns(
            pl.col("ranks").list.len().cast(pl.Int64).alias("ranks_count"),
            pl.col("algorithm").fill_null(""),
            pl.col("channels_count").fill_null(0).cast(pl.Int64),
            pl.col("flows_count").fill_null(0).cast(pl.Int64),
            pl.col("flow_bytes").fill_null(0),
            ((pl.col("end_ps") - pl.col("start_ps")) / PS_PER_US_F).alias("duration_us"),
        )
    )
    factor = [
        busbw_factor(k, n) for k, n in zip(table["collective"], table["ranks_count"], strict=True)
    ]
    algbw = pl.when(pl.col("duration_us") > 0).then(
        pl.col("size_bytes") / pl.col("duration_us") / BYTES_PER_US_PER_GB_PER_S_F
    )
    return (
        table.with_columns(algbw.alias("algbw_GBps"))
        .with_columns((pl.col("algbw_GBps") * pl.Series(factor)).alias("busbw_GBps"))
        .select(
            "coll_id",
            "collective",
            "group",
            "phase",
            "layer",
            "microbatch",
            "ranks",
            "ranks_count",
            "algorithm",
            "channels_count",
            "flows_count",
            "size_bytes",
            "flow_bytes",
            "start_ps",
            "end_ps",
            "duration_us",
            "algbw_GBps",
            "busbw_GBps",
        )
        .sort("start_ps", "coll_id")
    )


def _signature(table: pl.DataFrame) -> pl.Series:
    """Instances that expand to the same flows get the same key."""
    return table.select(
        pl.concat_str(
            [
                pl.col("collective"),
                pl.col("ranks").cast(pl.List(pl.String)).list.join(","),
                pl.col("size_bytes").cast(pl.String),
                pl.col("algorithm"),
                pl.col("flows_count").cast(pl.String),
                pl.col("flow_bytes").cast(pl.String),
            ],
            separator="|",
        )
    ).to_series()


def _chained_dag(dag: pl.DataFrame, ops: pl.DataFrame, chosen: list[int]) -> pl.DataFrame:
    """The chosen instances' nodes, each instance behind a gate that waits for the previous one.

    Node ids: the instances' nodes first (instance by instance, column ``k`` = its position in
    ``chosen``), then one gate per instance (id ``n_body + k``). A node keeps the deps inside its
    instance; one with none waits for its instance's gate.
    """
    order = pl.DataFrame({"coll_id": chosen, "k": list(range(len(chosen)))})
    op_k = ops.select("op_id", "coll_id").join(order, on="coll_id", how="inner")
    body = (
        dag.join(op_k.select("op_id", "k"), on="op_id", how="inner")
        .sort("k", "node_id")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("new_id"))
    )
    n_body = body.height
    remap = body.select(pl.col("node_id").alias("deps"), "k", pl.col("new_id").alias("new_dep"))
    inner = (
        body.select("new_id", "k", "deps")
        .explode("deps")
        .join(remap, on=["deps", "k"], how="left")  # deps on another instance are cut
        .group_by("new_id")
        .agg(pl.col("new_dep").drop_nulls())
    )
    body = (
        body.join(inner, on="new_id", how="left")
        .with_columns(
            pl.when(pl.col("new_dep").list.len() > 0)
            .then(pl.col("new_dep"))
            .otherwise(pl.concat_list(pl.col("k").cast(pl.Int64) + n_body))
            .alias("deps"),
            (pl.col("node_id") == pl.col("op_id")).alias("is_done"),
            pl.col("new_id").alias("node_id"),
        )
        .sort("node_id")
    )
    prev_done = body.filter("is_done").group_by("k").agg(pl.col("node_id").alias("deps"))
    gates = (
        order.select("k")
        .join(prev_done.with_columns(pl.col("k") + 1), on="k", how="left")
        .sort("k")
        .with_columns(
            (pl.col("k").cast(pl.Int64) + n_body).alias("node_id"),
            pl.col("deps").fill_null([]).cast(pl.List(pl.Int64)),
        )
    )
    fixed = {
        "kind": pl.lit("delay"),
        "size_bytes": pl.lit(0, pl.Int64),
        "duration_ps": pl.lit(0, pl.Int64),
        "step": pl.lit(-1, pl.Int32),
        "channel": pl.lit(-1, pl.Int32),
    }
    gate_cols = [
        pl.col(c) if c in ("node_id", "deps") else fixed.get(c, pl.lit(-1)).alias(c)
        for c in dag.columns
        if dag.schema[c] != pl.String or c == "kind"
    ]
    strings = [
        pl.lit("").alias(c) for c in dag.columns if dag.schema[c] == pl.String and c != "kind"
    ]
    gate_rows = gates.select(*gate_cols, *strings, "k").select(*dag.columns, "k")
    body = body.select(*dag.columns, "k")
    return pl.concat([body, gate_rows.cast(body.schema)])


def alone_dags(dag: pl.DataFrame, ops: pl.DataFrame, chosen: list[int]) -> list[DagArrays]:
    """Each chosen instance as a DAG of its own, from one pass over the run's DAG.

    Instance ``chosen[k]`` gives what ``dag_to_arrays(_chained_dag(dag, ops, [chosen[k]]))``
    gives (its nodes, then its gate, which waits for nothing), array for array; building each
    from the whole DAG would cost a pass over it per instance (minutes at 1,024 GPUs).
    """
    if not chosen:
        return []
    chained = _chained_dag(dag, ops, chosen)
    n_inst = len(chosen)
    n_body = chained.height - n_inst
    # the gates wait for nothing: each instance is alone
    loose = chained.with_columns(
        pl.when(pl.col("node_id") >= n_body)
        .then(pl.lit([], pl.List(pl.Int64)))
        .otherwise(pl.col("deps"))
        .alias("deps")
    )
    whole = dag_to_arrays(loose.drop("k"))
    conn = connection_ids(loose, whole.kind, within="k")
    k = loose["k"].to_numpy()
    starts = np.searchsorted(k[:n_body], np.arange(n_inst + 1))
    c_off, c_idx = whole.child_offsets, whole.child_index
    n_children_all = np.diff(c_off)
    out = []
    for i in range(n_inst):
        lo, hi, gate = int(starts[i]), int(starts[i + 1]), n_body + i
        rows = np.r_[lo:hi, gate]

        def take(a: np.ndarray, rows: np.ndarray = rows) -> np.ndarray:
            return np.ascontiguousarray(a[rows])

        offsets = np.zeros(rows.size + 1, np.int64)
        np.cumsum(n_children_all[rows], out=offsets[1:])
        children = np.concatenate(
            (c_idx[c_off[lo] : c_off[hi]], c_idx[c_off[gate] : c_off[gate + 1]])
        )
        out.append(
            DagArrays(
                kind=take(whole.kind),
                src=take(whole.src),
                dst=take(whole.dst),
                rank=take(whole.rank),
                size_bytes=take(whole.size_bytes),
                duration_ps=take(whole.duration_ps),
                dep_count=take(whole.dep_count),
                child_offsets=offsets,
                child_index=(children - lo).astype(np.int64),  # a gate is nobody's child
                connection=None if conn is None else take(conn),
            )
        )
    return out


def alone_durations(
    table: pl.DataFrame,
    ops: pl.DataFrame,
    dag: pl.DataFrame,
    run_alone: Callable[[DagArrays], tuple[np.ndarray, np.ndarray]],
    key: Callable[[DagArrays], Hashable] | None = None,
) -> pl.DataFrame:
    """Every instance's duration alone on an idle fabric.

    Each distinct instance is simulated by itself on a fresh fabric; instances whose DAGs have
    the same ``key`` share one simulation.

    Parameters
    ----------
    table : :func:`collective_table`.
    ops, dag : the run's tables.
    run_alone : simulates an instance's DAG (:func:`alone_dags`) on the run's fabric with the
        run's engine and returns ``(node_start_ps, node_finish_ps)``.
    key : an instance DAG's key (:func:`~wormsim.analysis.alone_key.alone_key`): DAGs with equal
        keys must finish at the same times under ``run_alone``. ``None``: every distinct
        instance is simulated.

    Returns
    -------
    polars.DataFrame
        ``coll_id, alone_us`` for every instance of ``table``.
    """
    if table.height == 0:
        return pl.DataFrame(schema={"coll_id": pl.Int64, "alone_us": pl.Float64})
    keyed = table.select("coll_id", "flows_count").with_columns(_signature(table).alias("sig"))
    reps = (
        keyed.filter(pl.col("flows_count") > 0)
        .group_by("sig")
        .agg(pl.col("coll_id").min().alias("rep"))
    )
    chosen = reps.sort("rep")["rep"].to_list()
    done: dict[Hashable, float] = {}
    values = []
    for c, alone_dag in zip(chosen, alone_dags(dag, ops, chosen), strict=True):
        k = c if key is None else key(alone_dag)
        if k not in done:
            _, finish = run_alone(alone_dag)
            gate = alone_dag.n_nodes - 1  # the instance's gate, after its nodes
            done[k] = float((finish[:gate].max() - finish[gate]) / PS_PER_US_F)
        values.append(done[k])
    alone = pl.DataFrame(
        {"rep": chosen, "alone_us": values}, schema={"rep": pl.Int64, "alone_us": pl.Float64}
    )
    return (
        keyed.join(reps, on="sig", how="left")
        .join(alone, on="rep", how="left")
        .select("coll_id", pl.col("alone_us").fill_null(0.0))
    )
