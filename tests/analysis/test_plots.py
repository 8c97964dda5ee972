"""The report's figures: every function writes a readable PNG, also from empty tables."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import polars as pl
import pytest
from PIL import Image

from wormsim.analysis import plots
from wormsim.analysis.plots import (
    PNG_MAGIC,
    plot_busbw,
    plot_error_histogram,
    plot_fct_cdf,
    plot_link_utilisation,
    plot_timeline,
    select_ranks,
)

GROUPS = ["tp", "cp", "ep", "pp", "dp", "edp", "etp", "dp_cp"]


def assert_png(path: Path, expected: Path) -> None:
    """``path`` is ``expected``, a non-empty PNG that PIL and matplotlib read back."""
    assert Path(path) == Path(expected)
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG_MAGIC
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        assert im.format == "PNG" and min(im.size) > 100
    assert mpimg.imread(path).ndim == 3
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []


def intervals(n: int, ranks: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    kind = np.where(rng.random(n) < 0.5, "compute", "comm")
    start = rng.integers(0, 5 * 10**10, n)
    return pl.DataFrame(
        {
            "op_id": np.arange(n),
            "rank": rng.integers(0, ranks, n).astype(np.int32),
            "kind": kind,
            "group": np.where(kind == "compute", "", rng.choice(GROUPS + ["zz"], n)),
            "name": "op",
            "phase": "fwd",
            "start_ps": start,
            "end_ps": start + rng.integers(0, 5 * 10**7, n),
        }
    )


@pytest.mark.parametrize(
    ("ranks", "kwargs"),
    [(4, {}), (4, {"iteration_ps": 6 * 10**10}), (300, {}), (300, {"max_ranks": 8})],
)
def test_timeline(tmp_path, ranks, kwargs):
    out = tmp_path / "timeline.png"
    assert_png(plot_timeline(intervals(2000, ranks), out, **kwargs), out)


def test_timeline_microsecond_span(tmp_path):
    iv = intervals(200, 2).with_columns(pl.col("start_ps") // 10**5, pl.col("end_ps") // 10**5)
    assert plots._time_unit(float(iv["end_ps"].max())) == ("µs", 1e6)
    assert plots._time_unit(2e9) == ("ms", 1e9)
    assert_png(plot_timeline(iv, tmp_path / "t.png"), tmp_path / "t.png")


def test_rank_subset_is_spread_and_keeps_the_ends():
    got = select_ranks(np.arange(1000) * 2, 32)
    assert got.shape[0] == 32 and got[0] == 0 and got[-1] == 1998
    assert np.all(np.diff(got) > 0)
    gaps = np.diff(got)
    assert gaps.max() - gaps.min() <= 2 * 2  # evenly spread: gaps differ by a rounding step
    assert select_ranks([5, 5, 3], 32).tolist() == [3, 5]
    assert select_ranks(np.arange(10), 1).tolist() == [0]


def test_timeline_of_100k_intervals_is_fast(tmp_path):
    iv = intervals(100_000, 32, seed=1)
    t0 = time.perf_counter()
    plot_timeline(iv, tmp_path / "big.png")
    elapsed = time.perf_counter() - t0
    assert_png(tmp_path / "big.png", tmp_path / "big.png")
    assert elapsed < 15.0, elapsed


def test_fct_cdf(tmp_path):
    rng = np.random.default_rng(2)
    n = 20_000
    flows = pl.DataFrame(
        {
            "slowdown_x": [None, float("nan"), 0.0] + (1 + rng.exponential(0.5, n)).tolist(),
            "traffic_class": ["tp", "dp", "pp"] + rng.choice(["tp", "dp", "pp"], n).tolist(),
        }
    )
    out = tmp_path / "cdf.png"
    assert_png(plot_fct_cdf(flows, out), out)
    assert_png(plot_fct_cdf(flows.drop("traffic_class"), out), out)
    assert_png(plot_fct_cdf(flows.head(1).with_columns(pl.lit(1.0).alias("slowdown_x")), out), out)


def test_link_utilisation(tmp_path):
    rng = np.random.default_rng(3)
    links = pl.DataFrame(
        {
            "utilisation_pct": rng.uniform(0, 100, 9000),
            "tier": rng.choice(["host", "leaf", "spine"], 9000),
        }
    )
    out = tmp_path / "links.png"
    assert_png(plot_link_utilisation(links, out), out)
    assert_png(plot_link_utilisation(links.drop("tier").head(1), out), out)


def test_busbw(tmp_path):
    rng = np.random.default_rng(4)
    coll = pl.DataFrame(
        {
            "size_bytes": (2 ** rng.integers(0, 31, 300)).tolist() + [0],
            "busbw_GBps": rng.uniform(0, 40, 300).tolist() + [None],
            "collective": rng.choice(["allreduce", "allgather", "alltoall"], 301).tolist(),
        }
    )
    out = tmp_path / "busbw.png"
    assert_png(plot_busbw(coll, out), out)


def test_error_histogram(tmp_path):
    rng = np.random.default_rng(5)
    out = tmp_path / "err.png"
    errors = np.concatenate((rng.normal(0, 3, 5000), [np.nan, np.inf]))
    assert_png(plot_error_histogram(errors, out, title="wormhole vs packet"), out)
    assert_png(plot_error_histogram(np.full(10, 2.5), out), out)  # one value only
    assert_png(plot_error_histogram([1.0, -1.0], out), out)  # a plain sequence


EMPTY_CASES = [
    (plot_timeline, pl.DataFrame()),
    (plot_timeline, intervals(0, 1)),
    (plot_fct_cdf, pl.DataFrame()),
    (plot_fct_cdf, pl.DataFrame({"slowdown_x": [None, None], "traffic_class": ["a", "b"]})),
    (plot_link_utilisation, pl.DataFrame({"utilisation_pct": [], "tier": []})),
    (plot_busbw, pl.DataFrame({"size_bytes": [0], "busbw_GBps": [1.0], "collective": ["x"]})),
    (plot_busbw, pl.DataFrame()),
    (plot_error_histogram, np.array([])),
    (plot_error_histogram, np.array([np.nan])),
]


@pytest.mark.parametrize(("fn", "data"), EMPTY_CASES)
def test_empty_inputs_still_write_a_figure(tmp_path, fn, data):
    out = tmp_path / "sub" / "empty.png"
    assert_png(fn(data, out), out)


def test_no_global_matplotlib_state_changes(tmp_path):
    # in a fresh interpreter: drawing must not import pyplot nor pick or resolve a backend
    code = f"""
