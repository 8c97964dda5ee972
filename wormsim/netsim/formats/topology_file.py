"""Fabric files for training runs: an HPCC ``topology.txt`` or a SimAI topology file.

The two formats differ only in their header, which tells them apart:

- HPCC ns-3: ``<node_num> <switch_num> <link_num>``, then the switch ids, then one
  ``<a> <b> <rate> <delay> <error_rate>`` line per link.
- SimAI (``astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py``, read by SimAI's
  ``SetupNetwork``): ``<node_num> <gpus_per_server> <nvswitch_num> <switch_num> <link_num>
  <gpu_type>``, then the ``nvswitch_num`` NVSwitch ids followed by the ``switch_num`` fabric switch
  ids, then the links. A GPU's links to its server's NVSwitches carry NVLink; its other links go
  to the fabric (one NIC per GPU, two ports with dual ToR).

GPUs are mapped to hosts as SimAI does: the non-switch nodes in ascending id are GPUs ``0, 1,
...``, and GPU ``i`` is in server ``i // gpus_per_server``. wormsim times traffic inside a server
with its NVLink model, so the NVSwitches and their links are taken out of the packet fabric and
their rate becomes the per-GPU NVLink rate (the sum of a GPU's NVSwitch links). The remaining
nodes are renumbered hosts first, then switches, each in ascending file id, and routed with ECMP
like the built-in fabrics.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.formats.hpcc_io import check_header, line_tokens, read_body

__all__ = ["FabricFile", "read_fabric_file", "cached_fabric_file", "fabric_topology"]


@dataclass(frozen=True)
class FabricFile:
    """A fabric file, read.

    Attributes
    ----------
    path : Path
    format : {"hpcc", "simai"}
    gpus : int
        Hosts (GPUs) of the fabric.
    gpus_per_server : int or None
        SimAI header; ``None`` for an HPCC file (the experiment's ``cluster.gpus_per_node``).
    nvlink_bps : int or None
        Per-GPU NVLink rate from the NVSwitch links; ``None`` without NVSwitches.
    gpu_type : str or None
        SimAI header (``H100``, ...).
    n_nodes : int
        Nodes of the packet fabric (NVSwitches removed).
    switches : int32[k]
        Switch ids of the packet fabric (after renumbering).
    links : list of (a, b, rate_bps, delay_ps)
        Fabric links, renumbered, in file order.
    """

    path: Path
    format: Literal["hpcc", "simai"]
    gpus: int
    gpus_per_server: int | None
    nvlink_bps: int | None
    gpu_type: str | None
    n_nodes: int
    switches: np.ndarray
    links: list[tuple[int, int, int, int]]

    @property
    def link_rates_bps(self) -> list[int]:
        """The distinct fabric link rates, ascending."""
        return sorted({r for _, _, r, _ in self.links})


def _int_fields(p: Path, lineno: int, head: list[str], names: str) -> list[int]:
    try:
        return [int(x) for x in head]
    except ValueError:
        raise NetsimInputError(
            f"{p}:{lineno}: expected integers '{names}', got {' '.join(head)!r}"
        ) from None


def _header(p: Path, toks: list[tuple[int, list[str]]]) -> tuple[str, list[int], str | None]:
    """``(format, counts, gpu_type)``; counts are ``[n, s, m]`` or ``[n, gps, nv, s, m]``."""
    if not toks:
        raise NetsimInputError(f"{p}: empty; the first line is the header")
    lineno, head = toks[0]
    if len(head) == 3:
        return "hpcc", _int_fields(p, lineno, head, "<node_num> <switch_num> <link_num>"), None
    if len(head) in (5, 6):
        names = "<node_num> <gpus_per_server> <nvswitch_num> <switch_num> <link_num>"
        counts = _int_fields(p, lineno, head[:5], names)
        return "simai", counts, head[5] if len(head) == 6 else None
    raise NetsimInputError(
        f"{p}:{lineno}: the header has {len(head)} fields; expected HPCC's '<node_num> "
        "<switch_num> <link_num>' or SimAI's '<node_num> <gpus_per_server> <nvswitch_num> "
        "<switch_num> <link_num> <gpu_type>'"
    )


def _servers_from_nvswitches(
    p: Path, gpus: np.ndarray, nv_links: dict[int, list[tuple[int, int]]], gps: int
) -> int | None:
    """Check that NVSwitches join the GPUs server by server; the per-GPU NVLink rate."""
    if not nv_links:
        return None
    index = {int(g): i for i, g in enumerate(gpus)}
    per_gpu: dict[int, int] = {}
    server_of_switch: dict[int, int] = {}
    for nv, ends in nv_links.items():
        for gpu, rate in ends:
            if gpu not in index:
                raise NetsimInputError(
                    f"{p}: NVSwitch {nv} links node {gpu}, which is not a GPU; NVSwitches "
                    "connect the GPUs of one server"
                )
            server = index[gpu] // gps
            if server_of_switch.setdefault(nv, server) != server:
                raise NetsimInputError(
                    f"{p}: NVSwitch {nv} links GPUs of servers {server_of_switch[nv]} and "
                    f"{server} (gpus_per_server {gps}); SimAI numbers GPUs server by server"
                )
            per_gpu[index[gpu]] = per_gpu.get(index[gpu], 0) + rate
    rates = set(per_gpu.values())
    if len(per_gpu) != len(gpus) or len(rates) != 1:
        raise NetsimInputError(
            f"{p}: every GPU needs the same NVSwitch links (found NVLink on {len(per_gpu)} of "
            f"{len(gpus)} GPUs, rates {sorted(rates)} bps)"
        )
    return rates.pop()


def read_fabric_file(path: str | Path) -> FabricFile:
    """Parse an HPCC ``topology.txt`` or a SimAI topology file (told apart by the header).

    Raises
    ------
    NetsimInputError
        Naming the file, the line, the value and the fix.
    """
    p = Path(path)
    toks = line_tokens(p, "topology")
    fmt, counts, gpu_type = _header(p, toks)
    if fmt == "hpcc":
        n, s, m = counts
        gps, nv = None, 0
    else:
        n, gps, nv, s, m = counts
        if not 1 <= gps <= 1024:
            raise NetsimInputError(f"{p}:1: gpus_per_server is {gps}; it must be 1..1024")
        if nv < 0:
            raise NetsimInputError(f"{p}:1: nvswitch_num is {nv}; it must be >= 0")
    check_header(p, toks[0][0], n, nv + s, m, len(toks) - 1)
    ids, links, linenos = read_body(p, toks, n, nv + s, m)
    nvswitch = set(ids[:nv])
    is_switch = np.zeros(n, bool)
    is_switch[ids] = True
    gpus = np.flatnonzero(~is_switch)
    if gpus.size == 0:
        raise NetsimInputError(f"{p}: every node is a switch; a fabric needs GPUs (hosts)")
    if gps is not None and gpus.size % gps:
        raise NetsimInputError(
            f"{p}: {gpus.size} GPUs are not a whole number of servers of {gps} "
            "(gpus_per_server in the header)"
        )
    fabric = np.flatnonzero(is_switch & ~np.isin(np.arange(n), list(nvswitch)))
    new_id = np.full(n, -1, np.int64)
    new_id[gpus] = np.arange(gpus.size)
    new_id[fabric] = gpus.size + np.arange(fabric.size)
    kept: list[tuple[int, int, int, int]] = []
    nv_links: dict[int, list[tuple[int, int]]] = {}
    for (a, b, rate, delay), lineno in zip(links, linenos, strict=True):
        if a in nvswitch or b in nvswitch:
            sw_end, other = (a, b) if a in nvswitch else (b, a)
            if other in nvswitch or is_switch[other]:
                raise NetsimInputError(
                    f"{p}:{lineno}: NVSwitch {sw_end} links switch {other}; NVSwitches only "
                    "connect the GPUs of their server"
                )
            nv_links.setdefault(sw_end, []).append((other, rate))
            continue
        kept.append((int(new_id[a]), int(new_id[b]), rate, delay))
    nvlink = _servers_from_nvswitches(p, gpus, nv_links, gps) if gps else None
    return FabricFile(
        path=p,
        format=fmt,  # type: ignore[arg-type]
        gpus=int(gpus.size),
        gpus_per_server=gps,
        nvlink_bps=nvlink,
        gpu_type=gpu_type,
        n_nodes=int(gpus.size + fabric.size),
        switches=np.arange(gpus.size, gpus.size + fabric.size, dtype=np.int32),
        links=kept,
    )


_CACHE: dict[tuple[str, int, int], FabricFile] = {}


def cached_fabric_file(path: str | Path) -> FabricFile:
    """:func:`read_fabric_file`, memoised on the file's path, size and modification time."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        raise NetsimInputError(f"cannot read the topology file {p}: {exc.strerror}") from None
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = read_fabric_file(p)
    return _CACHE[key]


def fabric_topology(fabric: FabricFile, gpus: int, gpus_per_node: int, nvlink_bps: int) -> Topology:
    """The packet fabric of a file for a run on its first ``gpus`` GPUs.

    Parameters
    ----------
    fabric : FabricFile
    gpus : int
        Ranks of the workload: GPU (= rank) ``i`` is host ``i``; hosts beyond ``gpus`` stay idle.
    gpus_per_node : int
        Server size (must equal a SimAI file's ``gpus_per_server``).
    nvlink_bps : int
        Per-GPU NVLink rate (a SimAI file's NVSwitch links take precedence).

    Raises
    ------
    NetsimInputError
        More ranks than the file has GPUs, or a server size the file contradicts.
    """
    if gpus > fabric.gpus:
        raise NetsimInputError(
            f"{fabric.path}: the workload has {gpus} GPUs but the topology only {fabric.gpus}"
        )
    if fabric.gpus_per_server is not None and fabric.gpus_per_server != gpus_per_node:
        raise NetsimInputError(
            f"{fabric.path}: gpus_per_server is {fabric.gpus_per_server} but "
            f"cluster.gpus_per_node is {gpus_per_node}; make them equal"
        )
    server = np.full(fabric.n_nodes, -1, np.int32)
    server[:gpus] = np.arange(gpus, dtype=np.int32) // gpus_per_node  # idle hosts: -1
    return Topology.from_links(
        fabric.n_nodes,
        fabric.switches,
        fabric.links,
        host_server=server,
        nvlink_rate_bps=fabric.nvlink_bps or nvlink_bps,
    )
