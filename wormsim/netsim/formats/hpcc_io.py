"""Read and write HPCC ns-3 ``topology.txt``, ``flow.txt`` and ``fct.txt``; flows -> DAG.

Node id <-> IP: ``ip = 0x0b000001 + (id // 256) * 0x10000 + (id % 256) * 0x100`` and
``id = (ip >> 8) & 0xffff``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from wormsim.collective.dag import KIND_DELAY, KIND_FLOW, DagArrays
from wormsim.inputs import MAX_TIME_PS, format_ps, read_text
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.routing import host_ip
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import check_rate_bps, parse_rate_bps
from wormsim.rundir import write_text
from wormsim.units import BPS_PER_BYTE_PER_PS, NS_PER_S_F, PS_PER_MS_F, PS_PER_NS, PS_PER_S_F

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
    "check_scenario_time",
    "MAX_NODES",
    "MAX_FLOW_BYTES",
    "line_tokens",
    "check_header",
    "read_body",
]

#: Most nodes of an HPCC topology: node ids map to IPv4 addresses through 16 bits.
MAX_NODES = 1 << 16
#: Longest one-way link delay accepted (1 s).
MAX_LINK_DELAY_PS = 10**12
#: Largest flow accepted (2**48 bytes, 256 TiB).
MAX_FLOW_BYTES = 1 << 48

_TIME_UNITS = {"s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3, "ps": 1}


def node_to_ip(node: int) -> int:
    """HPCC host IP of a node id."""
    return host_ip(node)


def ip_to_node(ip: int) -> int:
    """Node id of an HPCC host IP."""
    return (ip >> 8) & 0xFFFF


def parse_time_ps(text: str) -> int:
    """Parse an ns-3 time string (``0.001ms``, ``1us``, ``1000ns``; bare number = seconds).

    Raises
    ------
    NetsimInputError
        Unparseable, not finite, negative, or beyond :data:`~wormsim.inputs.MAX_TIME_PS`.
    """
    m = re.fullmatch(r"([0-9.eE+-]+|[+-]?(?:inf|nan))(s|ms|us|ns|ps)?", text.strip(), re.I)
    if not m:
        raise NetsimInputError(f"cannot parse the time {text!r}; write e.g. 0.001ms or 1us")
    try:
        value = float(m.group(1)) * _TIME_UNITS[m.group(2) or "s"]
    except ValueError:
        raise NetsimInputError(
            f"cannot parse the time {text!r}; write e.g. 0.001ms or 1us"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise NetsimInputError(f"the time {text!r} must be a finite number >= 0")
    if value > MAX_TIME_PS:
        raise NetsimInputError(
            f"the time {text!r} is beyond the simulated-time range ({format_ps(MAX_TIME_PS)})"
        )
    return int(round(value))


def _fmt_rate(bps: int) -> str:
    for unit, f in (("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3)):
        if bps % f == 0:
            return f"{bps // f}{unit}"
    return f"{bps}bps"


def _fmt_delay(ps: int) -> str:
    return f"{ps / PS_PER_MS_F:g}ms"


def _lines(path: Path, what: str) -> list[str]:
    return read_text(path, what, NetsimInputError).splitlines()


def line_tokens(path: Path, what: str) -> list[tuple[int, list[str]]]:
    """``(line number, tokens)`` of the non-blank lines of a file."""
    return [(i + 1, ln.split()) for i, ln in enumerate(_lines(path, what)) if ln.strip()]


def _header_counts(p: Path, toks: list[tuple[int, list[str]]]) -> tuple[int, int, int]:
    """The ``N S L`` header of a topology, checked before anything is allocated."""
    if not toks or len(toks[0][1]) != 3:
        raise NetsimInputError(f"{p}:1: expected '<node_num> <switch_num> <link_num>'")
    lineno, head = toks[0]
    try:
        n, s, m = (int(x) for x in head)
    except ValueError:
        raise NetsimInputError(
            f"{p}:{lineno}: expected three integers '<node_num> <switch_num> <link_num>', "
            f"got {' '.join(head)!r}"
        ) from None
    check_header(p, lineno, n, s, m, len(toks) - 1)
    return n, s, m


def check_header(p: Path, lineno: int, n: int, s: int, m: int, present: int) -> None:
    """Refuse header counts (``n`` nodes, ``s`` switches, ``m`` links) before allocating."""
    if not 1 <= n <= MAX_NODES:
        raise NetsimInputError(
            f"{p}:{lineno}: node_num is {n}; it must be 1..{MAX_NODES} (HPCC maps node ids to "
            "IPv4 addresses with 16 bits)"
        )
    if not 0 <= s <= n:
        raise NetsimInputError(f"{p}:{lineno}: switch_num is {s}; it must be 0..node_num ({n})")
    if not 0 <= m <= present:
        raise NetsimInputError(
            f"{p}:{lineno}: link_num is {m} but only {present} lines follow the header; "
            "make link_num the number of link lines"
        )


def _read_switches(p: Path, toks: list[tuple[int, list[str]]], n: int, s: int) -> tuple[list, int]:
    """The ``s`` switch ids after the header, and the index of the first link line."""
    switches: list[int] = []
    k = 1
    while len(switches) < s:
        if k >= len(toks):
            raise NetsimInputError(f"{p}: expected {s} switch ids, found {len(switches)}")
        lineno, parts = toks[k]
        try:
            ids = [int(x) for x in parts]
        except ValueError:
            raise NetsimInputError(f"{p}:{lineno}: switch ids must be integers") from None
        for x in ids:
            if not 0 <= x < n:
                raise NetsimInputError(f"{p}:{lineno}: switch id {x} is outside 0..{n - 1}")
        switches += ids
        k += 1
    if len(switches) != s:
        raise NetsimInputError(f"{p}: expected {s} switch ids, found {len(switches)}")
    if len(set(switches)) != s:
        raise NetsimInputError(f"{p}: a switch id is listed twice; list each switch once")
    return switches, k


def _read_link(p: Path, lineno: int, parts: list[str], n: int) -> tuple[int, int, int, int]:
    """One ``a b rate delay [err]`` line, every value checked."""
    where = f"{p}:{lineno}"
    if len(parts) not in (4, 5):
        raise NetsimInputError(f"{where}: expected '<src> <dst> <rate> <delay> <error_rate>'")
    try:
        a, b = int(parts[0]), int(parts[1])
    except ValueError:
        raise NetsimInputError(f"{where}: node ids must be integers") from None
    if not (0 <= a < n and 0 <= b < n):
        raise NetsimInputError(f"{where}: unknown node id (valid: 0..{n - 1})")
    if a == b:
        raise NetsimInputError(f"{where}: link {a} {b} is a self-loop; connect two nodes")
    try:
        rate = check_rate_bps(parse_rate_bps(parts[2]), "the link rate")
        delay = parse_time_ps(parts[3])
    except NetsimInputError as exc:
        raise NetsimInputError(f"{where}: {exc}") from None
    if delay > MAX_LINK_DELAY_PS:
        raise NetsimInputError(
            f"{where}: link delay {parts[3]!r} is over 1 s; write the one-way propagation delay "
            "(e.g. 0.001ms)"
        )
    if len(parts) == 5:
        try:
            err = float(parts[4])
        except ValueError:
            raise NetsimInputError(f"{where}: error rate {parts[4]!r} is not a number") from None
        if err != 0:
            raise NetsimInputError(
                f"{where}: error rate {parts[4]!r}: packet loss on links is not modelled; set 0"
            )
    return a, b, int(rate), delay


def read_topology(path: str | Path) -> Topology:
    """Parse an HPCC ``topology.txt`` (``N S L``, switch ids, ``a b rate delay err`` lines).

    Raises
    ------
    NetsimInputError
        Naming the file, the line, the value and the fix.
    """
    p = Path(path)
    toks = line_tokens(p, "topology")
    n, s, m = _header_counts(p, toks)
    switches, links, _ = read_body(p, toks, n, s, m)
    return Topology.from_links(n, switches, links)


def read_body(
    p: Path, toks: list[tuple[int, list[str]]], n: int, s: int, m: int
) -> tuple[list[int], list[tuple[int, int, int, int]], list[int]]:
    """The ``s`` switch ids and ``m`` links after a topology header, and each link's line.

    ``toks`` are the file's ``(line number, tokens)``, header first.
    """
    switches, k = _read_switches(p, toks, n, s)
    links = [_read_link(p, lineno, parts, n) for lineno, parts in toks[k:]]
    if len(links) != m:
        raise NetsimInputError(f"{p}: header says {m} links but {len(links)} link lines follow")
    return switches, links, [lineno for lineno, _ in toks[k:]]


def write_topology(topo: Topology, path: str | Path) -> None:
    """Write an HPCC ``topology.txt`` (ports ``2i`` are the links, in order)."""
    sw = np.flatnonzero(topo.is_switch)
    lines = [f"{topo.n_nodes} {sw.size} {topo.n_ports // 2}", " ".join(map(str, sw.tolist()))]
    for i in range(0, topo.n_ports, 2):
        lines.append(
            f"{topo.port_node[i]} {topo.port_peer[i]} {_fmt_rate(int(topo.port_rate_bps[i]))}"
            f" {_fmt_delay(int(topo.port_delay_ps[i]))} 0"
        )
    write_text(Path(path), "\n".join(lines) + "\n")


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


def _read_flow(
    p: Path, lineno: int, parts: list[str], topo: Topology | None
) -> tuple[int, int, int, int, int, int]:
    """One ``src dst pg dport size start_s`` line, every value checked."""
    where = f"{p}:{lineno}"
    if len(parts) != 6:
        raise NetsimInputError(
            f"{where}: expected '<src> <dst> <pg> <dport> <size_bytes> <start_s>'"
        )
    try:
        a, b, pg, dport, size = (int(x) for x in parts[:5])
        start = float(parts[5])
    except ValueError:
        raise NetsimInputError(
            f"{where}: cannot parse the numbers; src, dst, pg, dport and size are integers, "
            "the start time is in seconds"
        ) from None
    if a == b:
        raise NetsimInputError(
            f"{where}: flow from node {a} to itself; a flow needs two different hosts"
        )
    if not 0 <= pg <= 7:
        raise NetsimInputError(f"{where}: pg is {pg}; ns-3 has priority groups 0..7")
    if not 0 <= dport <= 0xFFFF:
        raise NetsimInputError(f"{where}: dport is {dport}; it must be a port 0..65535")
    if not 1 <= size <= MAX_FLOW_BYTES:
        raise NetsimInputError(
            f"{where}: size is {size} bytes; it must be 1..{MAX_FLOW_BYTES} (2^48)"
        )
    if not (math.isfinite(start) and 0 <= start * PS_PER_S_F <= MAX_TIME_PS):
        raise NetsimInputError(
            f"{where}: start time {parts[5]!r} s must be a finite number of seconds in "
            f"0..{MAX_TIME_PS / PS_PER_S_F:.3g} ({format_ps(MAX_TIME_PS)})"
        )
    if topo is not None:
        for x in (a, b):
            if not 0 <= x < topo.n_nodes:
                raise NetsimInputError(
                    f"{where}: unknown node id {x} (the topology has 0..{topo.n_nodes - 1})"
                )
            if topo.is_switch[x]:
                raise NetsimInputError(
                    f"{where}: node {x} is a switch; flows must run between hosts"
                )
    return a, b, pg, dport, size, int(start * NS_PER_S_F) * PS_PER_NS


def read_flows(path: str | Path, topo: Topology | None = None) -> FlowSet:
    """Parse an HPCC ``flow.txt``; with ``topo``, check that both endpoints are hosts.

    Raises
    ------
    NetsimInputError
        Naming the file, the line, the value and the fix.
    """
    p = Path(path)
    toks = line_tokens(p, "flow")
    if not toks:
        raise NetsimInputError(f"{p}: empty; the first line must be the number of flows")
    lineno, head = toks[0]
    try:
        (n,) = (int(x) for x in head)
    except ValueError:
        raise NetsimInputError(
            f"{p}:{lineno}: the first line must be the number of flows, not {' '.join(head)!r}"
        ) from None
    rows = [_read_flow(p, ln, parts, topo) for ln, parts in toks[1:]]
    if len(rows) != n:
        raise NetsimInputError(f"{p}: header says {n} flows but {len(rows)} flow lines follow")
    pgs = {r[2] for r in rows}
    if len(pgs) > 1:
        raise NetsimInputError(
            f"{p}: flows use priority groups {sorted(pgs)}; wormsim runs all data in one class, "
            "so give every flow the same pg"
        )
    arr = np.array(rows, dtype=np.int64).reshape(-1, 6)
    return FlowSet(
        src=arr[:, 0].astype(np.int32),
        dst=arr[:, 1].astype(np.int32),
        pg=arr[:, 2].astype(np.int32),
        dport=arr[:, 3].astype(np.int32),
        size_bytes=arr[:, 4],
        start_ps=arr[:, 5],
    )


def check_scenario_time(topo: Topology, flows: FlowSet, payload: int, source: str) -> None:
    """Refuse flows that could run the simulated clock past :data:`MAX_TIME_PS`.

    The bound is the last start plus the time to send every flow's bytes (payload and
    per-packet headers) one after another through the slowest link.

    Raises
    ------
    NetsimInputError
        Naming ``source`` (the flow file), the bound and the limit.
    """
    if flows.n == 0 or topo.n_ports == 0:
        return
    packets = (flows.size_bytes.astype(np.float64) + payload - 1) // payload
    wire = float(np.sum(flows.size_bytes.astype(np.float64) + packets * 128))
    slowest = float(topo.port_rate_bps.min())
    bound = float(flows.start_ps.max()) + wire * BPS_PER_BYTE_PER_PS / slowest
    if bound > MAX_TIME_PS:
        raise NetsimInputError(
            f"{source}: the flows could need {format_ps(bound)} of simulated time (last start "
            f"{format_ps(float(flows.start_ps.max()))}, then {wire:.3g} bytes through the slowest "
            f"link of {slowest:.3g} bps), beyond the {format_ps(MAX_TIME_PS)} the simulator can "
            "represent; shrink the flows or speed up the links"
        )


def write_flows(flows: FlowSet, path: str | Path) -> None:
    """Write an HPCC ``flow.txt``."""
    lines = [str(flows.n)]
    for i in range(flows.n):
        lines.append(
            f"{flows.src[i]} {flows.dst[i]} {flows.pg[i]} {flows.dport[i]} "
            f"{flows.size_bytes[i]} {flows.start_ps[i] / PS_PER_S_F:.9f}"
        )
    write_text(Path(path), "\n".join(lines) + "\n")


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
        f"{int(dport[i])} {int(size[i])} {int(start_ps[i]) // PS_PER_NS} "
        f"{int(fct_ps[i]) // PS_PER_NS} {int(standalone_ps[i]) // PS_PER_NS}"
        for i in order
    ]
    write_text(Path(path), "\n".join(lines) + ("\n" if lines else ""))


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
