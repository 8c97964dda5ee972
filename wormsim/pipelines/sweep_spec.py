"""A sweep file: one base experiment and the axes to vary, expanded into points.

.. code-block:: yaml

    name: cc-x-oversubscription
    experiment: ../table1/gpt13b-128.yaml   # a file (relative to this one) or the sections inline
    mode: wormhole                          # optional: every point's engine
    set:                                    # optional: overrides of every point
      cluster.topology: clos
    grid:                                   # every combination of these
      network.cc: [dcqcn, hpcc, timely]
      cluster.oversubscription: [1, 2, 4]
    zip:                                    # optional: lists of one length, varied together
      parallel.tp: [8, 4]
      parallel.pp: [1, 2]
    variants:                               # optional: named override sets, axis ``variant``
      small-buffer: {network.buffer_size_bytes: 4000000}
      default: {}

The points are the product of the grid's values, the zip's rows and the variants, in that order
(the last grid key varies fastest). Keys are ``key.path`` overrides as ``--set`` takes them. A
point's *key* is the hash of its resolved experiment without the memo store's path
(:func:`point_key`), so a rerun recognises points it has run, whatever their order.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from wormsim.errors import ConfigError, WormsimError
from wormsim.experiment import ExperimentConfig, config_hash, read_document
from wormsim.netsim.simulate import MODES

from .orchestrator import override_items, resolve_experiment

__all__ = [
    "MAX_POINTS",
    "SweepSpec",
    "SweepPoint",
    "load_sweep",
    "expand_points",
    "point_key",
    "resolve_point",
    "resolve_all",
]

#: Most points a sweep may have (each is a full simulation; counted before anything expands).
MAX_POINTS = 10_000


class SweepSpec(BaseModel):
    """The sweep file (see the module docstring).

    Attributes
    ----------
    name : str
    experiment : str or dict
        The base experiment: a file (relative to the sweep file) or its sections.
    mode : {"packet", "wormhole", "flow"} or None
    set : dict
        ``key.path`` overrides of every point.
    grid : dict
        ``key.path`` -> list of values; every combination is a point.
    zip : dict
        ``key.path`` -> list of values, all of one length; row ``i`` of every list is one point.
    variants : dict
        name -> ``{key.path: value}``; each variant multiplies the points.
    memo : {"shared", "private"}
        ``shared``: every point reads and writes one memo store (the experiment's
        ``sim.wormhole.memo_path`` or the default store), across sweeps too; ``private``: each
        point starts from an empty store of its own (in its run directory).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.-]+$")
    experiment: str | dict[str, Any]
    mode: Literal["packet", "wormhole", "flow"] | None = None
    set: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    zip: dict[str, list[Any]] = Field(default_factory=dict)
    variants: dict[str, dict[str, Any]] = Field(default_factory=dict)
    memo: Literal["shared", "private"] = "shared"

    @model_validator(mode="after")
    def _check(self) -> SweepSpec:
        for section in ("grid", "zip"):
            for key, values in getattr(self, section).items():
                if not values:
                    raise ValueError(f"{section}.{key} is empty; give it at least one value")
        lengths = {k: len(v) for k, v in self.zip.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(
                f"zip lists must have one length (they vary together), not {lengths}; "
                "use grid for independent axes"
            )
        n = math.prod(len(v) for v in self.grid.values()) * max(lengths.values(), default=1)
        n *= max(len(self.variants), 1)
        if n > MAX_POINTS:
            raise ValueError(
                f"the sweep has {n:,} points, over the limit of {MAX_POINTS:,}; split it or "
                "use fewer values per axis"
            )
        both = set(self.grid) & set(self.zip)
        if both:
            raise ValueError(f"{sorted(both)} are in both grid and zip; keep each key in one")
        if self.mode is not None and self.mode not in MODES:  # pragma: no cover - Literal
            raise ValueError(f"mode must be one of {MODES}")
        return self

    @property
    def axes(self) -> list[str]:
        """The columns that tell points apart: grid keys, zip keys, ``variant``."""
        return [*self.grid, *self.zip, *(["variant"] if self.variants else [])]


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep."""

    #: Position in the expansion (0-based).
    index: int
    #: ``{axis: value}`` (``variant`` -> its name).
    axes: dict[str, Any]
    #: The ``key.path=value`` overrides of the point, ``set`` first.
    overrides: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``cc=dcqcn,oversubscription=2`` (the last part of each key)."""
        return ",".join(f"{k.rpartition('.')[2]}={v}" for k, v in self.axes.items()) or "base"

    @property
    def slug(self) -> str:
        """The label as a directory-name part."""
        return re.sub(r"[^A-Za-z0-9_.=-]+", "_", self.label.replace(",", "_"))[:80]


def load_sweep(path: Path | Mapping[str, Any]) -> tuple[SweepSpec, Path]:
    """Read and validate a sweep file (or its contents as a mapping, whose paths are relative to
    the working directory); returns it and the directory its paths are relative to.

    Raises
    ------
    ConfigError
        Unreadable file or a bad field (named, with the fix).
    """
    if isinstance(path, Mapping):
        data, where, path = dict(path), Path.cwd(), Path("the sweep")
    else:
        path = Path(path)
        data, where = read_document(path), path.resolve().parent
    try:
        return SweepSpec.model_validate(data), where
    except ValidationError as exc:
        errs = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or 'the file'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        raise ConfigError(f"{path}: {errs}") from None


def expand_points(spec: SweepSpec) -> list[SweepPoint]:
    """Every point: grid product × zip rows × variants."""
    base = override_items(spec.set)
    grid_keys = list(spec.grid)
    grid = list(itertools.product(*spec.grid.values())) if grid_keys else [()]
    n_zip = len(next(iter(spec.zip.values()))) if spec.zip else 1
    variants = list(spec.variants.items()) or [(None, {})]
    points = []
    for values in grid:
        for row in range(n_zip):
            for vname, vset in variants:
                axes = dict(zip(grid_keys, values, strict=True))
                axes.update({k: v[row] for k, v in spec.zip.items()})
                if vname is not None:
                    axes["variant"] = vname
                sets = {k: v for k, v in axes.items() if k != "variant"}
                overrides = base + override_items(sets) + override_items(vset)
                points.append(SweepPoint(len(points), axes, overrides))
    return points


def resolve_point(spec: SweepSpec, base_dir: Path, point: SweepPoint) -> ExperimentConfig:
    """The point's resolved experiment (``mode`` applied last).

    Raises
    ------
    ConfigError
        The point's overrides make an invalid experiment (the point fails; the others run).
    """
    experiment: Any = spec.experiment
    if isinstance(experiment, str):
        experiment = (base_dir / experiment).resolve()
    overrides = list(point.overrides)
    if spec.mode is not None:
        overrides.append(f"sim.mode={spec.mode}")
    return resolve_experiment(experiment, overrides)


def resolve_all(
    spec: SweepSpec, base_dir: Path, points: list[SweepPoint], source: str = "the sweep"
) -> dict[int, ExperimentConfig]:
    """Every point's resolved experiment, before any point runs.

    Raises
    ------
    ConfigError
        Some point is invalid (an unknown axis such as ``parallel.tpp``, a value a field
        refuses): the first such point, its axes and the field, with how many points are bad.
    """
    resolved: dict[int, ExperimentConfig] = {}
    bad: list[tuple[SweepPoint, str]] = []
    for p in points:
        try:
            resolved[p.index] = resolve_point(spec, base_dir, p)
        except WormsimError as exc:
            bad.append((p, str(exc)))
    if bad:
        point, why = bad[0]
        why = why.removeprefix("invalid experiment:").strip()
        raise ConfigError(
            f"{source}: {len(bad)} of {len(points)} points are invalid, so none was run; point "
            f"{point.index} ({point.label}): {why}"
        )
    return resolved


def point_key(cfg: ExperimentConfig) -> str:
    """The hash that identifies a point across reruns: its resolved experiment, without the
    memo store's path (where the store lives does not change what is simulated)."""
    wormhole = cfg.sim.wormhole.model_copy(update={"memo_path": None})
    sim = cfg.sim.model_copy(update={"wormhole": wormhole})
    return config_hash(cfg.model_copy(update={"sim": sim}))[:16]
