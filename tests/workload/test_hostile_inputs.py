"""Hostile AICB workload files: ``error: file:line …``, exit 2, nothing written; and the import of
a file with expert parallelism into an experiment that only gives the cluster and network."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.hostile import assert_rejected, invoke
from wormsim.experiment import import_experiment
from wormsim.workload.aicb import AicbFormatError, parse_aicb, read_aicb

REAL = Path(__file__).resolve().parents[1] / "data" / "aicb" / "gpt13b-128.txt"
HEADER = (
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 2 pp: 2 vpp: 1 ga: 1 "
    "all_gpus: 16 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 2621440.0"
)
ROWS = [
    "attention_layer\t-1\t10\tALLREDUCE\t64\t10\tALLREDUCE\t64\t10\tNONE\t0\t100",
    "mlp_moelayer\t-1\t10\tALLTOALL_EP\t4096\t10\tALLTOALL_EP\t4096\t10\tALLREDUCE_DP_EP\t64\t100",
]


def _write(tmp_path: Path, header: str = HEADER, rows: list[str] = ROWS) -> Path:
    path = tmp_path / "w.txt"
    path.write_text("\n".join([header, str(len(rows)), *rows]) + "\n")
    return path


def test_integral_float_header_values_are_read_as_integers(tmp_path):
    w = read_aicb(_write(tmp_path))
    assert w.pp_comm == 2621440 and isinstance(w.pp_comm, int)


@pytest.mark.parametrize(
    ("header", "rows", "line", "needle"),
    [
        (HEADER.replace("2621440.0", "2621440.5"), ROWS, 1, "not a whole number"),
        (HEADER.replace("2621440.0", "inf"), ROWS, 1, "not a whole number"),
        (HEADER.replace("all_gpus: 16", "all_gpus: 1000000000"), ROWS, 1, "over the limit"),
        (HEADER, [ROWS[0].replace("\t64\t10", "\t" + "1" + "0" * 30 + "\t10", 1), ROWS[1]], 3,
         "over the limit"),
        (HEADER, [ROWS[0].replace("-1\t10", "-1\t1e30", 1), ROWS[1]], 3, "fwd_compute"),
        (HEADER, [ROWS[0].replace("\t64\t10", "\t-5\t10", 1), ROWS[1]], 3, "must be >= 0"),
    ],
)  # fmt: skip
def test_bad_values_name_file_line_and_field(tmp_path, header, rows, line, needle):
    path = _write(tmp_path, header, rows)
    out = tmp_path / "run"
    msg = assert_rejected(invoke("workload", "import", path, "-o", out), needle, out=out)
    assert f"{path}:{line}:" in msg


def test_non_utf8_file_names_file_and_line(tmp_path):
    path = _write(tmp_path)
    path.write_bytes(path.read_bytes().replace(b"mlp_moelayer", b"mlp_\xe9layer"))
    out = tmp_path / "run"
    assert_rejected(invoke("workload", "import", path, "-o", out), f"{path}:4", "UTF-8", out=out)


def test_a_workload_beyond_the_op_limit_is_refused_before_expanding(tmp_path):
    header = HEADER.replace("all_gpus: 16", "all_gpus: 1048576")
    path = _write(tmp_path, header, ROWS * 4)
    out = tmp_path / "run"
    assert_rejected(invoke("workload", "import", path, "-o", out), "ops", "all_gpus", out=out)


def test_compute_beyond_the_time_range_is_refused(tmp_path):
    big = 1 << 50  # ns: three rows of this are past the simulated-time range
    rows = [f"mlp_layer\t-1\t{big}\tNONE\t0\t0\tNONE\t0\t0\tNONE\t0\t100"] * 3
    out = tmp_path / "run"
    r = invoke("workload", "import", _write(tmp_path, rows=rows), "-o", out)
    assert_rejected(r, "simulated time", "days", out=out)


def test_parse_errors_name_the_source():
    with pytest.raises(AicbFormatError, match=r"^mem\.txt:2: "):
        parse_aicb(HEADER + "\nmany\n", "mem.txt")


def test_expert_parallel_file_imports_with_only_cluster_and_network(tmp_path):
    exp = tmp_path / "cluster.yaml"
    exp.write_text(yaml.safe_dump({"cluster": {"gpus_per_node": 4}, "network": {"cc": "dcqcn"}}))
    path = _write(tmp_path)
    cfg = import_experiment(read_aicb(path), exp, source=str(path))
    assert cfg.cluster.gpus == 16 and cfg.network.cc == "dcqcn"
    assert (cfg.parallel.tp, cfg.parallel.pp, cfg.parallel.ep) == (2, 2, 2)
    assert cfg.model.is_moe and cfg.model.name == "aicb:w.txt"


def test_import_experiment_refuses_a_different_gpu_count(tmp_path):
    exp = tmp_path / "cluster.yaml"
    exp.write_text(yaml.safe_dump({"cluster": {"gpus": 64}}))
    with pytest.raises(ValueError, match="all_gpus 16 but the experiment's cluster.gpus is 64"):
        import_experiment(read_aicb(_write(tmp_path)), exp, source="w.txt")


def test_cli_import_of_an_expert_parallel_file_needs_only_the_cluster(tmp_path):
    exp = tmp_path / "cluster.yaml"
    exp.write_text(yaml.safe_dump({"cluster": {"gpus_per_node": 4}}))
    out = tmp_path / "run"
    r = invoke("workload", "import", _write(tmp_path), "-o", out, "--experiment", exp)
    assert r.exit_code == 0, r.output
    assert (out / "experiment.yaml").exists()


def test_the_real_aicb_file_still_imports(tmp_path):
    out = tmp_path / "run"
    r = invoke("workload", "import", REAL, "-o", out)
    assert r.exit_code == 0, r.output
