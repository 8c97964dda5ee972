"""NCCL-like choice of algorithm, protocol and channel count (after NCCL's src/graph/tuning.cc).

For every candidate (algorithm, protocol) the time is ``latency + bytes / (1000 * algBw)`` us and
the minimum wins; then channels are dropped while the message is too small to feed them.

The candidates of ``auto`` and whether the model prices them are columns of
:data:`wormsim.collective.algorithms.TABLE`. Simplifications (documented, deliberate):

- Candidates are Ring and Tree for all-reduce, Ring for all-gather / reduce-scatter, Direct for
  all-to-all. NVLS, CollNet and PAT are not modelled. Tree is only a candidate across servers with
  the same number of members on every server (NCCL's intra-node "tree" is a chain that ring beats).
- NCCL's topology search is replaced by two per-channel bandwidths (:class:`NcclModel`): NVLink
  for single-server groups; the NIC for multi-server rings and for trees over more than two servers;
  ``min(nvlink, 2 * nic)`` for trees over two servers (inter-node traffic is half the intra-node
  traffic there, nccl#946).
- ``busBw`` uses the channel cap the DAG will use (``max_channels``; 1 inside a server), not
  NCCL's searched channel count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from wormsim.collective.algorithms import AUTO, RING, TABLE, TREE, by_name, serving
from wormsim.collective.config import CollectiveSpec
from wormsim.units import BYTES_PER_US_PER_GB_PER_S_F
from wormsim.workload.ops import COLLECTIVES

__all__ = [
    "NcclModel",
    "Choice",
    "ALGORITHMS",
    "select_algorithm",
    "collective_time_us",
    "channels_for",
]

#: Algorithms each collective kind may use (the first entry of a tuple is NCCL's default family),
#: from :data:`~wormsim.collective.algorithms.TABLE`.
ALGORITHMS: dict[str, tuple[str, ...]] = {
    c: tuple(a.name for a in TABLE if c in a.collectives)
    for c in COLLECTIVES
    if any(c in a.collectives for a in TABLE)
}

PROTOCOLS = ("LL", "LL128", "Simple")
_SIMPLE = "Simple"

# NCCL treeCorrectionFactor[protocol][log2(bytes >> 6)] (tuning.cc).
_TREE_CORRECTION = {
    "LL": (
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.7,
        0.7,
        0.7,
        0.7,
        0.6,
        0.5,
        0.4,
        0.4,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.0,
        1.0,
        1.0,
    ),
    "LL128": (
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.8,
        0.8,
        0.7,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
    ),
    "Simple": (
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.8,
        0.7,
        0.6,
        0.6,
        0.5,
        0.5,
        0.5,
        0.5,
        0.6,
        0.7,
        0.8,
        0.7,
        0.7,
        0.8,
        0.9,
        0.9,
    ),
}


def _d(**kw: float) -> dict[str, float]:
    return dict(kw)


@dataclass(frozen=True)
class NcclModel:
    """Constants of the NCCL tuning model (NCCL ~2.2x, Hopper; us and GB/s per channel).

    Attributes
    ----------
    base_lat_us, hw_lat_nvlink_us, hw_lat_net_us : dict
        ``{algorithm: {protocol: us}}`` (the baseLat / hwLat tables of NCCL's tuning.cc).
    bw_nvlink_gbs, bw_net_gbs : float
        Per-channel bandwidth inside a server and through the NIC (2 channels per 400 Gb/s NIC).
    net_overhead_us : float
        Per-step network overhead floor for multi-node rings (x3 for Simple).
    per_ch_max_tree_bw_gbs : tuple
        Hopper perChMaxTreeBw for 1 / 2 / >=4 nodes.
    per_ch_max_ring_ll128_bw_gbs : float
    ll_max_bw_gbs : tuple
        llMaxBw for 1 / 2 / >2 nodes.
    ring_multinode_lat_factor : float
        Ring Simple all-reduce latency factor across nodes (1.4 on Ampere+).
    """

    base_lat_us: dict[str, dict[str, float]] = field(
        default_factory=lambda: {
            RING: _d(LL=6.6, LL128=14.0, Simple=8.4),
            TREE: _d(LL=6.8, LL128=14.0, Simple=8.4),
        }
    )
    hw_lat_nvlink_us: dict[str, dict[str, float]] = field(
        default_factory=lambda: {
            RING: _d(LL=0.6, LL128=1.9, Simple=3.4),
            TREE: _d(LL=0.6, LL128=1.25, Simple=4.0),
        }
    )
    hw_lat_net_us: dict[str, dict[str, float]] = field(
        default_factory=lambda: {
            RING: _d(LL=2.7, LL128=4.0, Simple=14.0),
            TREE: _d(LL=5.0, LL128=8.5, Simple=14.0),
        }
    )
    bw_nvlink_gbs: float = 40.0
    bw_net_gbs: float = 24.0
    net_overhead_us: float = 1.0
    per_ch_max_tree_bw_gbs: tuple[float, float, float] = (38.7, 41.4, 36.0)
    per_ch_max_ring_ll128_bw_gbs: float = 36.7
    ll_max_bw_gbs: tuple[float, float, float] = (141.0, 45.0, 35.0)
    ring_multinode_lat_factor: float = 1.4


DEFAULT_MODEL = NcclModel()


@dataclass(frozen=True)
class Choice:
    """The selector's decision for one collective shape.

    Attributes
    ----------
    algorithm : str
        A name of :data:`~wormsim.collective.algorithms.TABLE`.
    protocol : str
        ``LL``, ``LL128`` or ``Simple`` (decides the channel threshold; flows ignore it).
    channels : int
        Channels the DAG uses.
    time_us : float
        Model time of the winner (``nan`` for algorithms outside the model).
    """

    algorithm: str
    protocol: str
    channels: int
    time_us: float


def _log2i(x: int) -> int:
    return x.bit_length() - 1 if x > 0 else -1


def _tier(n_servers: int) -> int:
    return 0 if n_servers <= 1 else (1 if n_servers == 2 else 2)


def collective_time_us(
    collective: str,
    algorithm: str,
    protocol: str,
    size_bytes: int,
    n_ranks: int,
    n_servers: int,
    channels: int,
    model: NcclModel = DEFAULT_MODEL,
) -> float:
    """NCCL tuning-model time of one (algorithm, protocol), in us.

    Parameters
    ----------
    collective : str
        ``allreduce``, ``allgather`` or ``reducescatter``.
    algorithm : str
        ``ring`` or ``tree`` (the algorithms the model prices; else ``inf``).
    protocol : {"LL", "LL128", "Simple"}
    size_bytes : int
        NCCL's nBytes (the buffer of an all-reduce, the gathered buffer of AG/RS).
    n_ranks, n_servers : int
        Group size and number of servers it spans.
    channels : int
        Channels used for ``busBw``.
    model : NcclModel

    Returns
    -------
    float
        ``inf`` when the pair is not applicable.
    """
    nodes = max(1, n_servers)
    ppn = max(1, n_ranks // nodes)
    if algorithm == RING:
        nsteps = 2 * (n_ranks - 1) if collective == "allreduce" else n_ranks - 1
        ninter = 2 * (nodes - 1) if collective == "allreduce" else nodes - 1
        bw = model.bw_nvlink_gbs if nodes == 1 else model.bw_net_gbs
    elif algorithm == TREE:
        if collective != "allreduce" or nodes == 1:
            return math.inf
        nsteps = ninter = 0
        bw = model.bw_net_gbs if nodes > 2 else min(model.bw_nvlink_gbs, 2 * model.bw_net_gbs)
    else:
        return math.inf
    if nsteps == 0 and algorithm == RING:
        return 0.0
    bus = channels * bw
    tier = _tier(nodes)
    if algorithm == RING and protocol == "LL":
        bus = min(model.ll_max_bw_gbs[tier], 0.5 * bus)
    elif algorithm == RING and protocol == "LL128":
        bus = min(0.92 * bus, channels * model.per_ch_max_ring_ll128_bw_gbs)
    elif algorithm == TREE:
        bus = min(0.92 * bus, channels * model.per_ch_max_tree_bw_gbs[tier])
        if protocol == "LL":
            bus = min(bus / 3.8, model.ll_max_bw_gbs[tier])
    ratio = n_ranks / nsteps if algorithm == RING else 0.5
    alg_bw = bus * ratio
    if algorithm == TREE:
        log_size = _log2i(size_bytes >> 6)
        if 0 <= log_size < 23:
            alg_bw *= _TREE_CORRECTION[protocol][log_size]
    intra = model.hw_lat_nvlink_us[algorithm][protocol]
    inter_alg = TREE if ppn == 1 else algorithm
    inter = model.hw_lat_net_us[inter_alg][protocol]
    lat = model.base_lat_us[algorithm][protocol]
    if algorithm == RING:
        if nodes > 1:
            overhead = model.net_overhead_us * (3.0 if protocol == "Simple" else 1.0)
            intra = max(intra, overhead)
        lat += (nsteps - ninter) * intra + ninter * inter
        if (
            protocol == _SIMPLE
            and nodes > 1
            and collective == "allreduce"
            and size_bytes // (channels * n_ranks) >= 64
        ):
            lat *= model.ring_multinode_lat_factor
    else:
        lat += 2 * ((ppn - 1) * intra + _log2i(nodes) * inter)
    return lat + size_bytes / (BYTES_PER_US_PER_GB_PER_S_F * alg_bw)


def channels_for(
    algorithm: str, protocol: str, size_bytes: int, n_ranks: int, max_channels: int
) -> int:
    """Drop channels while ``bytes < nc * nThreads * threshold`` (NCCL), keeping at least one.

    Thresholds: Simple 64 B/thread, LL 8 (x ranks for ring LL), LL128 8; threads: 640 for LL128
    and tree, else 512. A Simple ring needs 32 KiB per channel.

    Examples
    --------
    >>> channels_for("ring", "Simple", 64 * 1024, 16, 4)
    2
    """
    threshold = {"Simple": 64, "LL": 8, "LL128": 8}.get(protocol, 64)
    if algorithm == RING and protocol == "LL":
        threshold *= n_ranks
    threads = 640 if (protocol == "LL128" or algorithm == TREE) else 512
    nc = max(1, max_channels)
    while nc >= 2 and size_bytes < nc * threads * threshold:
        nc -= 1
    return nc


def select_algorithm(
    collective: str,
    size_bytes: int,
    n_ranks: int,
    n_servers: int,
    spec: CollectiveSpec,
    uniform: bool = True,
    model: NcclModel = DEFAULT_MODEL,
) -> Choice:
    """Pick the algorithm, protocol and channel count of one collective.

    Parameters
    ----------
    collective : str
        One of ``wormsim.workload.ops.COLLECTIVES``.
    size_bytes : int
        The op's ``size_bytes`` (ops contract convention).
    n_ranks : int
        Members of the communicator.
    n_servers : int
        Servers the members span.
    spec : CollectiveSpec
        A forced algorithm (not ``auto``) bypasses the model.
    uniform : bool
        Every server holds the same number of members (required by tree and hierarchical).
    model : NcclModel

    Returns
    -------
    Choice

    Examples
    --------
    >>> from wormsim.collective.config import CollectiveSpec
    >>> select_algorithm("allreduce", 1 << 30, 64, 64, CollectiveSpec()).algorithm
    'ring'
    """
    rows = serving(collective)
    intra = n_servers <= 1
    cap = 1 if intra else spec.max_channels
    forced = getattr(spec, collective, AUTO)  # send and recv have no setting
    if forced == AUTO:
        candidates = [a for a in rows if a.auto is not None and a.auto(uniform, intra)]
    else:
        candidates = [by_name(forced)]
    priced = [a.name for a in candidates if a.nccl_model]
    if not priced:
        algo = candidates[0]
        nch = channels_for(RING, _SIMPLE, size_bytes, n_ranks, cap) if algo.ring_channels else 1
        return Choice(algo.name, _SIMPLE, nch, math.nan)
    costs = [
        (collective_time_us(collective, name, proto, size_bytes, n_ranks, n_servers, cap, model),
         name, proto)
        for name in priced
        for proto in PROTOCOLS
    ]  # fmt: skip
    t, name, proto = min(costs, key=lambda c: c[0])  # the first of equal costs
    if not math.isfinite(t):
        # forced tree where the model has no tree (one server): still honour it, Simple protocol
        proto = _SIMPLE
    return Choice(name, proto, channels_for(name, proto, size_bytes, n_ranks, cap), t)
