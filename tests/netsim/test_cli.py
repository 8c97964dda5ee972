import json

import polars as pl
from typer.testing import CliRunner

from wormsim.netsim.cli import app

D = "tests/data/ns3/dumbbell8/dctcp"


def test_cli_run_writes_outputs(tmp_path):
    out = tmp_path / "out"
    r = CliRunner().invoke(
        app,
        [
            "run",
            "--topology",
            f"{D}/topology.txt",
            "--flows",
            f"{D}/flow.txt",
            "--config",
            f"{D}/config.txt",
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    lines = (out / "fct.txt").read_text().splitlines()
    assert len(lines) == 8 and lines[0].split()[7] == "842560"
    t = pl.read_parquet(out / "flows.parquet")
    assert t.height == 8 and (t["fct_ps"] > 0).all()
    s = json.loads((out / "summary.json").read_text())
    assert s["mode"] == "packet" and s["events_processed"] > 0 and "compile_s" in s


def test_cli_bad_input_exit_2(tmp_path):
    out = tmp_path / "o"
    r = CliRunner().invoke(
        app, ["run", "--topology", "nope.txt", "--flows", f"{D}/flow.txt", "-o", str(out)]
    )
    assert r.exit_code == 2 and "does not exist" in r.output
    assert not out.exists()
    bad = tmp_path / "c.txt"
    bad.write_text("CC_MODE 99\n")
    r = CliRunner().invoke(
        app,
        [
            "run",
            "--topology",
            f"{D}/topology.txt",
            "--flows",
            f"{D}/flow.txt",
            "--config",
            str(bad),
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 2 and "CC_MODE 99" in r.output and not out.exists()
