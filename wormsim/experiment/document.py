"""Reading an experiment document: YAML, TOML or JSON into a mapping, and ``--set`` overrides.

Files are read defensively: at most :data:`MAX_FILE_BYTES`, UTF-8, nesting at most
:data:`MAX_DEPTH` deep, and YAML aliases may not expand the document beyond :data:`MAX_NODES`
nodes (a "billion laughs" file is refused before it is built). The mapping is validated into an
experiment by :func:`wormsim.experiment.config.parse_experiment`.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import yaml

from wormsim.errors import ConfigError
from wormsim.inputs import MAX_DEPTH, MAX_NODES, depth_guard, load_yaml, parse_assignment, read_text

__all__ = [
    "read_document",
    "load_yaml",
    "apply_overrides",
    "MAX_FILE_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
]


#: Largest experiment file read (1 MiB).
MAX_FILE_BYTES = 1 << 20


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
    if path.is_dir():
        hint = (
            f"; to rerun a run directory give {path / 'experiment.yaml'}"
            if (path / "experiment.yaml").is_file()
            else ""
        )
        raise ConfigError(
            f"{path} is a directory, not an experiment file; give a .yaml, .toml or .json "
            f"file{hint}"
        )
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
    depth_guard(data, str(path))
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
        parts, value = parse_assignment(item, "--set", "parallel.tp=4")
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
