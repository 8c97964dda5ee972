"""The report's figures: PNG files drawn from polars frames with matplotlib's Agg renderer.

Every function takes the table it draws (the caller reads the run directory), writes one PNG at
``path`` atomically (:func:`wormsim.rundir.atomic_write`) and returns the path. An empty table
still gives a figure, one that says "no data", so a report never links a missing image.

The figures are drawn on a :class:`matplotlib.figure.Figure` with its own
:class:`~matplotlib.backends.backend_agg.FigureCanvasAgg`, never through ``pyplot``: nothing
global changes (no backend switch, no figure registry), so a user's interactive session that
imports wormsim keeps its backend and its open figures.

>>> import polars as pl, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> plot_busbw(pl.DataFrame(), d / "busbw.png").read_bytes()[:8] == PNG_MAGIC
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path as MPath
from matplotlib.ticker import FuncFormatter, LogFormatter, LogLocator

from wormsim.analysis.units import human_bytes
from wormsim.humanize import human_number
from wormsim.rundir import atomic_write

__all__ = [
    "DPI",
    "PNG_MAGIC",
    "GROUP_COLOURS",
    "COMPUTE_COLOUR",
    "select_ranks",
    "plot_timeline",
    "plot_fct_cdf",
    "plot_link_utilisation",
    "plot_busbw",
    "plot_error_histogram",
    "plot_sweep_axis",
    "plot_sweep_points",
]

#: Resolution of every figure.
DPI = 120
#: The first eight bytes of every PNG file.
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

#: Colour of each communication group (tab10); a group not listed is drawn in :data:`_OTHER`.
GROUP_COLOURS: dict[str, str] = {
    "tp": "#1f77b4",
    "cp": "#ff7f0e",
    "ep": "#2ca02c",
    "pp": "#d62728",
    "dp": "#9467bd",
    "edp": "#8c564b",
    "etp": "#e377c2",
    "dp_cp": "#bcbd22",
}
#: Colour of compute bars.
COMPUTE_COLOUR = "#4d4d4d"
_OTHER = "#17becf"

#: Largest number of points one CDF line or strip is drawn with (quantiles beyond it).
_MAX_POINTS = 4000


# --------------------------------------------------------------------------- helpers


class ShownFigure(Figure):
    """A :class:`~matplotlib.figure.Figure` that notebooks display as a PNG without pyplot."""

    def _repr_png_(self) -> bytes:
        import io

        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=DPI)
        return buf.getvalue()


def _figure(width: float = 9.0, height: float = 5.0) -> tuple[Figure, Axes]:
    """A figure with one axes on its own Agg canvas (no pyplot, no global state)."""
    fig = ShownFigure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _save(fig: Figure, path: Path | str | None) -> Any:
    """Write ``fig`` as a PNG at ``path`` atomically and return the path; without a path,
    return the figure itself (a notebook displays it)."""
    if path is None:
        return fig

    def write(tmp: Path) -> None:
        # the constrained layout once, then a figure without a layout engine: savefig would
        # otherwise draw the whole figure once more, without output, before the real draw (the
        # same pixels: that draw only lays the figure out)
        engine = fig.get_layout_engine()
        if engine is not None:
            engine.execute(fig)
            fig.set_layout_engine(None)
        fig.savefig(tmp, format="png", dpi=DPI)

    return atomic_write(Path(path), write)


def _no_data(path: Path | str | None, title: str) -> Any:
    """A figure that says there is nothing to draw."""
    fig, ax = _figure(6.0, 3.0)
    ax.set_title(title)
    ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=16, transform=ax.transAxes)
    ax.set_axis_off()
    return _save(fig, path)


def _has(df: pl.DataFrame, *cols: str) -> bool:
    return df.height > 0 and all(c in df.columns for c in cols)


def _finite(values: Iterable[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64).ravel()
    return a[np.isfinite(a)]


def _thin_sorted(x: np.ndarray, limit: int = _MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """``(values, cumulative fraction)`` of sorted ``x``, at most ``limit`` points (quantiles)."""
    n = x.shape[0]
    frac = np.arange(1, n + 1, dtype=np.float64) / n
    if n <= limit:
        return x, frac
    idx = np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))
    return x[idx], frac[idx]


def _bars(rects: np.ndarray, colour: str) -> PathPatch:
    """Rectangles ``(n, 4, 2)`` as one compound path: one artist, so 100 k bars draw fast."""
    n = rects.shape[0]
    verts = np.concatenate((rects, rects[:, :1]), axis=1).reshape(n * 5, 2)
    codes = np.tile(
        np.array(
            [MPath.MOVETO, MPath.LINETO, MPath.LINETO, MPath.LINETO, MPath.CLOSEPOLY],
            dtype=MPath.code_type,
        ),
        n,
    )
    return PathPatch(
        MPath(verts, codes), facecolor=colour, edgecolor="none", lw=0, antialiased=False
    )


def _labels(df: pl.DataFrame, col: str, default: str) -> pl.Series:
    """A label column as strings, nulls and a missing column as ``default``."""
    if col not in df.columns:
        return pl.Series(col, [default] * df.height, dtype=pl.String)
    return df[col].cast(pl.String).fill_null(default)


# --------------------------------------------------------------------------- timeline


def select_ranks(ranks: Sequence[int] | np.ndarray, max_ranks: int) -> np.ndarray:
    """At most ``max_ranks`` of the sorted distinct ``ranks``, evenly spread, first and last kept.

    >>> select_ranks(range(100), 5).tolist()
    [0, 25, 50, 74, 99]
    >>> select_ranks([3, 1, 2], 8).tolist()
    [1, 2, 3]
    """
    r = np.unique(np.asarray(ranks, dtype=np.int64))
    if r.shape[0] <= max_ranks:
        return r
    if max_ranks <= 1:
        return r[:1]
    idx = np.unique(np.linspace(0, r.shape[0] - 1, max_ranks).round().astype(np.int64))
    return r[idx]


def _time_unit(span_ps: float) -> tuple[str, float]:
    """Milliseconds for spans of a millisecond or more, else microseconds."""
    return ("ms", 1e9) if span_ps >= 1e9 else ("µs", 1e6)


def plot_timeline(
    intervals: pl.DataFrame,
    path: Path | str | None = None,
    *,
    max_ranks: int = 32,
    iteration_ps: int | None = None,
) -> Any:
    """Per-rank timeline of the iteration: a compute lane and a communication lane per rank.

    Parameters
    ----------
    intervals : polars.DataFrame
        Rows of :func:`wormsim.analysis.breakdown.op_intervals`: ``rank``, ``kind``
        (``"compute"`` or ``"comm"``), ``group``, ``start_ps``, ``end_ps``.
    path : Path or str, optional
        The PNG to write; without it the :class:`~matplotlib.figure.Figure` is returned.
    max_ranks : int
        With more ranks, an evenly spread subset (first and last rank included) is drawn and the
        title says so.
    iteration_ps : int, optional
        The iteration time; the x axis then spans ``[0, iteration_ps]``.

    Returns
    -------
    Path or Figure
        ``path``, or the figure when no path is given.

    Notes
    -----
    All bars go into one :class:`~matplotlib.collections.PolyCollection`, so 100 k intervals
    draw in about a second. Overlapping communication ops of one rank overdraw each other in the
    one lane; the Perfetto trace (:mod:`wormsim.analysis.trace`) lays them out in sub-lanes.
    """
    title = "Iteration timeline"
    need = ("rank", "kind", "start_ps", "end_ps")
    if not _has(intervals, *need):
        return _no_data(path, title)
    all_ranks = np.unique(intervals["rank"].to_numpy())
    shown = select_ranks(all_ranks, max_ranks)
    iv = intervals.filter(pl.col("rank").is_in(shown.tolist()))
    rank = iv["rank"].to_numpy().astype(np.int64)
    start = iv["start_ps"].to_numpy().astype(np.float64)
    end = iv["end_ps"].to_numpy().astype(np.float64)
    is_comp = (iv["kind"].cast(pl.String) == "compute").fill_null(False).to_numpy()
    groups = _labels(iv, "group", "").to_numpy()

    lo = 0.0 if iteration_ps is not None else float(min(start.min(), 0.0))
    hi = float(iteration_ps) if iteration_ps is not None else float(end.max())
    unit, scale = _time_unit(hi - lo)

    # rank i (top to bottom) occupies [i, i+1): compute lane above, communication lane below
    row = np.searchsorted(shown, rank).astype(np.float64)
    lane_h = 0.4
    y0 = row + np.where(is_comp, 0.08, 0.52)
    x0 = start / scale
    x1 = np.maximum(end, start) / scale
    # a zero-length op still shows as a hairline: widen to a pixel-ish minimum
    x1 = np.maximum(x1, x0 + (hi - lo) / scale * 2e-4)
    verts = np.empty((iv.height, 4, 2))
    verts[:, 0, 0] = x0
    verts[:, 1, 0] = x0
    verts[:, 2, 0] = x1
    verts[:, 3, 0] = x1
    verts[:, 0, 1] = y0
    verts[:, 1, 1] = y0 + lane_h
    verts[:, 2, 1] = y0 + lane_h
    verts[:, 3, 1] = y0

    comm_groups = groups[~is_comp]
    present = [g for g in GROUP_COLOURS if np.any(comm_groups == g)]
    others = sorted(set(comm_groups.tolist()) - set(GROUP_COLOURS))
    layers = [("compute", is_comp, COMPUTE_COLOUR)]
    layers += [(g, ~is_comp & (groups == g), GROUP_COLOURS[g]) for g in present]
    if others:
        layers.append(("other", ~is_comp & np.isin(groups, others), _OTHER))

    height = min(2.0 + 0.32 * shown.shape[0], 16.0)
    fig, ax = _figure(11.0, height)
    for _, mask, colour in layers:
        ax.add_artist(_bars(verts[mask], colour))  # not add_patch: no per-curve autoscale
    ax.set_xlim(lo / scale, hi / scale)
    ax.set_ylim(shown.shape[0], 0)
    ax.set_yticks(np.arange(shown.shape[0]) + 0.5)
    ax.set_yticklabels([f"rank {r}" for r in shown], fontsize=8 if shown.shape[0] > 16 else 10)
    ax.set_xlabel(f"time since iteration start ({unit})")
    ax.set_ylabel("rank (upper lane compute, lower lane communication)")
    ax.grid(axis="x", alpha=0.3)
    if iteration_ps is not None:
        ax.axvline(iteration_ps / scale, color="black", lw=1, ls="--")
    if shown.shape[0] < all_ranks.shape[0]:
        title += f" ({shown.shape[0]} of {all_ranks.shape[0]} ranks shown, evenly spread)"
    ax.set_title(title)
    handles = [Patch(color=COMPUTE_COLOUR, label="compute")]
    handles += [Patch(color=GROUP_COLOURS[g], label=f"comm {g}") for g in present]
    if others:
        handles.append(Patch(color=_OTHER, label="comm " + "/".join(o or "?" for o in others)))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9)
    return _save(fig, path)


# --------------------------------------------------------------------------- flows


def plot_fct_cdf(flows: pl.DataFrame, path: Path | str | None = None) -> Any:
    """CDF of the flow slowdown (FCT / ideal FCT) per traffic class, log x axis.

    Parameters
    ----------
    flows : polars.DataFrame
        ``slowdown_x`` (≥ about 1) and ``traffic_class`` (one line per class; all flows are one
        class ``"all"`` without it). Null, non-finite and non-positive slowdowns are dropped.
    path : Path or str, optional
        The PNG to write; without it the :class:`~matplotlib.figure.Figure` is returned.
    """
    title = "Flow completion time slowdown"
    if not _has(flows, "slowdown_x"):
        return _no_data(path, title)
    df = pl.DataFrame(
        {
            "cls": _labels(flows, "traffic_class", "all"),
            "x": flows["slowdown_x"].cast(pl.Float64),
        }
    ).filter(pl.col("x").is_not_null() & pl.col("x").is_finite() & (pl.col("x") > 0))
    if df.height == 0:
        return _no_data(path, title)
    fig, ax = _figure()
    for cls in sorted(df["cls"].unique().to_list()):
        x = np.sort(df.filter(pl.col("cls") == cls)["x"].to_numpy())
        xs, ys = _thin_sorted(x)
        p99 = float(np.quantile(x, 0.99))
        ax.step(
            xs,
            ys,
            where="post",
            lw=1.6,
            label=f"{cls} (n={x.shape[0]:,}, p99 {human_number(p99, trim=True)}×)",
        )
    ax.axvline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    ax.xaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("slowdown = FCT / ideal FCT (×, log scale)")
    ax.set_ylabel("fraction of flows (CDF)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(title="traffic class", loc="lower right")
    return _save(fig, path)


# --------------------------------------------------------------------------- links


def plot_link_utilisation(links: pl.DataFrame, path: Path | str | None = None) -> Any:
    """Distribution of link utilisation per tier: a box per tier with every link as a dot.

    Parameters
    ----------
    links : polars.DataFrame
        ``utilisation_pct`` (0-100) and ``tier`` (tiers in order of first appearance; all links
        one tier ``"all"`` without it). Nulls are dropped.
    path : Path or str, optional
        The PNG to write; without it the :class:`~matplotlib.figure.Figure` is returned.
    """
    title = "Link utilisation per tier"
    if not _has(links, "utilisation_pct"):
        return _no_data(path, title)
    df = pl.DataFrame(
        {"tier": _labels(links, "tier", "all"), "u": links["utilisation_pct"].cast(pl.Float64)}
    ).filter(pl.col("u").is_not_null() & pl.col("u").is_finite())
    if df.height == 0:
        return _no_data(path, title)
    tiers = df["tier"].unique(maintain_order=True).to_list()
    data = [df.filter(pl.col("tier") == t)["u"].to_numpy() for t in tiers]
    fig, ax = _figure(max(6.0, 1.4 * len(tiers) + 3.0), 5.0)
    ax.boxplot(data, showfliers=False, whis=(0, 100), widths=0.5)
    rng = np.random.default_rng(0)  # fixed jitter: the same table draws the same figure
    for i, u in enumerate(data, start=1):
        pts, _ = _thin_sorted(np.sort(u))
        ax.scatter(i + rng.uniform(-0.18, 0.18, pts.shape[0]), pts, s=8, alpha=0.5, color="#1f77b4")
    ax.set_xticks(range(1, len(tiers) + 1))
    names = [
        f"{t}\n(n={d.shape[0]:,}, mean {d.mean():.1f} %)" for t, d in zip(tiers, data, strict=True)
    ]
    ax.set_xticklabels(names)
    top = max(100.0, float(max(d.max() for d in data)))
    ax.set_ylim(0, top * 1.04)
    ax.set_ylabel("utilisation (% of link capacity)")
    ax.set_xlabel("tier (box: quartiles, whiskers: min and max; dots: links)")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


# --------------------------------------------------------------------------- collectives


def plot_busbw(collectives: pl.DataFrame, path: Path | str | None = None) -> Any:
    """Bus bandwidth against message size per collective kind (scatter, log x axis).

    Parameters
    ----------
    collectives : polars.DataFrame
        ``size_bytes``, ``busbw_GBps`` and ``collective`` (one colour per kind). Rows with a
        null bandwidth or a non-positive size are dropped.
    path : Path or str, optional
        The PNG to write; without it the :class:`~matplotlib.figure.Figure` is returned.
    """
    title = "Collective bus bandwidth"
    if not _has(collectives, "size_bytes", "busbw_GBps"):
        return _no_data(path, title)
    df = pl.DataFrame(
        {
            "kind": _labels(collectives, "collective", "all"),
            "size": collectives["size_bytes"].cast(pl.Float64),
            "bw": collectives["busbw_GBps"].cast(pl.Float64),
        }
    ).filter(
        pl.col("size").is_not_null()
        & pl.col("bw").is_not_null()
        & pl.col("bw").is_finite()
        & (pl.col("size") > 0)
    )
    if df.height == 0:
        return _no_data(path, title)
    fig, ax = _figure()
    for kind in sorted(df["kind"].unique().to_list()):
        part = df.filter(pl.col("kind") == kind)
        ax.scatter(
            part["size"].to_numpy(),
            part["bw"].to_numpy(),
            s=18,
            alpha=0.7,
            label=f"{kind} (n={part.height:,})",
        )
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda n, _pos: human_bytes(n, compact=True)))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("message size (bytes, nccl-tests convention; log scale)")
    ax.set_ylabel("bus bandwidth (GB/s, 10⁹ bytes/s)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(title="collective", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


# --------------------------------------------------------------------------- errors


def plot_error_histogram(
    errors_pct: np.ndarray | Sequence[float],
    path: Path | str,
    *,
    title: str = "Per-flow error",
) -> Path:
    """Histogram of per-flow errors in %, with the mean, median (p50) and p99 marked.

    Parameters
    ----------
    errors_pct : numpy.ndarray
        One error per flow, in % (non-finite values are dropped). The statistics are of the values
        as given: pass absolute errors for a magnitude view.
    path : Path or str, optional
        The PNG to write; without it the :class:`~matplotlib.figure.Figure` is returned.
    title : str
        The figure title.
    """
    e = _finite(errors_pct)
    if e.shape[0] == 0:
        return _no_data(path, title)
    fig, ax = _figure()
    bins = min(100, max(10, int(np.sqrt(e.shape[0]))))
    if np.ptp(e) == 0:
        bins = 1
    ax.hist(e, bins=bins, color="#7f7f7f", alpha=0.8)
    marks = (
        ("mean", float(e.mean()), "#d62728", "-"),
        ("p50", float(np.quantile(e, 0.5)), "#1f77b4", "--"),
        ("p99", float(np.quantile(e, 0.99)), "#2ca02c", ":"),
    )
    for label, value, colour, ls in marks:
        ax.axvline(
            value, color=colour, ls=ls, lw=1.8, label=f"{label} {human_number(value, trim=True)} %"
        )
    ax.set_xlabel("error (%)")
    ax.set_ylabel(f"flows (of {e.shape[0]:,})")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    return _save(fig, path)


# --------------------------------------------------------------------------- sweeps


def plot_sweep_axis(
    table: pl.DataFrame, axis: str, path: Path | str, axes: Sequence[str] = ()
) -> Path:
    """Iteration time against one axis of a sweep: one line per combination of the others.

    Parameters
    ----------
    table : polars.DataFrame
        The sweep table: the axis columns (values as text), ``status`` and
        ``iteration_time_ms``; only points with status ``ok`` are drawn.
    axis : str
        The column along x (its values in order of first appearance).
    path : Path or str, optional
        The PNG to write; without it the :class:`~matplotlib.figure.Figure` is returned.
    axes : sequence of str
        Every axis of the sweep; the others than ``axis`` make the series (at most 12 lines,
        beyond that their mean is drawn).
    """
    title = f"Iteration time by {axis}"
    if not _has(table, axis, "iteration_time_ms", "status"):
        return _no_data(path, title)
    ok = table.filter(pl.col("status") == "ok")
    if ok.height == 0:
        return _no_data(path, title)
    xs = ok[axis].unique(maintain_order=True).to_list()
    others = [a for a in axes if a != axis and a in ok.columns]
    fig, ax = _figure()
    series = ok.partition_by(others, as_dict=True, maintain_order=True) if others else {(): ok}
    if len(series) > 12:
        series = {("mean of the other axes",): ok.group_by(axis).agg(
            pl.col("iteration_time_ms").mean()
        )}  # fmt: skip
        others = ["series"]
    pos = {x: i for i, x in enumerate(xs)}
    for key, part in series.items():
        part = part.with_columns(
            pl.col(axis).replace_strict(pos, return_dtype=pl.Int64).alias("_x")
        )
        part = part.sort("_x")
        label = ", ".join(f"{o.rpartition('.')[2]}={v}" for o, v in zip(others, key, strict=False))
        ax.plot(part["_x"].to_numpy(), part["iteration_time_ms"].to_numpy(), marker="o",
                label=label or None)  # fmt: skip
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_xlabel(axis)
    ax.set_ylabel("iteration time (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if others:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return _save(fig, path)


def plot_sweep_points(table: pl.DataFrame, path: Path | str | None = None) -> Any:
    """Every point's iteration time as a bar split into where its critical rank's time goes.

    Parameters
    ----------
    table : polars.DataFrame
        The sweep table: ``label``, ``status``, ``iteration_time_ms`` and the breakdown shares
        ``compute_pct``, ``exposed_<dim>_pct``, ``bubble_pct``, ``idle_pct``; only points with
        status ``ok`` are drawn, fastest first.
    path : Path or str, optional
        The PNG to write; without it the :class:`~matplotlib.figure.Figure` is returned.
    """
    title = "Iteration time per point, by where the critical rank's time goes"
    if not _has(table, "label", "iteration_time_ms", "status"):
        return _no_data(path, title)
    ok = table.filter(pl.col("status") == "ok").sort("iteration_time_ms")
    if ok.height == 0:
        return _no_data(path, title)
    cats = [c for c in ok.columns if c.endswith("_pct") and ok[c].fill_null(0).sum() > 0]
    fig, ax = _figure(9.0, max(2.5, 0.45 * ok.height + 1.5))
    y = np.arange(ok.height)
    left = np.zeros(ok.height)
    total = ok["iteration_time_ms"].to_numpy()
    for cat in cats:
        name = cat.removesuffix("_pct")
        dim = name.removeprefix("exposed_")
        colour = (
            COMPUTE_COLOUR if name == "compute" else GROUP_COLOURS.get(dim, _OTHER)
            if name.startswith("exposed_") else ("#cccccc" if name == "bubble" else "#eeeeee")
        )  # fmt: skip
        width = total * ok[cat].fill_null(0).to_numpy() / 100
        ax.barh(y, width, left=left, color=colour, label=name, edgecolor="white", linewidth=0.5)
        left += width
    ax.set_yticks(y, ok["label"].to_list(), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("iteration time (ms)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return _save(fig, path)
