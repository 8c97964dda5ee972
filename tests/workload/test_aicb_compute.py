"""AICB files made without compute profiles: detected, said loudly, and filled from a model
with the native stage's roofline when the user names one."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import wormsim
from wormsim.workload.aicb import read_aicb
from wormsim.workload.aicb_compute import (
    PLACEHOLDER_NS,
    fill_compute,
    placeholder_compute,
    row_kind,
)
from wormsim.workload.compute import attention_fwd_flops, mlp_fwd_flops
from wormsim.workload.errors import WorkloadError
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import resolve_model
from wormsim.workload.parallel import ParallelSpec

from ..pipelines.conftest import invoke

AICB = Path(__file__).resolve().parents[1] / "data" / "aicb"
GPT13B = AICB / "gpt13b-128.txt"
SIMAI_MICRO = Path(__file__).resolve().parents[1] / "data" / "simai" / "microAllReduce.txt"


def _gpt13b():
    from wormsim.workload.model import ModelSpec

    return ModelSpec.model_validate(resolve_model("gpt-13b"))


def test_aicb_files_without_profiles_are_detected():
    w = read_aicb(GPT13B)
    assert placeholder_compute(w)  # AICB's own output without --aiob_enable: every time is 1
    assert placeholder_compute(read_aicb(AICB / "moe8x13b-tp8-ep8-pp2-64.txt"))
    assert not placeholder_compute(read_aicb(SIMAI_MICRO))  # SimAI's example has real times
    real = dataclasses.replace(w, rows=tuple(dataclasses.replace(r, fwd_compute=5000)
                                             for r in w.rows))  # fmt: skip
    assert not placeholder_compute(real)


def test_fill_uses_the_native_roofline():
    w = read_aicb(GPT13B)
    model, hw = _gpt13b(), HardwareSpec(gpu="H100", efficiency=0.4)
    par = ParallelSpec(tp=8, pp=4, dp=4, micro_batch=1, global_batch=16)
    filled = fill_compute(w, model, par, hw)
    rows = {r.name: r for r in filled.rows}
    attn = round(hw.flops_to_ps(attention_fwd_flops(model, par)) / 1e3)
    mlp = round(hw.flops_to_ps(mlp_fwd_flops(model, par)) / 1e3)
    assert rows["attention_layer"].fwd_compute == attn
    assert rows["attention_layer"].ig_compute == rows["attention_layer"].wg_compute == attn
    assert rows["mlp_layer"].fwd_compute == mlp and rows["grad_norm"].fwd_compute == 0
    assert min(v for r in filled.rows for v in (r.fwd_compute,) if v) > PLACEHOLDER_NS
    assert row_kind("attention_column", False) == "attn" and row_kind("mlp_moelayer", True) == "moe"
    short = model.model_copy(update={"num_layers": 32})
    with pytest.raises(WorkloadError, match="has 32 layers but the AICB file has 40"):
        fill_compute(w, short, par, hw)


def test_placeholder_compute_is_never_simulated_silently(tmp_path: Path):
    run = tmp_path / "run"
    r = invoke("pipeline", "run", "--workload", GPT13B, "-o", run, "--mode", "flow", "--no-alone")
    assert r.exit_code == 0, r.output
    assert r.output.count("WARNING: the AICB workload gpt13b-128.txt has no compute profile") == 2
    summary = json.loads((run / "summary.json").read_text())
    assert (
        summary["compute"]["source"] == "placeholder"
        and "--set model=" in (summary["compute"]["warning"])
    )
    assert "WARNING: the AICB workload" in (run / "report" / "report.md").read_text()


def test_a_model_fills_the_compute_and_the_report_says_so(tmp_path: Path):
    run = tmp_path / "run"
    r = invoke("pipeline", "run", "--workload", GPT13B, "-o", run, "--mode", "flow", "--no-alone",
               "--set", "model=gpt-13b", "--set", "hardware.gpu=H100")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "WARNING" not in r.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["compute"]["source"] == "roofline"
    report = (run / "report" / "report.md").read_text()
    assert "**Compute.** roofline of gpt-13b on H100" in report and "placeholders" in report
    loaded = wormsim.load(run)
    compute = loaded.breakdown.filter(loaded.breakdown["category"] == "compute")
    assert compute["critical_rank_pct"][0] > 5  # not 0.0 % any more
    # the run directory records how compute was made, so it reruns the same
    again = tmp_path / "again"
    r = invoke("pipeline", "run", run / "experiment.yaml", "-o", again, "--no-alone")
    assert r.exit_code == 0, r.output
    assert (
        json.loads((again / "summary.json").read_text())["iteration_time_s"]
        == (summary["iteration_time_s"])
    )
    # a model that does not fit the file is refused, naming both
    r = invoke("pipeline", "run", "--workload", GPT13B, "-o", tmp_path / "bad", "--set",
               "model=gpt-7b")  # fmt: skip
    assert r.exit_code == 2 and "layers but the AICB file has 40" in r.output
    assert not (tmp_path / "bad").exists()


def test_importing_a_file_without_profiles_says_so(tmp_path: Path):
    r = invoke("workload", "import", GPT13B, "-o", tmp_path / "run")
    assert r.exit_code == 0 and "WARNING: the AICB workload gpt13b-128.txt" in r.output
    r = invoke("workload", "import", SIMAI_MICRO, "-o", tmp_path / "micro")
    assert r.exit_code == 0 and "WARNING" not in r.output
