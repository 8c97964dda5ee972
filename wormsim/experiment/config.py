"""The experiment: one pydantic model per stage's concern, composed.

An experiment is YAML, TOML or JSON::

    name: gpt13b-128
    model: gpt-13b                 # a preset, or an inline shape
    parallel: {tp: 8, pp: 4, global_batch: 16}
    hardware: {gpu: A100, efficiency: 0.5}
    cluster: {gpus: 128, gpus_per_node: 8}
    collective: {}
    network: {cc: hpcc}
    sim: {mode: packet, seed: 0}

Every field has a default except the model and ``cluster.gpus``. Cross-field rules (TP divides
heads and hidden size, layers divide into stages, world size matches the cluster, EP fits) are
checked when the file loads, and a bad file gets one message naming the field and the fix.

The file is read by :mod:`wormsim.experiment.document` (size, depth and alias limits). The
workload's size and simulated time are estimated when the file loads and refused beyond the
limits of :func:`wormsim.workload.scale.check_scale`.

Each section is a stage's own spec (``ModelSpec``, ``ParallelSpec`` and ``HardwareSpec`` of the
workload, ``CollectiveSpec``, and ``ClusterSpec``, ``NetworkSpec``, ``SimSpec`` of netsim), so
this module sits above the stages: stage library code never imports it, and stage steps take the
sections they read.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wormsim.collective.config import CollectiveSpec
from wormsim.errors import ConfigError, WormsimError
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.sim_spec import SimSpec
from wormsim.units import BPS_PER_GBPS_F
from wormsim.workload.builder import resolve_layout
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec, resolve_model
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.scale import check_scale
from wormsim.workload.source import WorkloadSource

from .document import apply_overrides, read_document
from .files import fabric_of, resolve_files

__all__ = [
    "ExperimentConfig",
    "load_experiment",
    "parse_experiment",
    "config_hash",
    "dump_yaml",
]


class ExperimentConfig(BaseModel):
    """A whole experiment: what trains, on what, over which network, simulated how."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("experiment", max_length=200, description="Label of the experiment.")
    model: ModelSpec = Field(
        description="Model shape: a preset name (e.g. gpt-13b), {preset: name, ...overrides} "
        "or an inline shape."
    )
    parallel: ParallelSpec = Field(
        default_factory=ParallelSpec, description="Parallel degrees, batch and schedule."
    )
    hardware: HardwareSpec = Field(
        default_factory=HardwareSpec, description="GPU and compute-time model."
    )
    cluster: ClusterSpec = Field(description="GPUs, servers and the fabric.")
    collective: CollectiveSpec = Field(
        default_factory=CollectiveSpec, description="How collectives become flows."
    )
    network: NetworkSpec = Field(
        default_factory=NetworkSpec, description="Congestion control, ECN, PFC and buffers."
    )
    sim: SimSpec = Field(default_factory=SimSpec, description="Engine, routing and seed.")
    workload: WorkloadSource | None = Field(
        None,
        description="A workload file (AICB .txt or Chakra prefix) simulated instead of the "
        "model's schedule; set by `pipeline run --workload`.",
    )

    @field_validator("model", mode="before")
    @classmethod
    def _preset(cls, value: Any) -> Any:
        return resolve_model(value)

    @model_validator(mode="after")
    def _cross_field(self) -> ExperimentConfig:
        self._check_fabric_file()
        resolve_layout(self.model, self.parallel, self.cluster.gpus)
        check_scale(
            self.model,
            self.parallel,
            self.hardware,
            self.cluster.gpus,
            self.cluster.gpus_per_node,
            self.collective,
            self.cluster.host_link_gbps,
        )
        if self.sim.mode != "flow":
            self._check_ecn_maps()
        if self.sim.mode == "wormhole":
            self.sim.wormhole.check_cc(self.network.cc)
        return self

    def _check_fabric_file(self) -> None:
        """A topology file has the GPUs of the workload, and ECN settings for its link speeds."""
        fabric = fabric_of(self.cluster)
        if fabric is None:
            return
        if self.cluster.gpus > fabric.gpus:
            raise ConfigError(
                f"cluster.gpus = {self.cluster.gpus}: the topology file {fabric.path} has only "
                f"{fabric.gpus} GPUs"
            )
        if fabric.gpus % self.cluster.gpus_per_node:
            raise ConfigError(
                f"cluster.gpus_per_node = {self.cluster.gpus_per_node}: the {fabric.gpus} GPUs "
                f"of {fabric.path} are not a whole number of such servers"
            )
        if self.sim.mode == "flow":
            return
        for rate in fabric.link_rates_bps:
            try:
                self.network.ecn_for_rate(rate)
            except WormsimError as exc:
                raise ConfigError(
                    f"cluster.topology_file {fabric.path} has {rate / BPS_PER_GBPS_F:g} Gbps "
                    f"links: {exc}; "
                    "set network.kmin_kb, network.kmax_kb and network.pmax for it"
                ) from None

    def _check_ecn_maps(self) -> None:
        """Every link speed of the fabric needs ECN settings (packet and wormhole modes)."""
        if self.cluster.topology_file is not None:
            return  # the file's link speeds: _check_fabric_file
        for field in ("host_link_gbps", "fabric_link_gbps"):
            gbps = getattr(self.cluster, field)
            try:
                self.network.ecn_for_rate(int(round(gbps * BPS_PER_GBPS_F)))
            except WormsimError as exc:
                raise ConfigError(
                    f"cluster.{field} = {gbps:g}: {exc}; set network.kmin_kb, network.kmax_kb "
                    "and network.pmax for it"
                ) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside a field's annotation (``X``, ``X | None``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _did_you_mean(loc: tuple[Any, ...]) -> str:
    """``did you mean parallel.tp?`` for a misspelt key at ``loc``, else the generic fix."""
    model: type[BaseModel] | None = ExperimentConfig
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) if model is not None else None
        model = _model_of(field.annotation) if field is not None else None
        if model is None:
            return "remove it or check its spelling"
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    if not close:
        return "remove it or check its spelling"
    return f"did you mean {'.'.join([*(str(x) for x in loc[:-1]), close[0]])}?"


