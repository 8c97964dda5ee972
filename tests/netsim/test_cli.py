import json

import polars as pl
import pytest
from typer.testing import CliRunner

from wormsim.netsim.cli import app

D = "tests/data/ns3/dumbbell8/dctcp"


def _scenario(*extra, config=f"{D}/config.txt"):
    return [
        "run",
        "--topology",
        f"{D}/topology.txt",
        "--flows",
        f"{D}/flow.txt",
        "--config",
        str(config),
        *extra,
    ]


def test_cli_run_writes_outputs(tmp_path):
    out = tmp_path / "out"
    r = CliRunner().invoke(app, _scenario("-o", str(out)))
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
    r = CliRunner().invoke(app, _scenario("-o", str(out), config=bad))
    assert r.exit_code == 2 and "CC_MODE 99" in r.output and not out.exists()


@pytest.mark.parametrize("mode", ["packet", "wormhole"])
def test_cli_a_run_whose_engine_state_cannot_fit_exits_2_before_allocating_it(
    tmp_path, monkeypatch, mode
):
    """The engine's state is counted from its field table before it is allocated: a run that
    cannot fit in the memory it may use is refused, with what it needs and what to change."""
    monkeypatch.setenv("WORMSIM_MEMORY_BYTES", "64M")  # less than the process already holds
    out = tmp_path / "o"
    r = CliRunner().invoke(app, _scenario("-o", str(out), "--mode", mode))
    assert r.exit_code == 2, r.output
    name = {"packet": "packet", "wormhole": "Wormhole"}[mode]
    assert f"the {name} engine's state for this run needs" in r.output
    assert "8 QPs" in r.output and "--mode flow" in r.output and "Traceback" not in r.output
    assert not out.exists()


def test_cli_wormhole_settings_reach_the_run_and_its_manifest(tmp_path):
    out = tmp_path / "out"
    r = CliRunner().invoke(
        app,
        _scenario(
            "--mode",
            "wormhole",
            "--wormhole",
            "skip_unit=flow",
            "--wormhole",
            "window=10",
            "-o",
            str(out),
        ),
    )
    assert r.exit_code == 0, r.output
    man = json.loads((out / "manifest.json").read_text())
    assert man["wormhole"]["skip_unit"] == "flow" and man["wormhole"]["window"] == 10
    s = json.loads((out / "summary.json").read_text())
    assert s["mode"] == "wormhole" and s["skips"] > 0


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--mode", "wormhole", "--wormhole", "window=1"], "--wormhole window=1"),
        (["--mode", "wormhole", "--wormhole", "windw=10"], "unknown key"),
        (["--mode", "wormhole", "--wormhole", "skip_unit"], "KEY=VALUE"),
        (["--wormhole", "skip_unit=flow"], "applies to --mode wormhole"),
    ],
)
def test_cli_bad_wormhole_settings_exit_2(tmp_path, extra, needle):
    out = tmp_path / "o"
    r = CliRunner().invoke(app, _scenario(*extra, "-o", str(out)))
    assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output
    assert not out.exists()
