"""Shared helpers: FCGs realised from plain graphs, namespaces, and permuted copies."""

from __future__ import annotations

import random

import networkx as nx

from wormsim.memo import NAMESPACE_FIELDS, FlowSpec, LogRateQuantizer, build_fcg

Q = LogRateQuantizer()


def rate(bucket: int) -> float:
    """The centre rate of a default-quantizer bucket."""
    return Q.representative(bucket)


B100 = Q.bucket(100e9)  # bucket of a 100 Gb/s flow


def specs_from_graph(g: nx.Graph, rates: dict | None = None, prefix: str = "L") -> list[FlowSpec]:
    """Flows whose FCG is ``g``: edge (u, v) of weight w = w links used by u and v only."""
    routes: dict = {u: [] for u in g}
    for k, (u, v, w) in enumerate(g.edges(data="weight", default=1)):
        for j in range(w):
            routes[u].append(f"{prefix}{k}.{j}")
            routes[v].append(f"{prefix}{k}.{j}")
    rates = rates or {}
    return [FlowSpec(u, rates.get(u, 100e9), routes[u]) for u in g]


def fcg_of(g: nx.Graph, rates: dict | None = None, **kw) -> nx.Graph:
    return build_fcg(specs_from_graph(g, rates), **kw)


def permuted(specs: list[FlowSpec], seed: int, jitter: float = 0.01):
    """Same partition with shuffled flow order, new flow and link ids, rates jittered in-bucket.

    Returns the new specs and the map old flow id -> new flow id.
    """
    rng = random.Random(seed)
    olds = [s.flow_id for s in specs]
    news = [f"n{seed}_{i}" for i in range(len(olds))]
    rng.shuffle(news)
    fmap = dict(zip(olds, news, strict=True))
    links = sorted({x for s in specs for x in s.route})
    lnew = [f"k{seed}_{i}" for i in range(len(links))]
    rng.shuffle(lnew)
    lmap = dict(zip(links, lnew, strict=True))
    out = [
        FlowSpec(
            fmap[s.flow_id],
            s.rate_bps * (1 + rng.uniform(-jitter, jitter)),
            [lmap[x] for x in rng.sample(list(s.route), len(s.route))],
        )
        for s in specs
    ]
    rng.shuffle(out)
    return out, fmap


def random_specs(seed: int, n_flows: int = 8, n_links: int = 6, buckets=(0, 5, 10)) -> list:
    """A random partition-like flow set with rates at bucket centres."""
    rng = random.Random(seed)
    return [
        FlowSpec(
            f"f{i}",
            rate(B100 - rng.choice(buckets)),
            rng.sample(range(n_links), rng.randint(1, 3)),
        )
        for i in range(n_flows)
    ]


def namespace(**over) -> dict:
    ns = dict.fromkeys(NAMESPACE_FIELDS)
    ns.update(
        cc="hpcc",
        cc_params={"eta": 0.95, "max_stage": 5, "ai_mbps": 50},
        link_rates_bps=[100e9, 400e9],
        link_delays_ps=[1_000_000],
        buffer_bytes=32 * 2**20,
        mtu_bytes=1000,
        ecn={"kmin_kb": 100, "kmax_kb": 400, "pmax": 0.2},
        pfc={"enabled": True},
        detector={"theta": 0.05, "window": 2000, "period_ps": 1_000_000},
    )
    ns.update(over)
    return ns


def partition_specs(seed: int) -> list[FlowSpec]:
    """Seeds 0..9: random (mostly asymmetric) partitions; 10..: symmetric ones (C5, K3,3, a
    circular ladder, then cycles C8, C9, ...), whose permuted copies serialise differently and
    need VF2 to match."""
    if seed < 10:
        return random_specs(seed)
    k = seed - 10
    fixed = [nx.cycle_graph(5), nx.complete_bipartite_graph(3, 3), nx.circular_ladder_graph(4)]
    g = fixed[k] if k < len(fixed) else nx.cycle_graph(5 + k)
    return specs_from_graph(nx.convert_node_labels_to_integers(g))
