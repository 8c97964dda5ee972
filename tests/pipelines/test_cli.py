"""The `wormsim` command as a user drives it: outputs, and clean failures on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from .conftest import TINY, invoke

DATA = Path(__file__).resolve().parents[1] / "data"


def test_workload_build_show_and_collective(tmp_path, tiny):
    run = tmp_path / "run"
    r = invoke("workload", "build", tiny, "-o", run, "--set", "parallel.global_batch=8")
    assert r.exit_code == 0, r.output
    assert {p.name for p in run.iterdir()} >= {"experiment.yaml", "manifest.json", "ops.parquet"}
    resolved = yaml.safe_load((run / "experiment.yaml").read_text())
    assert resolved["parallel"]["global_batch"] == 8  # the override is what was run
    assert resolved["network"]["cc"] == "hpcc"  # defaults filled in
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["versions"]["wormsim"] and manifest["config_hash"]
    assert "workload" in manifest["stages"]
    r = invoke("workload", "show", run)
    assert r.exit_code == 0 and "bubble fraction" in r.output and "tp" in r.output
    r = invoke("collective", "expand", run)
    assert r.exit_code == 0, r.output
    dag = pl.read_parquet(run / "dag.parquet")
    assert (dag["kind"] == "flow").sum() > 0
    r = invoke("collective", "show", run)
    assert r.exit_code == 0 and "ring" in r.output


def test_aicb_import_and_export(tmp_path, tiny):
    run = tmp_path / "imported"
    r = invoke(
        "workload", "import", DATA / "aicb" / "gpt13b-128.txt", "--format", "aicb", "-o", run
    )
    assert r.exit_code == 0, r.output
    ops = pl.read_parquet(run / "ops.parquet")
    assert ops["rank"].n_unique() == 128
    assert not (run / "experiment.yaml").exists()  # no cluster given: ops only
    # with an experiment for the cluster and network, the import runs through the pipeline
    exp = tmp_path / "cluster.yaml"
    exp.write_text(yaml.safe_dump({"model": "gpt-13b", "cluster": {"gpus": 128}}))
    run2 = tmp_path / "imported2"
    r = invoke(
        "workload", "import", DATA / "aicb" / "gpt13b-128.txt", "-o", run2, "--experiment", exp
    )
    assert r.exit_code == 0, r.output
    resolved = yaml.safe_load((run2 / "experiment.yaml").read_text())
    assert (resolved["parallel"]["tp"], resolved["parallel"]["pp"]) == (8, 4)
    assert invoke("collective", "expand", run2).exit_code == 0
    r = invoke("netsim", "run", run2, "--mode", "flow")
    assert r.exit_code == 0, r.output
    assert json.loads((run2 / "summary.json").read_text())["iteration_time_s"] > 0
    bad = tmp_path / "imported3"
    exp.write_text(yaml.safe_dump({"model": "gpt-13b", "cluster": {"gpus": 64}}))
    r = invoke(
        "workload", "import", DATA / "aicb" / "gpt13b-128.txt", "-o", bad, "--experiment", exp
    )
    assert r.exit_code == 2 and not bad.exists()
    built = tmp_path / "built"
    assert invoke("workload", "build", tiny, "-o", built).exit_code == 0
    out = tmp_path / "w.txt"
    r = invoke("workload", "export", built, "--format", "aicb", "-o", out)
    assert r.exit_code == 0, r.output
    header = out.read_text().splitlines()[0].split()
    assert header[0] == "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
    assert header[header.index("model_parallel_NPU_group:") + 1] == "4"
    assert header[header.index("all_gpus:") + 1] == "16"


def test_pipeline_schema_and_validate(tiny):
    r = invoke("pipeline", "schema")
    assert r.exit_code == 0
    schema = json.loads(r.output)
    assert {"model", "parallel", "cluster", "network", "sim"} <= set(schema["properties"])
    r = invoke("pipeline", "validate", tiny)
    assert r.exit_code == 0 and "num_layers: 4" in r.output


BAD = [
    ({"model": "gpt-9000"}, "unknown model preset"),
    ({"parallel": {"tp": 3}}, "must divide model.num_heads"),
    ({"parallel": {"tp": 4, "pp": 2, "dp": 3, "global_batch": 6}}, "world size mismatch"),
    ({"model": {**TINY["model"], "hidden_size": -256}}, "model.hidden_size"),
    ({"parallel": {"tp": 4, "pp": 2, "global_batch": -4}}, "parallel.global_batch"),
    ({"parallel": {"tp": 4, "pp": 2, "tensor_parallel": 2}}, "unknown key"),
]


@pytest.mark.parametrize("change,message", BAD)
def test_bad_experiment_exit_2_nothing_written(tmp_path, change, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**TINY, **change}))
    run = tmp_path / "run"
    for cmd in (["workload", "build"], ["pipeline", "run"]):
        r = invoke(*cmd, path, "-o", run)
        assert r.exit_code == 2, r.output
        assert "error:" in r.output and "Traceback" not in r.output
        assert any(part in r.output for part in message.split("|")), r.output
        assert not run.exists()


def test_malformed_yaml_and_missing_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model: {num_layers: 4\n")
    run = tmp_path / "run"
    r = invoke("workload", "build", path, "-o", run)
    assert r.exit_code == 2 and "malformed YAML" in r.output and not run.exists()
    r = invoke("workload", "build", tmp_path / "nope.yaml", "-o", run)
    assert r.exit_code == 2 and "not found" in r.output and not run.exists()
    r = invoke("workload", "show", tmp_path)
    assert r.exit_code == 2 and "ops.parquet" in r.output


def test_pipeline_run_packet_mode(tmp_path, tiny):
    run = tmp_path / "run"
    r = invoke("pipeline", "run", tiny, "-o", run)
    assert r.exit_code == 0, r.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["mode"] == "packet" and summary["iteration_time_s"] > 0
    assert summary["events_processed"] > 0
    flows = pl.read_parquet(run / "flows.parquet")
    nodes = pl.read_parquet(run / "nodes.parquet")
    assert (flows["finish_ps"] > flows["start_ps"]).all()
    assert (nodes["finish_ps"] >= nodes["start_ps"]).all()
    assert nodes["finish_ps"].max() / 1e12 == pytest.approx(summary["iteration_time_s"])
    assert "Where the time goes" in r.output


def test_netsim_rerun_with_monitors_and_flow_mode(tmp_path, tiny):
    run = tmp_path / "run"
    assert invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow").exit_code == 0
    flow_summary = json.loads((run / "summary.json").read_text())
    assert flow_summary["mode"] == "flow"
    r = invoke("netsim", "run", run, "--mode", "packet", "--monitor-period-ns", "2000")
    assert r.exit_code == 0, r.output
    queues = pl.read_parquet(run / "queue_samples.parquet")
    rates = pl.read_parquet(run / "rate_samples.parquet")
    assert queues.height > 0 and rates.height > 0
    buffer_bytes = 32 * 2**20  # network.buffer_size_mb default, shared per switch
    assert queues["bytes"].max() <= buffer_bytes
    assert (rates["rate_bps"] <= 100e9 * 1.0001).all()
    packet_summary = json.loads((run / "summary.json").read_text())
    # uncongested tiny job: the fluid model and the packets agree on the iteration time
    assert flow_summary["iteration_time_s"] == pytest.approx(
        packet_summary["iteration_time_s"], rel=0.05
    )


def test_pipeline_run_wormhole_mode_reports_its_counters(tmp_path, tiny):
    run = tmp_path / "run"
    r = invoke("pipeline", "run", tiny, "-o", run, "--mode", "wormhole")
    assert r.exit_code == 0, r.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["mode"] == "wormhole"
    for key in (
        "bytes_skipped",
        "skips",
        "skip_backs",
        "steady_entries",
        "partitions_formed",
        "events_skipped_estimate",
        "memo_hits",
        "memo_misses",
    ):
        assert key in summary, key
    packet = tmp_path / "packet"
    assert invoke("pipeline", "run", tiny, "-o", packet).exit_code == 0
    ref = json.loads((packet / "summary.json").read_text())
    assert summary["iteration_time_s"] == pytest.approx(ref["iteration_time_s"], rel=0.01)


def _wormhole_with_store(tiny, run, store):
    return invoke(
        "pipeline", "run", tiny, "-o", run, "--mode", "wormhole", "--set",
        f"sim.wormhole.memo_path={store}",
    )  # fmt: skip


def test_pipeline_wormhole_uses_and_records_its_memo_store(tmp_path, tiny):
    store = tmp_path / "memo.sqlite"
    runs = []
    for name in ("first", "second"):
        run = tmp_path / name
        r = _wormhole_with_store(tiny, run, store)
        assert r.exit_code == 0, r.output
        runs.append(json.loads((run / "summary.json").read_text()))
    assert runs[0]["memo_store"] == str(store) and store.exists()
    first = runs[0]
    looked_up = first["memo_hits"] + first["memo_misses"] + first["memo_rejected"]
    # every formed partition was looked up, or shadows an identical one of its tick
    shadowed = first["memo_parked"] + first["shadows_remapped"]
    assert looked_up + shadowed == first["partitions_formed"]
    assert runs[1]["memo_inserts"] <= runs[0]["memo_inserts"]  # the second run learns less
    r = invoke("memo", "stats", "--store", store)
    assert r.exit_code == 0 and "entries" in r.output


def test_pipeline_wormhole_with_a_foreign_memo_file_fails_cleanly(tmp_path, tiny):
    bad = tmp_path / "not_a_store.sqlite"
    bad.write_text("hello")
    r = _wormhole_with_store(tiny, tmp_path / "run", bad)
    assert r.exit_code == 2 and "memo" in r.output and "Traceback" not in r.output


def test_pipeline_memo_runs_are_reproducible_and_explicit(tmp_path, tiny, monkeypatch):
    """The store a run used and the state it started from are in summary.json; read-mode
    reruns on that state are identical; WORMSIM_MEMO_STORE is honoured by pipeline runs."""
    store = tmp_path / "env_store.sqlite"
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(store))
    first = tmp_path / "first"
    assert invoke("pipeline", "run", tiny, "-o", first, "--mode", "wormhole").exit_code == 0
    s1 = json.loads((first / "summary.json").read_text())
    assert s1["memo_store"] == str(store) and store.exists()
    assert s1["memo_mode"] == "readwrite" and len(s1["memo_fingerprint"]) == 16
    reads = []
    for name in ("read1", "read2"):
        run = tmp_path / name
        r = invoke(
            "pipeline", "run", tiny, "-o", run, "--mode", "wormhole",
            "--set", "sim.wormhole.memo_mode=read",
        )  # fmt: skip
        assert r.exit_code == 0, r.output
        reads.append(run)
    summaries = [json.loads((run / "summary.json").read_text()) for run in reads]
    assert summaries[0]["memo_fingerprint"] == summaries[1]["memo_fingerprint"]
    assert summaries[0]["memo_mode"] == "read"
    a, b = (pl.read_parquet(run / "flows.parquet") for run in reads)
    assert a.equals(b)
    off = tmp_path / "off"
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(tmp_path / "never.sqlite"))
    r = invoke(
        "pipeline", "run", tiny, "-o", off, "--mode", "wormhole",
        "--set", "sim.wormhole.memo_mode=off",
    )  # fmt: skip
    assert r.exit_code == 0 and not (tmp_path / "never.sqlite").exists()
    assert "memo_fingerprint" not in json.loads((off / "summary.json").read_text())
