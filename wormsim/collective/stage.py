"""The collective stage over a run directory: ``ops.parquet`` in, ``dag.parquet`` out.

:func:`stage_collective` expands the workload's ops into the flow DAG, writes it atomically,
removes the netsim outputs (they described the previous DAG) and records its wall time in
``manifest.json``; :func:`read_dag` is how netsim reads it, checked against
:data:`wormsim.collective.dag.DAG_SCHEMA`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import polars as pl

from wormsim.progress import staged
from wormsim.rundir import Manifest, Stopwatch, drop_downstream, read_table, write_parquet
from wormsim.workload.stage import read_ops

from .config import CollectiveSpec
from .dag import DAG_SCHEMA
from .expand import expand_dag

__all__ = ["DAG_FILE", "CollectiveSections", "stage_collective", "read_dag"]

#: The collective stage's table in a run directory.
DAG_FILE = "dag.parquet"

_HOW = "wormsim collective expand"


class _Servers(Protocol):
    @property
    def gpus(self) -> int: ...

    @property
    def gpus_per_node(self) -> int: ...


class CollectiveSections(Protocol):
    """The sections of an experiment the collective stage reads (an ``ExperimentConfig`` has them).

    Attributes
    ----------
    cluster
        Anything with ``gpus`` and ``gpus_per_node`` (the server layout; no link rates).
    collective
        How collectives become flows.
    """

    @property
    def cluster(self) -> _Servers: ...

    @property
    def collective(self) -> CollectiveSpec: ...


@staged("collective: expanding into flows")
def stage_collective(run_dir: Path, cfg: CollectiveSections) -> pl.DataFrame:
    """Expand ``ops.parquet`` of ``run_dir`` into ``dag.parquet``.

    Parameters
    ----------
    run_dir : Path
        A run directory with ``ops.parquet``; its netsim outputs are removed.
    cfg : CollectiveSections
        The experiment (its ``cluster.gpus_per_node``, ``cluster.gpus`` and ``collective``).

    Returns
    -------
    polars.DataFrame
        The DAG, as written.
    """
    ops = read_ops(run_dir)
    with Stopwatch() as sw:
        dag = expand_dag(ops, (cfg.cluster.gpus_per_node, cfg.cluster.gpus), cfg.collective)
        write_parquet(Path(run_dir) / DAG_FILE, dag)
    drop_downstream(run_dir, "collective")
    man = Manifest(run_dir)
    n_flows = int((dag["kind"] == "flow").sum())
    man.stage("collective", sw.seconds, nodes=dag.height, flows=n_flows)
    man.save()
    return dag


def read_dag(run_dir: Path) -> pl.DataFrame:
    """``dag.parquet`` of a run directory, checked against its contract.

    Raises
    ------
    ConfigError
        The run directory has no ``dag.parquet``.
    UnreadableFileError
        The file is damaged or does not follow :data:`~wormsim.collective.dag.DAG_SCHEMA`.
    """
    return read_table(run_dir, DAG_FILE, _HOW, schema=DAG_SCHEMA)
