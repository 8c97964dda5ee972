"""Input files an experiment names: a fabric file and a network configuration file.

- ``cluster.topology_file``: an HPCC ``topology.txt`` or a SimAI topology file
  (:mod:`wormsim.netsim.formats.topology_file`). Its path is made absolute (relative to the
  experiment
  file's directory), and the cluster fields the file defines are filled in from it: ``gpus``
  (every GPU of the file, unless the workload says fewer), and for a SimAI file
  ``gpus_per_node`` (its ``gpus_per_server``) and ``nvlink_gbps`` (its NVSwitch links). A value
  the experiment sets that contradicts the file is refused.
- ``network: FILE``: a ``SimAI.conf`` or HPCC ``config.txt`` instead of the section's mapping,
  read by :func:`wormsim.netsim.formats.simai_config.read_simai_config` into the section's fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wormsim.errors import ConfigError
from wormsim.netsim.formats.simai_config import read_simai_config
from wormsim.netsim.formats.topology_file import FabricFile, cached_fabric_file
from wormsim.units import BPS_PER_GBPS_F

__all__ = ["resolve_files", "fabric_of"]


def _absolute(value: Any, base: Path | None, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{field}: expected a file path, not {value!r}")
    p = Path(value).expanduser()
    if not p.is_absolute():
        p = (base or Path.cwd()) / p
    return str(p.resolve())


def _fill(cluster: dict[str, Any], key: str, value: Any, source: str) -> None:
    have = cluster.setdefault(key, value)
    if have != value:
        raise ConfigError(
            f"cluster.{key} is {have!r} but {source} says {value!r}; remove cluster.{key} "
            "(the topology file defines it) or make them equal"
        )


def resolve_files(data: dict[str, Any], base: Path | None = None) -> dict[str, Any]:
    """The document with its file references resolved (a new mapping; ``data`` is unchanged).

    Parameters
    ----------
    data : dict
        An experiment document.
    base : Path, optional
        Directory relative paths are taken from (the experiment file's; default the working
        directory).

    Raises
    ------
    ConfigError
        A cluster field the topology file contradicts.
    NetsimInputError
        A bad topology or configuration file (file, line and fix).
    """
    if not isinstance(data, dict):
        return data
    data = dict(data)
    cluster = data.get("cluster")
    if isinstance(cluster, dict) and cluster.get("topology_file") is not None:
        cluster = dict(cluster)
        path = _absolute(cluster["topology_file"], base, "cluster.topology_file")
        cluster["topology_file"] = path
        fabric = cached_fabric_file(path)
        cluster.setdefault("gpus", fabric.gpus)
        if fabric.gpus_per_server is not None:
            _fill(cluster, "gpus_per_node", fabric.gpus_per_server, path)
        if fabric.nvlink_bps is not None:
            _fill(
                cluster,
                "nvlink_gbps",
                fabric.nvlink_bps / BPS_PER_GBPS_F,
                f"{path} (NVSwitch links)",
            )
        data["cluster"] = cluster
    source = data.get("workload")
    if isinstance(source, dict) and isinstance(source.get("file"), str):
        data["workload"] = {**source, "file": _absolute(source["file"], base, "workload.file")}
    if isinstance(data.get("network"), str):
        path = _absolute(data["network"], base, "network")
        data["network"] = read_simai_config(path).network.model_dump(mode="json")
    return data


def fabric_of(cluster: Any) -> FabricFile | None:
    """The fabric file of a validated ``cluster`` section, or None for a built-in fabric."""
    if cluster.topology_file is None:
        return None
    return cached_fabric_file(cluster.topology_file)
