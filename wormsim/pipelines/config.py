"""The experiment file: one pydantic model per concern, composed.

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

Files are read defensively: at most :data:`MAX_FILE_BYTES`, UTF-8, nesting at most
:data:`MAX_DEPTH` deep, and YAML aliases may not expand the document beyond :data:`MAX_NODES`
nodes (a "billion laughs" file is refused before it is built). The workload's size and simulated
time are estimated when the file loads and refused beyond the limits of
:func:`wormsim.workload.builder.check_scale`.
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
from wormsim.errors import ConfigError, WormsimError
from wormsim.inputs import read_text
from wormsim.netsim.cluster import ClusterSpec
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.sim_spec import SimSpec
from wormsim.workload.builder import resolve_layout
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec, resolve_model
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.scale import check_scale

__all__ = [
    "ExperimentConfig",
    "load_experiment",
    "parse_experiment",
    "apply_overrides",
    "config_hash",
    "dump_yaml",
    "read_document",
    "load_yaml",
    "MAX_FILE_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
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

    @field_validator("model", mode="before")
    @classmethod
    def _preset(cls, value: Any) -> Any:
        return resolve_model(value)

    @model_validator(mode="after")
    def _cross_field(self) -> ExperimentConfig:
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
        return self

    def _check_ecn_maps(self) -> None:
        """Every link speed of the fabric needs ECN settings (packet and wormhole modes)."""
        for field in ("host_link_gbps", "fabric_link_gbps"):
            gbps = getattr(self.cluster, field)
            try:
                self.network.ecn_for_rate(int(round(gbps * 1e9)))
            except WormsimError as exc:
                raise ConfigError(
                    f"cluster.{field} = {gbps:g}: {exc}; set network.kmin_kb, network.kmax_kb "
                    "and network.pmax for it"
                ) from None


#: Largest experiment file read (1 MiB).
MAX_FILE_BYTES = 1 << 20
#: Deepest nesting of mappings and lists.
MAX_DEPTH = 32
#: Most YAML nodes a document may have once its aliases are expanded.
MAX_NODES = 100_000


def _yaml_guard(text: str, source: str) -> None:
    """Refuse YAML nested deeper than MAX_DEPTH or expanding (aliases) beyond MAX_NODES nodes.

    Walks the parser's event stream (no recursion, nothing built): a collection's size is the sum
    of its children's, and an alias counts the full size of its anchor.
    """
    sizes: dict[str, int] = {}
    stack: list[list] = [[None, 0]]  # [anchor, nodes so far]
    for ev in yaml.parse(text, Loader=yaml.SafeLoader):
        line = ev.start_mark.line + 1 if ev.start_mark else 0
        if isinstance(ev, yaml.CollectionStartEvent):
            stack.append([ev.anchor, 1])
            if len(stack) - 1 > MAX_DEPTH:
                raise ConfigError(
                    f"{source}:{line}: nested more than {MAX_DEPTH} levels deep; an experiment "
                    "needs a few levels (section, field, value)"
                )
            continue
        if isinstance(ev, yaml.CollectionEndEvent):
            anchor, n = stack.pop()
            if anchor is not None:
                sizes[anchor] = n
        elif isinstance(ev, yaml.AliasEvent):
            n = sizes.get(ev.anchor, 1)
        elif isinstance(ev, yaml.ScalarEvent):
            n = 1
            if ev.anchor is not None:
                sizes[ev.anchor] = 1
        else:
            continue
        stack[-1][1] += n
        if stack[-1][1] > MAX_NODES:
            raise ConfigError(
                f"{source}:{line}: the document expands to more than {MAX_NODES:,} nodes "
                "(YAML anchors and aliases repeat whole subtrees); write the values out or "
                "remove the aliases"
            )


def _depth_guard(data: Any, source: str) -> None:
    """Refuse mappings/lists nested deeper than MAX_DEPTH (iteratively: no recursion)."""
    todo = [(data, 0, "")]
    while todo:
        node, depth, where = todo.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(
                f"{source}: {where.lstrip('.') or 'the document'} is nested more than "
                f"{MAX_DEPTH} levels deep; an experiment needs a few levels"
            )
        if isinstance(node, dict):
            todo += [(v, depth + 1, f"{where}.{k}") for k, v in node.items()]
        elif isinstance(node, list):
            todo += [(v, depth + 1, f"{where}[{i}]") for i, v in enumerate(node)]


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML safely (no tags, bounded nesting and alias expansion); errors name ``source``."""
    _yaml_guard(text, source)
    return yaml.safe_load(text)


def _parse(text: str, suffix: str, source: str) -> Any:
    if suffix in (".yaml", ".yml"):
        return load_yaml(text, source)
    if suffix == ".toml":
        return tomllib.loads(text)
    if suffix == ".json":
        return json.loads(text)
    raise ConfigError(f"{source}: unknown file type {suffix!r}; use .yaml, .yml, .toml or .json")


def read_document(path: Path) -> dict[str, Any]:
    """Read a YAML, TOML or JSON file into a mapping.

    Raises
    ------
    ConfigError
        Missing, too large or non-UTF-8 file, unknown suffix, a syntax error (with the parser's
        location), nesting deeper than :data:`MAX_DEPTH`, or YAML aliases expanding beyond
        :data:`MAX_NODES` nodes.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"experiment file not found: {path}")
    text = read_text(path, "experiment", ConfigError, max_bytes=MAX_FILE_BYTES)
    suffix = path.suffix.lower()
    try:
        data = _parse(text, suffix, str(path))
    except (yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: malformed {suffix.lstrip('.').upper()}: {exc}") from None
    except RecursionError:
        raise ConfigError(
            f"{path}: nested too deeply to read; an experiment needs a few levels"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections (model, ...)")
    _depth_guard(data, str(path))
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
            value = load_yaml(raw, f"--set {item!r}")
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


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _format_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key; remove it or check its spelling (`wormsim pipeline schema`)"
        elif err["type"] == "missing":
            msg = "required; add it to the experiment file"
        elif err["type"] != "value_error" and "input" in err:
            msg = f"{_short(err['input'])} is not accepted: {msg}"
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
