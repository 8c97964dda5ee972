"""Everything a finished pipeline run left in its directory, read once for the reports.

:func:`load_run` reads ``ops.parquet``, ``dag.parquet``, ``nodes.parquet``, ``flows.parquet``,
``ports.parquet``, ``summary.json``, ``manifest.json`` and the text of ``experiment.yaml`` into a
:class:`RunData`; a missing or damaged file is a :class:`~wormsim.errors.WormsimError` that names
it and the command that writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wormsim.collective.stage import read_dag
from wormsim.netsim.stage import FLOWS_FILE, NODES_FILE, PORTS_FILE, SUMMARY_FILE
from wormsim.rundir import MANIFEST_FILE, read_json, read_table, require_file
from wormsim.workload.stage import read_ops

__all__ = ["RunData", "load_run", "NODE_COLUMNS"]

_NETSIM = "wormsim netsim run"
#: The columns of ``nodes.parquet`` a :class:`RunData` holds.
NODE_COLUMNS = ("node_id", "start_ps", "finish_ps")


@dataclass(frozen=True)
class RunData:
    """The tables and documents of one pipeline run directory.

    Attributes
    ----------
    run_dir : Path
    ops, dag, nodes, flows, ports : polars.DataFrame
        The stage outputs (see ``docs/formats.md``); of ``nodes.parquet`` only
        :data:`NODE_COLUMNS` (its other columns repeat ``dag``'s).
    summary, manifest : dict
        ``summary.json`` and ``manifest.json``.
    experiment_yaml : str
        The resolved experiment as the run recorded it.
    """

    run_dir: Path
    ops: pl.DataFrame
    dag: pl.DataFrame
    nodes: pl.DataFrame
    flows: pl.DataFrame
    ports: pl.DataFrame
    summary: dict[str, Any]
    manifest: dict[str, Any]
    experiment_yaml: str

    @property
    def iteration_ps(self) -> int:
        """Simulated iteration time (ps): the latest node finish."""
        return int(self.nodes["finish_ps"].max() or 0)

    @property
    def mode(self) -> str:
        """The engine that ran (``packet``, ``wormhole``, ``flow``)."""
        return str(self.summary.get("mode", "?"))


def _int(*cols: str) -> dict[str, pl.DataType]:
    return {c: pl.Int64 for c in cols}


def load_run(run_dir: Path) -> RunData:
    """Read a finished pipeline run (all stages, netsim included).

    Raises
    ------
    ConfigError, UnreadableFileError
        A stage output is missing (the message says which command writes it) or damaged.
    """
    run_dir = Path(run_dir)
    exp = require_file(run_dir, "experiment.yaml", "wormsim pipeline run")
    return RunData(
        run_dir=run_dir,
        ops=read_ops(run_dir),
        dag=read_dag(run_dir),
        nodes=read_table(  # the times only: the rest of nodes.parquet is the DAG's
            run_dir,
            NODES_FILE,
            _NETSIM,
            columns=list(NODE_COLUMNS),
            schema=_int(*NODE_COLUMNS),
        ),
        flows=read_table(
            run_dir,
            FLOWS_FILE,
            _NETSIM,
            schema=_int("flow_id", "size_bytes", "fct_ps", "ideal_fct_ps"),
        ),
        ports=read_table(
            run_dir,
            PORTS_FILE,
            _NETSIM,
            schema={**_int("port", "payload_bytes"), "tier": pl.String},
        ),
        summary=read_json(require_file(run_dir, SUMMARY_FILE, _NETSIM), _NETSIM),
        manifest=read_json(require_file(run_dir, MANIFEST_FILE, "wormsim pipeline run"), _NETSIM),
        experiment_yaml=exp.read_text(),
    )
