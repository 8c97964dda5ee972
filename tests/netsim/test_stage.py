"""The stages' run-directory steps as library calls, with no experiment file and no orchestrator.

Each step takes the sections it reads; any object with them will do (here a namespace of specs,
not an ``ExperimentConfig``), which is what lets the stages sit below the experiment layer.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from wormsim.collective.config import CollectiveSpec
from wormsim.collective.stage import DAG_FILE, read_dag, stage_collective
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.sim_spec import SimSpec
from wormsim.netsim.stage import (
    FLOWS_FILE,
    NODES_FILE,
    SUMMARY_FILE,
    read_node_times,
    stage_netsim,
)
from wormsim.rundir import STAGE_OUTPUTS
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.stage import OPS_FILE, read_ops, stage_workload


@pytest.fixture
def sections() -> SimpleNamespace:
    """The tiny experiment of the pipeline tests, as bare specs (flow mode: seconds)."""
    return SimpleNamespace(
        model=ModelSpec(num_layers=4, hidden_size=256, num_heads=8, vocab_size=64, seq_length=128),
        parallel=ParallelSpec(tp=4, pp=2, global_batch=4),
        hardware=HardwareSpec(),
        cluster=ClusterSpec(gpus=16, gpus_per_node=4),
        collective=CollectiveSpec(),
        network=NetworkSpec(),
        sim=SimSpec(mode="flow"),
    )


def test_the_steps_chain_without_the_experiment_layer(tmp_path, sections):
    ops = stage_workload(sections, tmp_path)
    dag = stage_collective(tmp_path, sections)
    summary = stage_netsim(tmp_path, sections)
    assert read_ops(tmp_path).equals(ops) and read_dag(tmp_path).equals(dag)
    assert summary["mode"] == "flow" and summary["nodes"] == dag.height
    start, finish = read_node_times(tmp_path)
    assert (finish >= start).all()
    assert finish.max() / 1e12 == pytest.approx(summary["iteration_time_s"])
    assert json.loads((tmp_path / SUMMARY_FILE).read_text()) == summary
    stages = json.loads((tmp_path / "manifest.json").read_text())["stages"]
    assert set(stages) == {"workload", "collective", "netsim"}
    assert stages["netsim"]["mode"] == "flow"

    stage_workload(sections, tmp_path)  # the DAG and its results described the old ops
    assert (tmp_path / OPS_FILE).exists()
    assert not [
        f for f in (DAG_FILE, NODES_FILE, FLOWS_FILE, SUMMARY_FILE) if (tmp_path / f).exists()
    ]
    assert set(json.loads((tmp_path / "manifest.json").read_text())["stages"]) == {"workload"}


def test_each_stage_table_is_in_the_run_directory_layout():
    assert STAGE_OUTPUTS["workload"] == (OPS_FILE,)
    assert STAGE_OUTPUTS["collective"] == (DAG_FILE,)
    assert {FLOWS_FILE, NODES_FILE, SUMMARY_FILE} <= set(STAGE_OUTPUTS["netsim"])
