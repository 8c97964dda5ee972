"""The experiment file: one pydantic model per concern, composed (DESIGN §2).

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
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wormsim.collective.config import CollectiveSpec
from wormsim.errors import ConfigError
from wormsim.netsim.cluster import ClusterSpec
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.sim_spec import SimSpec
from wormsim.workload.builder import resolve_layout
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec, resolve_model
from wormsim.workload.parallel import ParallelSpec

__all__ = [
    "ExperimentConfig",
    "load_experiment",
    "parse_experiment",
    "apply_overrides",
    "config_hash",
    "dump_yaml",
    "read_document",
]


class ExperimentConfig(BaseModel):
    """A whole experiment: what trains, on what, over which network, simulated how."""

    model_config = ConfigDict(extra="forbid")

    name: str = "experiment"
    model: ModelSpec
    parallel: ParallelSpec = Field(default_factory=ParallelSpec)
    hardware: HardwareSpec = Field(default_factory=HardwareSpec)
    cluster: ClusterSpec
    collective: CollectiveSpec = Field(default_factory=CollectiveSpec)
    network: NetworkSpec = Field(default_factory=NetworkSpec)
    sim: SimSpec = Field(default_factory=SimSpec)

    @field_validator("model", mode="before")
    @classmethod
    def _preset(cls, value: Any) -> Any:
        return resolve_model(value)

    @model_validator(mode="after")
    def _cross_field(self) -> ExperimentConfig:
        resolve_layout(self.model, self.parallel, self.cluster.gpus)
        return self


def read_document(path: Path) -> dict[str, Any]:
    """Read a YAML, TOML or JSON file into a mapping.

    Raises
    ------
    ConfigError
        Missing file, unknown suffix, or a syntax error (with the parser's location).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"experiment file not found: {path}")
    text = path.read_text()
    suffix = path.suffix.lower()
    try:
        if suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        elif suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise ConfigError(
                f"{path}: unknown file type {suffix!r}; use .yaml, .yml, .toml or .json"
            )
    except (yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: malformed {suffix.lstrip('.').upper()}: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections (model, ...)")
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides (values parsed as YAML scalars) to a mapping.

    Examples
    --------
    >>> apply_overrides({"parallel": {"tp": 8}}, ["parallel.tp=4", "sim.mode=flow"])
    {'parallel': {'tp': 4}, 'sim': {'mode': 'flow'}}
    """
    out = json.loads(json.dumps(data))
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: write it as key.path=value, e.g. parallel.tp=4")
        key, raw = item.split("=", 1)
        parts = [p for p in key.strip().split(".") if p]
        if not parts:
            raise ConfigError(f"--set {item!r}: the key is empty")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        node = out
        for p in parts[:-1]:
            nxt = node.get(p)
            if nxt is None or isinstance(nxt, str):
                # a preset name becomes {preset: name} so that its fields can be overridden
                nxt = {} if nxt is None else {"preset": nxt}
                node[p] = nxt
            if not isinstance(nxt, dict):
                raise ConfigError(f"--set {item!r}: {p!r} is not a section")
            node = nxt
        node[parts[-1]] = value
    return out


def _format_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key; remove it or check its spelling (`wormsim pipeline schema`)"
        elif err["type"] == "missing":
            msg = "required; add it to the experiment file"
        lines.append(f"{loc}: {msg}" if loc else msg)
    return "invalid experiment:\n  " + "\n  ".join(lines)


def parse_experiment(data: dict[str, Any]) -> ExperimentConfig:
    """Validate a mapping into an :class:`ExperimentConfig` (raises :class:`ConfigError`)."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc)) from None
    except ValueError as exc:  # raised outside pydantic's wrapping (e.g. unknown preset)
        raise ConfigError(f"invalid experiment: {exc}") from None


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
    return parse_experiment(data)


def dump_yaml(cfg: ExperimentConfig) -> str:
    """The resolved experiment (every default filled in) as YAML."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)


def config_hash(cfg: ExperimentConfig) -> str:
    """SHA-256 of the resolved experiment (canonical JSON)."""
    blob = json.dumps(cfg.model_dump(mode="json"), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()
