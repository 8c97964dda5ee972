"""Run directories that carry their inputs: a SimAI triple's run directory, moved elsewhere with
the original files deleted, reruns from its own experiment.yaml to the same iteration time; an
edited input is named by compare and makes a sweep run the point again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

import wormsim

from .conftest import TINY, invoke

DATA = Path(__file__).resolve().parents[1] / "data"
SIMAI = DATA / "simai"


def _manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def test_a_simai_run_reruns_anywhere_from_its_own_experiment(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("microAllReduce.txt", "Spectrum-X_128g_8gps_400Gbps_H100", "SimAI.conf"):
        shutil.copy(SIMAI / name, src / name)
    run = tmp_path / "run"
    r = invoke("pipeline", "run", "--workload", src / "microAllReduce.txt", "--topology",
               src / "Spectrum-X_128g_8gps_400Gbps_H100", "--config", src / "SimAI.conf",
               "-o", run, "--mode", "flow", "--no-alone")  # fmt: skip
    assert r.exit_code == 0, r.output
    exp = yaml.safe_load((run / "experiment.yaml").read_text())
    assert exp["cluster"]["topology_file"] == "inputs/Spectrum-X_128g_8gps_400Gbps_H100"
    assert exp["workload"]["file"] == "inputs/microAllReduce.txt"
    inputs = {i["field"]: i for i in _manifest(run)["inputs"]}
    assert set(inputs) == {"cluster.topology_file", "workload.file", "network"}
    assert all(i["copied"] and len(i["sha256"]) == 64 and i["size_bytes"] > 0
               for i in inputs.values())  # fmt: skip
    assert (run / "inputs" / "SimAI.conf").read_bytes() == (SIMAI / "SimAI.conf").read_bytes()
    first = json.loads((run / "summary.json").read_text())["iteration_time_s"]

    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(run, moved)
    shutil.rmtree(src)
    shutil.rmtree(run)
    again = tmp_path / "again"
    r = invoke("pipeline", "run", moved / "experiment.yaml", "-o", again, "--no-alone")
    assert r.exit_code == 0, r.output
    assert json.loads((again / "summary.json").read_text())["iteration_time_s"] == first
    assert _manifest(again)["config_hash"] == _manifest(moved)["config_hash"]

    # an input edited in a run directory is named by compare
    topo = moved / "inputs" / "Spectrum-X_128g_8gps_400Gbps_H100"
    topo.write_text(topo.read_text() + "\n")
    c = wormsim.compare(again, moved)
    assert any("cluster.topology_file" in x and "changed since the run" in x
               for x in c["inputs_diff"])  # fmt: skip
    r = invoke("analysis", "compare", again, moved)
    assert r.exit_code == 0 and "input: run B: cluster.topology_file" in r.output


def test_a_chakra_trace_is_copied_with_its_ranks(tmp_path: Path):
    trace = tmp_path / "trace"
    shutil.copytree(DATA / "chakra" / "all_reduce_8npus_1MB", trace)
    r = invoke("pipeline", "run", "--workload", trace / "all_reduce", "-o", tmp_path / "run",
               "--mode", "flow", "--no-alone")  # fmt: skip
    assert r.exit_code == 0, r.output
    run = tmp_path / "run"
    exp = yaml.safe_load((run / "experiment.yaml").read_text())
    assert exp["workload"] == {"file": "inputs/file/all_reduce", "format": "chakra",
                               "compute": "file", "placeholder": False}  # fmt: skip
    assert sorted(p.name for p in (run / "inputs" / "file").iterdir()) == [
        f"all_reduce.{i}.et" for i in range(8)
    ]
    shutil.rmtree(trace)
    r = invoke("pipeline", "run", run / "experiment.yaml", "-o", tmp_path / "again", "--no-alone")
    assert r.exit_code == 0, r.output
    times = [json.loads((d / "summary.json").read_text())["iteration_time_s"]
             for d in (run, tmp_path / "again")]  # fmt: skip
    assert times[0] == times[1]


def test_a_file_over_the_copy_limit_is_hashed_not_copied(tmp_path: Path, monkeypatch):
    from wormsim.experiment import inputs

    monkeypatch.setattr(inputs, "COPY_LIMIT_BYTES", 100)
    topo = SIMAI / "DCN+SingleToR_128g_8gps_400Gbps_H100"
    exp = {"cluster": {"topology_file": str(topo)}, "network": str(SIMAI / "SimAI.conf"),
           "model": {"num_layers": 2, "hidden_size": 256, "num_heads": 8, "vocab_size": 64,
                     "seq_length": 64},
           "parallel": {"tp": 8, "pp": 2, "global_batch": 8}, "sim": {"mode": "flow"}}  # fmt: skip
    wormsim.run(exp, out=tmp_path / "run", alone=False)
    rec = _manifest(tmp_path / "run")["inputs"][0]
    assert rec["copied"] is False and rec["file"] == rec["source"] and len(rec["sha256"]) == 64
    assert not (tmp_path / "run" / "inputs").exists()
    saved = yaml.safe_load((tmp_path / "run" / "experiment.yaml").read_text())
    assert Path(saved["cluster"]["topology_file"]).is_absolute()


def test_a_sweep_names_an_edited_input_and_runs_the_point_again(tmp_path: Path):
    topo = tmp_path / "topology.txt"
    base = {**TINY, "sim": {"mode": "flow"}}
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    assert invoke("topology", "export", tmp_path / "base.yaml", "-o", topo, "--format",
                  "hpcc").exit_code == 0  # fmt: skip
    exp = {**base, "cluster": {**base["cluster"], "topology_file": str(topo)}}
    spec = {"name": "s", "experiment": exp, "grid": {"network.cc": ["hpcc"]}}
    first = wormsim.sweep(spec, tmp_path / "out", jobs=1)
    assert first["status"].to_list() == ["ok"]
    topo.write_text(topo.read_text() + "\n")
    lines: list[str] = []
    from wormsim.pipelines.sweep import run_sweep

    again = run_sweep(spec, tmp_path / "out", jobs=1, echo=lines.append)
    assert again["reused"].to_list() == [False]
    assert any("cluster.topology_file" in x and "changed since the run" in x for x in lines)
