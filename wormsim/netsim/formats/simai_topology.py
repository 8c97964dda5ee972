"""Write a fabric as a SimAI topology file (the reader is :mod:`.topology_file`).

The file has SimAI's header ``<node_num> <gpus_per_server> <nvswitch_num> <switch_num>
<link_num> <gpu_type>``, the switch line (NVSwitch ids first, then the fabric switches), then one
``<a> <b> <rate> <delay> <error_rate>`` line per link. It is written so that reading it back
gives the same packet fabric, node for node and port for port:

- hosts keep their ids ``0 … G-1`` and fabric switches theirs (``G …``); one NVSwitch per server
  is appended after them, so the reader's renumbering (hosts, then fabric switches, in ascending
  id) is the identity;
- fabric links come first, in the topology's link order (port ``2i`` is link ``i``), so ECMP sees
  the same ports; then each GPU's link to its server's NVSwitch at the per-GPU NVLink rate (the
  reader sums a GPU's NVSwitch links into that rate).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np

from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.formats.hpcc_io import write_topology
from wormsim.rundir import write_text

__all__ = ["FORMATS", "simai_topology_text", "write_fabric"]

#: The formats :func:`write_fabric` writes.
FORMATS = ("simai", "hpcc")


def _rate(bps: int) -> str:
    for unit, f in (("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3)):
        if bps % f == 0:
            return f"{bps // f}{unit}"
    return f"{bps}bps"


def _delay(ps: int) -> str:
    """An exact decimal in ms (``500000`` ps -> ``0.0005ms``)."""
    text = format(Decimal(int(ps)) / Decimal(10**9), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}ms"


def simai_topology_text(topo: Topology, gpus_per_node: int, gpu_type: str = "H100") -> str:
    """The SimAI topology file of a fabric (see the module docstring).

    Parameters
    ----------
    topo : Topology
        A fabric whose hosts are ``0 … G-1`` (the built-in fabrics and files read by
        :func:`~wormsim.netsim.formats.topology_file.fabric_topology` are).
    gpus_per_node : int
        GPUs per server: one NVSwitch each.
    gpu_type : str
        The header's last field (SimAI reads it; wormsim does not use it).

    Raises
    ------
    NetsimInputError
        Hosts that are not ``0 … G-1`` or not a whole number of servers.
    """
    hosts = np.flatnonzero(~topo.is_switch)
    g = int(hosts.size)
    if g == 0 or not np.array_equal(hosts, np.arange(g)):
        raise NetsimInputError("the fabric's hosts are not nodes 0..G-1; write it with hpcc")
    if g % gpus_per_node:
        raise NetsimInputError(
            f"the fabric has {g} hosts, not a whole number of servers of {gpus_per_node} GPUs "
            "(SimAI numbers GPUs server by server); export it with --format hpcc"
        )
    fabric_sw = np.flatnonzero(topo.is_switch)
    servers = g // gpus_per_node
    nvlink = int(topo.nvlink_rate_bps)
    nv_count = servers if nvlink > 0 else 0
    nv_ids = list(range(topo.n_nodes, topo.n_nodes + nv_count))
    links = [
        f"{topo.port_node[i]} {topo.port_peer[i]} {_rate(int(topo.port_rate_bps[i]))} "
        f"{_delay(int(topo.port_delay_ps[i]))} 0"
        for i in range(0, topo.n_ports, 2)
    ]
    for gpu in range(g if nv_count else 0):
        links.append(f"{gpu} {nv_ids[gpu // gpus_per_node]} {_rate(nvlink)} 0ms 0")
    header = (
        f"{topo.n_nodes + nv_count} {gpus_per_node} {nv_count} {fabric_sw.size} {len(links)} "
        f"{gpu_type}"
    )
    switch_line = " ".join(str(x) for x in [*nv_ids, *fabric_sw.tolist()])
    return "\n".join([header, switch_line, *links]) + "\n"


def write_fabric(
    topo: Topology,
    path: str | Path,
    format: str = "simai",
    gpus_per_node: int = 8,
    gpu_type: str = "H100",
) -> Path:
    """Write a fabric as a SimAI topology file (``format="simai"``) or an HPCC
    ``topology.txt`` (``"hpcc"``: no NVLink, the experiment's ``cluster`` gives it), atomically.

    Raises
    ------
    NetsimInputError
        An unknown format, or a fabric SimAI's format cannot say (see
        :func:`simai_topology_text`).
    """
    path = Path(path)
    if format == "hpcc":
        write_topology(topo, path)
    elif format == "simai":
        write_text(path, simai_topology_text(topo, gpus_per_node, gpu_type))
    else:
        raise NetsimInputError(f"--format must be one of {', '.join(FORMATS)}, not {format!r}")
    return path