import sys, matplotlib, numpy as np
raw = dict.__getitem__(matplotlib.rcParams, "backend")
from wormsim.analysis.plots import plot_error_histogram, plot_timeline
import polars as pl
plot_timeline(pl.DataFrame({{"rank": [0, 1], "kind": ["compute", "comm"], "group": ["", "tp"],
    "start_ps": [0, 5], "end_ps": [5, 9]}}), {str(tmp_path / "a.png")!r})
plot_error_histogram(np.arange(10.0), {str(tmp_path / "b.png")!r})
assert "matplotlib.pyplot" not in sys.modules, "pyplot imported"
assert dict.__getitem__(matplotlib.rcParams, "backend") == raw, "backend changed"
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("MPLBACKEND", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert_png(tmp_path / "a.png", tmp_path / "a.png")


def _pixels(png: bytes | Path) -> np.ndarray:
    with Image.open(png if isinstance(png, Path) else io.BytesIO(png)) as im:
        return np.asarray(im.convert("RGBA"))


@pytest.mark.parametrize(
    ("fn", "data"),
    [
        (plot_timeline, intervals(3000, 40)),
        (plot_fct_cdf, pl.DataFrame({"slowdown_x": [1.0, 1.5, 9.0], "traffic_class": "tp"})),
        (plot_link_utilisation, pl.DataFrame({"utilisation_pct": [3.0, 70.0], "tier": "leaf"})),
        (
            plot_busbw,
            pl.DataFrame(
                {"size_bytes": [1 << 10, 1 << 24], "busbw_GBps": [2.0, 30.0], "collective": "x"}
            ),
        ),
        (plot_error_histogram, np.linspace(-4.0, 4.0, 50)),
    ],
)
def test_a_written_figure_is_the_figure_savefig_draws(tmp_path, fn, data):
    # the file (laid out once, drawn once) has the pixels of the returned figure saved the
    # usual way (savefig's layout pass, then its draw)
    buf = io.BytesIO()
    fn(data, None).savefig(buf, format="png", dpi=plots.DPI)
    assert np.array_equal(_pixels(fn(data, tmp_path / "f.png")), _pixels(buf.getvalue()))
