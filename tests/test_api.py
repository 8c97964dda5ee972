"""The Python API a notebook user meets: run, load, compare, sweep, display, plots, pandas."""

from __future__ import annotations

import json

import pytest
from matplotlib.figure import Figure

import wormsim
from wormsim.errors import WormsimError

from .pipelines.conftest import TINY, invoke


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The tiny experiment in flow mode, kept on disk, twice (two seeds)."""
    base = tmp_path_factory.mktemp("api")
    a = wormsim.run(TINY, mode="flow", out=base / "a")
    b = wormsim.run(TINY, mode="flow", out=base / "b", overrides={"network.cc": "dcqcn"})
    return a, b


def test_load_opens_a_run_made_elsewhere(runs, tmp_path):
    a, _ = runs
    again = wormsim.load(a.run_dir)
    assert again.iteration_time_s == a.iteration_time_s
    assert again.breakdown.equals(a.breakdown)
    assert again.collectives.columns == a.collectives.columns  # the report's alone column too
    with pytest.raises(WormsimError, match="experiment.yaml|run"):
        wormsim.load(tmp_path)


def test_compare_matches_the_cli(runs):
    a, b = runs
    r = invoke("analysis", "compare", a.run_dir, b.run_dir, "--json")
    assert r.exit_code == 0, r.output
    cli = json.loads(r.output)
    api = wormsim.compare(a, b)
    assert api == cli
    assert wormsim.compare(a.run_dir, str(b.run_dir)) == cli


def test_the_public_api_is_listed_for_tab_completion():
    assert {"run", "load", "compare", "sweep", "Run"} <= set(dir(wormsim))


def test_compare_is_an_object_that_says_which_wall_time_a_ratio_uses(runs):
    a, b = runs
    c = wormsim.compare(a, b)
    text = repr(c)
    assert text.startswith("Comparison(") and "\n" not in text and len(text) < 300
    assert "simulation wall only" in text and "end to end" in text
    html = c._repr_html_()
    assert "speed-up B/A, simulation wall time only" in html
    assert "speed-up B/A, end-to-end wall time" in html and "network.cc" in html
    df = c.to_pandas()
    assert list(df.columns) == ["key", "label", "value", "unit"]
    row = df.set_index("key").loc["e2e_speedup_x"]
    assert row["value"] == pytest.approx(c["e2e_wall_b_s"] / c["e2e_wall_a_s"])
    assert c["sim_speedup_x"] == pytest.approx(c["sim_wall_b_s"] / c["sim_wall_a_s"])


def test_repr_is_short_and_the_notebook_display_is_a_summary(runs):
    a, _ = runs
    text = repr(a)
    assert len(text) < 200 and "\n" not in text
    assert text.startswith("Run('tiny', mode='flow', iteration_time=")
    html, md = a._repr_html_(), a._repr_markdown_()
    for shown in ("iteration time", "slowest rank", a.headline()["iteration time"]):
        assert shown in html and shown in md
    assert "e+" not in html and "e+" not in md


def test_plots_are_figures(runs):
    a, _ = runs
    for name in ("timeline", "fct_cdf", "link_utilisation", "busbw"):
        fig = getattr(a.plot, name)()
        assert isinstance(fig, Figure) and fig.axes


def test_tables_convert_to_pandas(runs):
    a, _ = runs
    df = a.to_pandas("collectives")
    assert list(df.columns) == a.collectives.columns and len(df) == a.collectives.height
    with pytest.raises(ValueError, match="breakdown"):
        a.to_pandas("nope")


def test_sweep_takes_a_dict(tmp_path):
    spec = {
        "name": "cc",
        "experiment": TINY,
        "mode": "flow",
        "grid": {"network.cc": ["hpcc", "dcqcn"]},
    }
    table = wormsim.sweep(spec, tmp_path / "out", jobs=1)
    assert table.height == 2 and (table["status"] == "ok").all()