def _format_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key; {_did_you_mean(err['loc'])} (`wormsim pipeline schema` "
            msg += "lists every field)"
        elif err["type"] == "missing":
            msg = "required; add it to the experiment file"
        elif err["type"] != "value_error" and "input" in err:
            msg = f"{_short(err['input'])} is not accepted: {msg}"
        lines.append(f"{loc}: {msg}" if loc else msg)
    return "invalid experiment:\n  " + "\n  ".join(lines)


def parse_experiment(data: dict[str, Any], base: Path | None = None) -> ExperimentConfig:
    """Validate a mapping into an :class:`ExperimentConfig`.

    The files it names (``cluster.topology_file``, ``network: FILE``) are read first
    (:func:`~wormsim.experiment.files.resolve_files`), relative paths from ``base`` (default:
    the working directory).

    Raises
    ------
    ConfigError
        Every field that failed validation, one line each, naming the field and the fix. Only
        pydantic's ``ValidationError`` is translated: any other exception is a bug and keeps its
        traceback.
    """
    data = resolve_files(data, base)
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc)) from None


def load_experiment(path: Path | str, overrides: list[str] | None = None) -> ExperimentConfig:
    """Load, override and validate an experiment file.

    Parameters
    ----------
    path : path-like
        A ``.yaml``/``.yml``, ``.toml`` or ``.json`` file.
    overrides : list of str
        ``key.path=value`` items applied after loading.
    """
    data = read_document(Path(path))
    data = apply_overrides(data, overrides or [])
    return parse_experiment(data, Path(path).parent)


def dump_yaml(cfg: ExperimentConfig) -> str:
    """The resolved experiment (every default filled in) as YAML."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)


def config_hash(cfg: ExperimentConfig) -> str:
    """SHA-256 of the resolved experiment (canonical JSON), with each input file it names
    (``cluster.topology_file``, ``workload.file``) standing for its content, not its path: the
    hash changes when a file is edited, and not when the run directory moves."""
    from wormsim.run_inputs import file_digest

    from .inputs import input_files

    data = cfg.model_dump(mode="json")
    for field, files in input_files(cfg).items():
        if files and all(f.is_file() for f in files):
            joined = ",".join(file_digest(f) for f in files)
            section, key = field.split(".")
            data[section][key] = "sha256:" + hashlib.sha256(joined.encode()).hexdigest()
    blob = json.dumps(data, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()
