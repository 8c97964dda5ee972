import math

import networkx as nx
import pytest

from wormsim.memo import (
    FlowSpec,
    LineRateQuantizer,
    LogRateQuantizer,
    MemoError,
    build_fcg,
)
from wormsim.memo.quantize import quantizer_from_spec

# Paper Fig. 4: a triangle F1-F2-F3 and a star around F4 (F4-F5, F4-F6); F1-F2 and F4-F5 share
# two links, every other pair one.
FIG4 = [
    FlowSpec("F1", 100e9, ["a", "b", "e"]),
    FlowSpec("F2", 50e9, ["a", "c", "e"]),
    FlowSpec("F3", 50e9, ["b", "c", "d"]),
    FlowSpec("F4", 100e9, ["x", "y", "z"]),
    FlowSpec("F5", 25e9, ["y", "x"]),
    FlowSpec("F6", 25e9, ["z", "w", "z"]),
]


def test_fig4_edges_and_weights():
    g = build_fcg(FIG4)
    edges = {frozenset((u, v)): w for u, v, w in g.edges(data="weight")}
    assert edges == {
        frozenset(("F1", "F2")): 2,
        frozenset(("F1", "F3")): 1,
        frozenset(("F2", "F3")): 1,
        frozenset(("F4", "F5")): 2,
        frozenset(("F4", "F6")): 1,
    }
    q = LogRateQuantizer()
    assert g.nodes["F1"]["weight"] == q.bucket(100e9) == g.nodes["F4"]["weight"]
    assert g.nodes["F2"]["weight"] == q.bucket(50e9) != g.nodes["F1"]["weight"]
    assert g.nodes["F6"]["rate_bps"] == 25e9
    assert g.graph["quantizer"] == q.spec
    # the FCG's components are the partitions (flows sharing a link, transitively)
    comps = {frozenset(c) for c in nx.connected_components(g)}
    assert comps == {frozenset({"F1", "F2", "F3"}), frozenset({"F4", "F5", "F6"})}


def test_fcg_rejects_duplicate_flow_and_bad_rate():
    with pytest.raises(MemoError, match="twice"):
        build_fcg([("a", 1e9, [1]), ("a", 1e9, [2])])
    with pytest.raises(MemoError, match="finite"):
        build_fcg([("a", math.nan, [1])])
    with pytest.raises(MemoError, match=">= 0"):
        build_fcg([("a", -1.0, [1])])
    with pytest.raises(MemoError, match="flow must be"):
        build_fcg([("a", 1e9)])


def test_log_quantizer_buckets_are_relative():
    q = LogRateQuantizer(0.05)
    for base in (1e8, 25e9, 100e9, 400e9):
        k = q.bucket(base)
        centre = q.representative(k)
        assert abs(centre / base - 1) <= 0.0245  # within half a bucket
        assert q.bucket(centre * 1.02) == k == q.bucket(centre / 1.02)
        assert q.bucket(centre * 1.03) == k + 1 and q.bucket(centre / 1.03) == k - 1
    assert q.bucket(0) == 0 == q.bucket(q.floor_bps * 0.99)
    assert q.bucket(q.floor_bps) == 1
    coarse = LogRateQuantizer(0.2)
    c = coarse.representative(coarse.bucket(100e9))
    assert coarse.bucket(c) == coarse.bucket(c * 1.09) and q.bucket(c) != q.bucket(c * 1.09)


def test_line_quantizer_and_specs():
    q = LineRateQuantizer(100e9, 64)
    assert q.bucket(100e9) == 64 and q.bucket(50e9) == 32 and q.bucket(0.7e9) == 0
    assert q.representative(32) == 50e9
    for quant in (q, LogRateQuantizer(), LogRateQuantizer(0.1, 1e3)):
        assert quantizer_from_spec(quant.spec) == quant
    assert LogRateQuantizer(0.1).spec != LogRateQuantizer(0.05).spec
    with pytest.raises(MemoError):
        quantizer_from_spec("cubic:q=1")
    with pytest.raises(MemoError):
        LogRateQuantizer(0.0)
    with pytest.raises(MemoError):
        LineRateQuantizer(100e9, 0)


def test_quantizer_is_a_parameter():
    g = build_fcg(FIG4, quantizer=LineRateQuantizer(100e9, 8))
    assert [g.nodes[f]["weight"] for f in ("F1", "F2", "F5")] == [8, 4, 2]
    assert g.graph["quantizer"] == "line:rate=1e+11:steps=8"
