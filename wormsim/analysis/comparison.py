"""The result of comparing two runs as an object a notebook shows well (``wormsim.compare``).

:func:`~wormsim.analysis.compare.compare_runs` returns a flat mapping (the ``--json`` of
``wormsim analysis compare``); :class:`Comparison` wraps it with a one-line ``repr``, an HTML
table, ``to_pandas()``, and labels that say what each figure is, in particular which wall time a
speed-up uses: the engine's alone (``sim_speedup_x``) or every stage, end to end
(``e2e_speedup_x``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from html import escape
from typing import Any

__all__ = ["LABELS", "Comparison"]

#: Key -> (label, unit) of every figure shown; keys not listed are shown under their own name.
LABELS: dict[str, tuple[str, str]] = {
    "mode_a": ("mode of A", ""),
    "mode_b": ("mode of B (reference)", ""),
    "iteration_time_a_s": ("iteration time A (simulated)", "s"),
    "iteration_time_b_s": ("iteration time B (simulated)", "s"),
    "iteration_time_error_pct": ("iteration time error |A-B|/B", "%"),
    "flows_count": ("flows matched", ""),
    "flows_unfinished_count": ("flows unfinished", ""),
    "fct_error_mean_pct": ("FCT error, mean", "%"),
    "fct_error_p50_pct": ("FCT error, median", "%"),
    "fct_error_p99_pct": ("FCT error, p99", "%"),
    "fct_error_max_pct": ("FCT error, max", "%"),
    "sim_wall_a_s": ("wall time A, simulation only (engine)", "s"),
    "sim_wall_b_s": ("wall time B, simulation only (engine)", "s"),
    "sim_speedup_x": ("speed-up B/A, simulation wall time only", "x"),
    "e2e_wall_a_s": ("wall time A, end to end (all stages)", "s"),
    "e2e_wall_b_s": ("wall time B, end to end (all stages)", "s"),
    "e2e_speedup_x": ("speed-up B/A, end-to-end wall time", "x"),
}

_HIDDEN = ("run_a", "run_b", "config_source", "config_note", "config_diff", "inputs_diff")


def _fmt(value: Any, unit: str) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if unit == "s":
            return f"{value:.6g} s"
        if unit == "%":
            return f"{value:.4g} %"
        if unit == "x":
            return f"{value:.3g}x"
        return f"{value:.6g}"
    return f"{value}{' ' + unit if unit else ''}"


class Comparison(Mapping[str, Any]):
    """Run A against the reference B: every figure of
    :func:`~wormsim.analysis.compare.compare_runs`, readable as a mapping
    (``c["fct_error_mean_pct"]``) and shown with labels.

    Attributes
    ----------
    data : dict
        The raw figures (units in the key names, as ``wormsim analysis compare --json``).
    """

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def to_dict(self) -> dict[str, Any]:
        """The raw figures, as ``--json`` prints them."""
        return dict(self.data)

    def rows(self) -> list[tuple[str, str, Any, str]]:
        """``(key, label, value, unit)`` of every figure shown, in display order."""
        keys = [k for k in LABELS if k in self.data]
        keys += [k for k in self.data if k not in LABELS and k not in _HIDDEN]
        return [(k, *LABELS.get(k, (k, ""))[:1], self.data[k], LABELS.get(k, ("", ""))[1])
                for k in keys]  # fmt: skip

    def to_pandas(self) -> Any:
        """One row per figure: ``key``, ``label``, ``value``, ``unit`` (a pandas DataFrame)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=["key", "label", "value", "unit"])

    def __repr__(self) -> str:
        d = self.data
        parts = [f"{d.get('run_a')} vs {d.get('run_b')}"]
        if d.get("iteration_time_error_pct") is not None:
            parts.append(f"iteration error {d['iteration_time_error_pct']:.3g} %")
        if d.get("fct_error_mean_pct") is not None:
            parts.append(f"mean FCT error {d['fct_error_mean_pct']:.3g} %")
        if d.get("sim_speedup_x") is not None:
            parts.append(f"{d['sim_speedup_x']:.3g}x faster (simulation wall only)")
        if d.get("e2e_speedup_x") is not None:
            parts.append(f"{d['e2e_speedup_x']:.3g}x end to end")
        return f"Comparison({', '.join(parts)})"

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left'>{escape(label)}</th>"
            f"<td style='text-align:right'>{escape(_fmt(value, unit))}</td></tr>"
            for _, label, value, unit in self.rows()
        )
        diff = self.data.get("config_diff") or []
        changed = ", ".join(escape(str(x["key"])) for x in diff[:12]) or "none"
        title = (
            f"{escape(str(self.data.get('run_a')))} against {escape(str(self.data.get('run_b')))}"
        )
        return (
            f"<b>wormsim comparison</b>: {title}<table>{body}</table>"
            f"<p>configuration differences: {changed}</p>"
            + "".join(f"<p>input: {escape(x)}</p>" for x in self.data.get("inputs_diff") or [])
        )
