"""The idle-fabric replay: each instance on a fresh fabric, placement-identical ones shared."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

import wormsim
from tests.pipelines.conftest import TINY
from wormsim.analysis.breakdown import op_intervals
from wormsim.analysis.collectives import (
    _chained_dag,
    alone_dags,
    alone_durations,
    collective_table,
)
from wormsim.analysis.report import AloneRunner, _trace_intervals, alone_runner
from wormsim.analysis.run_data import RunData, load_run
from wormsim.collective.dag import DagArrays, dag_to_arrays
from wormsim.experiment.config import load_experiment
from wormsim.netsim.common.flow_plan import plan_flows
from wormsim.netsim.fabric import builders


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunData, object, pl.DataFrame]:
    """The tiny experiment in packet mode (HPCC): its run, config and collective table."""
    out = tmp_path_factory.mktemp("alone") / "run"
    wormsim.run(TINY, mode="packet", out=out, alone=False)
    run = load_run(out)
    cfg = load_experiment(out / "experiment.yaml")
    start, finish = run.nodes["start_ps"].to_numpy(), run.nodes["finish_ps"].to_numpy()
    colls = collective_table(
        run.ops, run.dag, _trace_intervals(op_intervals(run.ops, start, finish), run)
    )
    return run, cfg, colls


class _Counted:
    """An :class:`AloneRunner`'s simulation, counting its calls."""

    def __init__(self, runner: AloneRunner) -> None:
        self.runner, self.calls = runner, 0

    def __call__(self, dag: DagArrays) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        return self.runner.run(dag)


def _alone(
    run: RunData, colls: pl.DataFrame, runner: AloneRunner, shared: bool
) -> tuple[dict, int]:
    sim = _Counted(runner)
    res = alone_durations(colls, run.ops, run.dag, sim, runner.key if shared else None)
    return dict(res.iter_rows()), sim.calls


def _instance_key(run: RunData, runner: AloneRunner, coll_id: int) -> object:
    assert runner.key is not None
    return runner.key(alone_dags(run.dag, run.ops, [coll_id])[0])


def test_instance_dags_from_one_pass_equal_each_instance_cut_out_alone(tiny_run):
    run, _, colls = tiny_run
    chosen = colls.sort("coll_id")["coll_id"].to_list()
    got = alone_dags(run.dag, run.ops, chosen)
    assert len(got) == len(chosen)
    for c, dag in zip(chosen, got, strict=True):
        alone = dag_to_arrays(_chained_dag(run.dag, run.ops, [c]).drop("k"))
        for field in dataclasses.fields(DagArrays):
            x, y = getattr(dag, field.name), getattr(alone, field.name)
            assert (x is None) == (y is None), (c, field.name)
            if x is not None:  # same values, dtype and order (children, connection ids)
                assert x.dtype == y.dtype and np.array_equal(x, y), (c, field.name)
        assert dag.dep_count[-1] == 0  # the gate waits for nothing: the instance is alone


def test_shared_replays_equal_a_fresh_replay_of_every_instance(tiny_run):
    run, cfg, colls = tiny_run
    runner = alone_runner(cfg, "packet")
    shared, n_shared = _alone(run, colls, runner, shared=True)
    every, n_every = _alone(run, colls, runner, shared=False)
    assert shared == every  # bit for bit
    assert 0 < n_shared < n_every  # placement-identical instances exist and share a replay
    assert set(shared) == set(colls["coll_id"].to_list())


def _twins(run: RunData, cfg: object, colls: pl.DataFrame) -> tuple[int, int]:
    """Two distinct instances with fabric flows that share a key (different member ranks)."""
    runner = alone_runner(cfg, "packet")
    topo = builders.build_topology(cfg.cluster)
    seen: dict[object, int] = {}
    for c in colls.filter(pl.col("flows_count") > 0).sort("coll_id")["coll_id"].to_list():
        dag = alone_dags(run.dag, run.ops, [c])[0]
        plan = plan_flows(dag, topo, routing=cfg.sim.routing, seed=cfg.sim.seed)
        if plan.n_qps > 0:
            k = _instance_key(run, runner, c)
            if k in seen and colls.filter(pl.col("coll_id") == seen[k])["ranks"].to_list() != (
                colls.filter(pl.col("coll_id") == c)["ranks"].to_list()
            ):
                return seen[k], c
            seen.setdefault(k, c)
    raise AssertionError("no placement-identical instances with fabric flows")


@pytest.mark.parametrize("field", ["port_delay_ps", "port_rate_bps"])
def test_instances_that_differ_in_a_port_do_not_share_a_replay(tiny_run, monkeypatch, field):
    run, cfg, colls = tiny_run
    a, b = _twins(run, cfg, colls)
    topo = builders.build_topology(cfg.cluster)
    dag_a, dag_b = alone_dags(run.dag, run.ops, [a, b])
    used = []
    for d in (dag_a, dag_b):
        plan = plan_flows(d, topo, routing=cfg.sim.routing, seed=cfg.sim.seed)
        used.append(set(plan.r_ports.tolist()))
    port = min(used[1] - used[0])  # on b's routes only
    values = getattr(topo, field).copy()
    values[port] = values[port] * 3 // 2
    changed = dataclasses.replace(topo, **{field: values})
    monkeypatch.setattr(builders, "build_topology", lambda _cluster: changed)
    runner = alone_runner(cfg, "packet")
    assert _instance_key(run, runner, a) != _instance_key(run, runner, b)
    twins = colls.filter(pl.col("coll_id").is_in([a, b]))
    shared, n_shared = _alone(run, twins, runner, shared=True)
    every, _ = _alone(run, twins, runner, shared=False)
    assert n_shared == 2
    assert shared == every
    assert shared[a] != shared[b]  # the port matters


def test_an_instance_alone_does_not_depend_on_what_else_is_replayed(tiny_run):
    run, cfg, colls = tiny_run
    runner = alone_runner(cfg, "packet")
    a, b = _twins(run, cfg, colls)
    others = colls.filter(pl.col("flows_count") > 0, ~pl.col("coll_id").is_in([a, b]))
    first = int(others["coll_id"].min())  # replayed before b
    for shared in (False, True):
        by_itself, _ = _alone(run, colls.filter(pl.col("coll_id") == b), runner, shared)
        with_other, _ = _alone(
            run, colls.filter(pl.col("coll_id").is_in([first, b])), runner, shared
        )
        with_twin, _ = _alone(run, colls.filter(pl.col("coll_id").is_in([a, b])), runner, shared)
        assert by_itself[b] == with_other[b] == with_twin[b]
