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
from wormsim.inputs import read_text

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
