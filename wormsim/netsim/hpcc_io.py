"""Read and write HPCC ns-3 ``topology.txt``, ``flow.txt`` and ``fct.txt``; flows -> DAG.

Node id <-> IP: ``ip = 0x0b000001 + (id // 256) * 0x10000 + (id % 256) * 0x100`` and
``id = (ip >> 8) & 0xffff``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from wormsim.collective.dag import KIND_DELAY, KIND_FLOW, DagArrays
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.network_config import parse_rate_bps
from wormsim.netsim.routing import host_ip
from wormsim.netsim.topology import Topology

__all__ = [
    "FlowSet",
    "read_topology",
    "write_topology",
    "read_flows",
    "write_flows",
    "flows_to_dag",
    "write_fct",
    "read_fct",
    "ip_to_node",
    "node_to_ip",
    "parse_time_ps",
]

_TIME_UNITS = {"s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3, "ps": 1}


def node_to_ip(node: int) -> int:
    """HPCC host IP of a node id."""
    return host_ip(node)


def ip_to_node(ip: int) -> int:
    """Node id of an HPCC host IP."""
    return (ip >> 8) & 0xFFFF


def parse_time_ps(text: str) -> int:
    """Parse an ns-3 time string (``0.001ms``, ``1us``, ``1000ns``; bare number = seconds)."""
    m = re.fullmatch(r"([0-9.eE+-]+)(s|ms|us|ns|ps)?", text.strip())
    if not m:
        raise NetsimInputError(f"cannot parse the time {text!r}; write e.g. 0.001ms or 1us")
    return int(round(float(m.group(1)) * _TIME_UNITS[m.group(2) or "s"]))


def _fmt_rate(bps: int) -> str:
    for unit, f in (("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3)):
        if bps % f == 0:
            return f"{bps // f}{unit}"
    return f"{bps}bps"


def _fmt_delay(ps: int) -> str:
    return f"{ps / 1e9:g}ms"


def _lines(path: Path, what: str) -> list[str]:
    if not path.is_file():
        raise NetsimInputError(f"{what} file {path} does not exist")
    return path.read_text().splitlines()


def read_topology(path: str | Path) -> Topology:
    """Parse an HPCC ``topology.txt`` (``N S L``, switch ids, ``a b rate delay err`` lines)."""
    p = Path(path)
    toks = [(i + 1, ln.split()) for i, ln in enumerate(_lines(p, "topology")) if ln.strip()]
    if len(toks) < 1 or len(toks[0][1]) < 3:
        raise NetsimInputError(f"{p}:1: expected '<node_num> <switch_num> <link_num>'")
    try:
        n, s, m = (int(x) for x in toks[0][1][:3])
    except ValueError:
        raise NetsimInputError(f"{p}:1: expected three integers") from None
    switches: list[int] = []
    k = 1
    while len(switches) < s:
        if k >= len(toks):
            raise NetsimInputError(f"{p}: expected {s} switch ids, found {len(switches)}")
        try:
            switches += [int(x) for x in toks[k][1]]
        except ValueError:
            raise NetsimInputError(f"{p}:{toks[k][0]}: switch ids must be integers") from None
        k += 1
    if len(switches) != s:
        raise NetsimInputError(f"{p}: expected {s} switch ids, found {len(switches)}")
    if any(not 0 <= x < n for x in switches):
        raise NetsimInputError(f"{p}: a switch id is outside 0..{n - 1}")
    links = []
    for lineno, parts in toks[k:]:
        if len(parts) < 4:
            raise NetsimInputError(f"{p}:{lineno}: expected '<src> <dst> <rate> <delay> <err>'")
        try:
            a, b = int(parts[0]), int(parts[1])
        except ValueError:
            raise NetsimInputError(f"{p}:{lineno}: node ids must be integers") from None
        if not (0 <= a < n and 0 <= b < n):
            raise NetsimInputError(f"{p}:{lineno}: unknown node id (valid: 0..{n - 1})")
        try:
            rate = parse_rate_bps(parts[2])
            delay = parse_time_ps(parts[3])
        except NetsimInputError as exc:
            raise NetsimInputError(f"{p}:{lineno}: {exc}") from None
        links.append((a, b, rate, delay))
    if len(links) != m:
        raise NetsimInputError(f"{p}: header says {m} links but {len(links)} link lines follow")
    return Topology.from_links(n, switches, links)


def write_topology(topo: Topology, path: str | Path) -> None:
    """Write an HPCC ``topology.txt`` (ports ``2i`` are the links, in order)."""
    sw = np.flatnonzero(topo.is_switch)
    lines = [f"{topo.n_nodes} {sw.size} {topo.n_ports // 2}", " ".join(map(str, sw.tolist()))]
    for i in range(0, topo.n_ports, 2):
        lines.append(
            f"{topo.port_node[i]} {topo.port_peer[i]} {_fmt_rate(int(topo.port_rate_bps[i]))}"
            f" {_fmt_delay(int(topo.port_delay_ps[i]))} 0"
        )
    Path(path).write_text("\n".join(lines) + "\n")


@dataclass(frozen=True)
class FlowSet:
    """Flows of a ``flow.txt``: flow ``i`` is line ``i`` (0-based)."""

    src: np.ndarray
    dst: np.ndarray
    pg: np.ndarray
    dport: np.ndarray
    size_bytes: np.ndarray
    start_ps: np.ndarray

    @property
    def n(self) -> int:
        """Number of flows."""
        return int(self.src.shape[0])


def read_flows(path: str | Path, topo: Topology | None = None) -> FlowSet:
    """Parse an HPCC ``flow.txt``; with ``topo``, check that both endpoints are hosts."""
    p = Path(path)
    toks = [(i + 1, ln.split()) for i, ln in enumerate(_lines(p, "flow")) if ln.strip()]
    if not toks:
        raise NetsimInputError(f"{p}: empty; the first line must be the number of flows")
    try:
        n = int(toks[0][1][0])
    except ValueError:
        raise NetsimInputError(f"{p}:1: the first line must be the number of flows") from None
    rows = []
    for lineno, parts in toks[1:]:
        if len(parts) != 6:
            raise NetsimInputError(
                f"{p}:{lineno}: expected '<src> <dst> <pg> <dport> <size_bytes> <start_s>'"
            )
        try:
            a, b, pg, dport, size = (int(x) for x in parts[:5])
            start = float(parts[5])
        except ValueError:
            raise NetsimInputError(f"{p}:{lineno}: cannot parse the numbers") from None
        if size < 0 or start < 0:
            raise NetsimInputError(f"{p}:{lineno}: size and start time must be >= 0")
        if topo is not None:
            for x in (a, b):
                if not 0 <= x < topo.n_nodes:
                    raise NetsimInputError(f"{p}:{lineno}: unknown node id {x}")
                if topo.is_switch[x]:
                    raise NetsimInputError(
                        f"{p}:{lineno}: node {x} is a switch; flows must run between hosts"
                    )
        rows.append((a, b, pg, dport, size, int(start * 1e9) * 1000))
    if len(rows) != n:
        raise NetsimInputError(f"{p}: header says {n} flows but {len(rows)} flow lines follow")
    arr = np.array(rows, dtype=np.int64).reshape(-1, 6)
    return FlowSet(
        src=arr[:, 0].astype(np.int32),
        dst=arr[:, 1].astype(np.int32),
        pg=arr[:, 2].astype(np.int32),
        dport=arr[:, 3].astype(np.int32),
        size_bytes=arr[:, 4],
        start_ps=arr[:, 5],
    )


def write_flows(flows: FlowSet, path: str | Path) -> None:
    """Write an HPCC ``flow.txt``."""
    lines = [str(flows.n)]
    for i in range(flows.n):
        lines.append(
            f"{flows.src[i]} {flows.dst[i]} {flows.pg[i]} {flows.dport[i]} "
            f"{flows.size_bytes[i]} {flows.start_ps[i] / 1e12:.9f}"
        )
    Path(path).write_text("\n".join(lines) + "\n")


def flows_to_dag(flows: FlowSet) -> tuple[DagArrays, np.ndarray]:
    """DAG of a flow set: node ``2i`` is a delay of the start time, node ``2i+1`` flow ``i``.

    Returns
    -------
    dag : DagArrays
    flow_node : int64[n], the DAG node of each flow.
    """
    n = flows.n
    kind = np.empty(2 * n, np.int8)
    kind[0::2], kind[1::2] = KIND_DELAY, KIND_FLOW
    src = np.full(2 * n, -1, np.int32)
    dst = np.full(2 * n, -1, np.int32)
    src[1::2], dst[1::2] = flows.src, flows.dst
    size = np.zeros(2 * n, np.int64)
    size[1::2] = flows.size_bytes
    dur = np.zeros(2 * n, np.int64)
    dur[0::2] = flows.start_ps
    dep = np.zeros(2 * n, np.int32)
    dep[1::2] = 1
    offs = np.zeros(2 * n + 1, np.int64)
    offs[0::2] = np.arange(n + 1)
    offs[1::2] = np.arange(1, n + 1)
    dag = DagArrays(
        kind=kind,
        src=src,
        dst=dst,
        rank=np.full(2 * n, -1, np.int32),
        size_bytes=size,
        duration_ps=dur,
        dep_count=dep,
        child_offsets=offs,
        child_index=np.arange(1, 2 * n, 2, dtype=np.int64),
    )
    return dag, np.arange(1, 2 * n, 2, dtype=np.int64)


def write_fct(
    path: str | Path, src, dst, sport, dport, size, start_ps, fct_ps, standalone_ps, order=None
) -> None:
    """Write an HPCC ``fct.txt`` (times in ns), rows in ``order`` (default: completion order)."""
    if order is None:
        order = np.lexsort((np.arange(len(src)), np.asarray(start_ps) + np.asarray(fct_ps)))
    lines = [
        f"{node_to_ip(int(src[i])):08x} {node_to_ip(int(dst[i])):08x} {int(sport[i])} "
        f"{int(dport[i])} {int(size[i])} {int(start_ps[i]) // 1000} {int(fct_ps[i]) // 1000} "
        f"{int(standalone_ps[i]) // 1000}"
        for i in order
    ]
    Path(path).write_text("\n".join(lines) + ("\n" if lines else ""))


def read_fct(path: str | Path) -> pl.DataFrame:
    """Parse an HPCC ``fct.txt`` into a table (src/dst node ids, times in ns)."""
    p = Path(path)
    rows = []
    for lineno, ln in enumerate(_lines(p, "fct"), 1):
        parts = ln.split()
        if not parts:
            continue
        if len(parts) != 8:
            raise NetsimInputError(f"{p}:{lineno}: expected 8 fields")
        try:
            rows.append(
                (
                    ip_to_node(int(parts[0], 16)),
                    ip_to_node(int(parts[1], 16)),
                    *(int(x) for x in parts[2:]),
                )
            )
        except ValueError:
            raise NetsimInputError(f"{p}:{lineno}: cannot parse the fields") from None
    cols = ["src", "dst", "sport", "dport", "size_bytes", "start_ns", "fct_ns", "standalone_fct_ns"]
    return pl.DataFrame(rows, schema=cols, orient="row")
