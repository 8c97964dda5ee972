"""The packet state's field table: ``build_state`` allocates exactly it, growth follows it, the
kernels' numba types are what it declares, and ``docs/reference/engine-fields.md`` shows it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numba import typeof, types

from wormsim.collective.dag import KIND_COMPUTE, KIND_DELAY, KIND_FLOW, DagArrays
from wormsim.netsim.common.field_spec import FieldLayoutError
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.fields import DOC, PHYSICS_TABLE, RATE_SUFFIXES, STATE_TABLE
from wormsim.netsim.packet.run import Monitors, build_state
from wormsim.netsim.packet.wormhole.fields import CC_STATE
from wormsim.netsim.wormhole.spec import WormholeSpec

ENGINE_MD = Path(__file__).resolve().parents[3] / "docs" / "reference" / "engine-fields.md"


def _scenario() -> tuple[DagArrays, Topology]:
    """Hosts 0-3 (servers 0, 0, 1, 1) on switch 4: two fabric flows, one NVLink flow, one
    empty flow, two compute nodes on ranks 0 and 2, a delay at the root."""
    topo = Topology.from_links(
        5,
        [4],
        [(h, 4, 100e9, 1_000_000) for h in range(4)],
        host_server=np.array([0, 0, 1, 1, -1], np.int32),
        nvlink_rate_bps=2400e9,
    )
    # 0 delay -> 1..5; nodes: 1 flow 0->2, 2 flow 1->3, 3 NVLink 0->1, 4 empty 2->1,
    # 5 compute rank 0, 6 compute rank 2 (after 5)
    kind = [KIND_DELAY, KIND_FLOW, KIND_FLOW, KIND_FLOW, KIND_FLOW, KIND_COMPUTE, KIND_COMPUTE]
    dag = DagArrays(
        kind=np.array(kind, np.int8),
        src=np.array([-1, 0, 1, 0, 2, -1, -1], np.int32),
        dst=np.array([-1, 2, 3, 1, 1, -1, -1], np.int32),
        rank=np.array([-1, -1, -1, -1, -1, 0, 2], np.int32),
        size_bytes=np.array([0, 30_000, 20_000, 10_000, 0, 0, 0], np.int64),
        duration_ps=np.array([10, 0, 0, 0, 0, 1000, 2000], np.int64),
        dep_count=np.array([0, 1, 1, 1, 1, 1, 1], np.int32),
        child_offsets=np.array([0, 5, 5, 5, 5, 5, 6, 6], np.int64),
        child_index=np.array([1, 2, 3, 4, 5, 6], np.int64),
    )
    return dag, topo


# extents worked out by hand for _scenario, independently of build_state's own sizes
_N_PORTS, _N_NODES, _N_QPS, _N_DAG, _N_EDGES, _N_RANKS = 8, 5, 2, 7, 6, 3


def _expected(wormhole: WormholeSpec | None, window: int, mon: Monitors) -> dict[str, int]:
    wh = _N_QPS if wormhole is not None else 0
    return {
        "counter": st.N_COUNTERS,
        "heap": 8192,
        "packet": 4096,
        "hop": st.MAXHOP,
        "port": _N_PORTS,
        "node": _N_NODES,
        "qp": _N_QPS,
        "nic_slot": _N_QPS,
        "wh_qp": wh,
        "wh_partition": wh,
        "wh_group": wh,
        "wh_owner": _N_PORTS + wh if wh else 0,
        "wh_port": _N_PORTS if wh else 0,
        "wh_route_entry": 4 * _N_QPS if wh else 0,
        "window": window,
        "cc_var": CC_STATE,
        "dag_node": _N_DAG,
        "dag_offset": _N_DAG + 1,
        "dag_edge": _N_EDGES,
        "rank": _N_RANKS,
        "fluid_slot": _N_DAG,
        "route_offset": 2 * _N_QPS + 1,
        "route_entry": 4 * _N_QPS,  # host NIC + switch port, both ways
        "monitored_port": len(mon.queue_ports) if mon.period_ps > 0 else 0,
        "sample": mon.capacity if mon.period_ps > 0 else 1,
    }


_CASES = {
    "packet": (None, Monitors()),
    "wormhole": (WormholeSpec(window=5), Monitors()),
    "monitors": (None, Monitors(period_ps=1_000_000, queue_ports=(4, 5, 6), capacity=50)),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_build_state_allocates_every_field_as_declared(case):
    wormhole, mon = _CASES[case]
    dag, topo = _scenario()
    A, P, flow_qp, _ = build_state(
        dag, topo, NetworkSpec(cc="dcqcn"), monitors=mon, wormhole=wormhole
    )
    assert (flow_qp >= 0).sum() == _N_QPS
    assert set(A) == set(STATE_TABLE.names)
    ext = _expected(wormhole, getattr(P, "wh_window", 1), mon)
    for f in STATE_TABLE:
        a = A[f.name]
        assert a.dtype == np.dtype(f.dtype), f.name
        assert a.shape == tuple(ext[d] for d in f.dims), f.name
        assert a.flags.c_contiguous and a.flags.writeable, f.name
        if f.init is not None and f.name != "cnt":
            assert (a == f.init).all(), f.name


def test_state_fields_come_from_the_table():
    assert st.STATE_FIELDS == STATE_TABLE.names
    assert len(set(st.STATE_FIELDS)) == len(st.STATE_FIELDS)


@pytest.mark.parametrize("wormhole", [False, True])
def test_numba_types_are_the_declared_ones(wormhole):
    """A packet-mode state's type has the physics' fields only, a Wormhole state's every field;
    each at the declared dtype and rank."""
    dag, topo = _scenario()
    A, _, _, _ = build_state(
        dag, topo, NetworkSpec(cc="hpcc"), wormhole=WormholeSpec() if wormhole else None
    )
    S = st.make_state(A, wormhole=wormhole)
    fields = dict(typeof(S).field_dict)
    table = STATE_TABLE if wormhole else PHYSICS_TABLE
    assert tuple(fields) == table.names
    for f in table:
        want = types.Array(typeof(np.dtype(f.dtype).type(0)), len(f.dims), "C")
        assert fields[f.name] == want, f.name


def test_every_time_field_names_its_unit():
    times = {
        f.name: f.unit
        for f in STATE_TABLE
        if f.unit in STATE_TABLE.suffixes and STATE_TABLE.suffixes[f.unit] in ("_ps", "_ns")
    }
    assert {"qp_start_ps", "pk_ts_ns", "wh_t1_ps", "ht_ps"} <= set(times)
    for name, unit in times.items():
        assert name.endswith(STATE_TABLE.suffixes[unit]), name
    assert all(f.name in times for f in STATE_TABLE if f.name.endswith(("_ps", "_ns")))


def test_every_rate_field_names_its_unit():
    rates = {f.name: f.unit for f in STATE_TABLE if f.unit in RATE_SUFFIXES}
    assert {"qp_rate_bps", "p_rate_bps", "wh_rend_Bpps", "wh_rate_Bpps"} <= set(rates)
    for name, unit in rates.items():
        assert name.endswith(RATE_SUFFIXES[unit])
    assert not any(
        f.name.endswith(tuple(RATE_SUFFIXES.values())) for f in STATE_TABLE if f.unit == "mixed"
    )
    for old in ("qp_rate", "qp_max", "p_rate", "wh_rend", "wh_rate", "wh_r0", "ph_rate"):
        assert old not in STATE_TABLE
    for p in ("rai_bps", "rhai_bps", "min_rate_bps", "dctcp_rai_bps", "nvlink_rate_bps"):
        assert p in st.PARAM_FIELDS


def test_grow_pool_and_heap_follow_the_table():
    dag, topo = _scenario()
    A, _, _, _ = build_state(dag, topo, NetworkSpec(cc="hpcc"), pool=8, heap=16)
    A["pk_seq"][:] = np.arange(8)
    A["pk_it_ns"][:] = 7
    A["ht_ps"][:] = np.arange(16)
    free = int(A["cnt"][st.C_FREE])
    B = st.grow_heap(st.grow_pool(A))
    for name in STATE_TABLE.along("packet"):
        assert B[name].shape[0] == 16, name
    for name in STATE_TABLE.along("heap"):
        assert B[name].shape[0] == 32, name
    assert STATE_TABLE.along("heap") == ("ht_ps", "hs", "he", "ho")
    assert (B["pk_seq"][:8] == np.arange(8)).all() and (B["pk_seq"][8:] == 0).all()
    assert (B["pk_it_ns"][:8] == 7).all() and (B["pk_it_ns"][8:] == 0).all()
    assert (B["pk_next"][8:] == -1).all()
    assert (B["ht_ps"][:16] == np.arange(16)).all() and (B["ht_ps"][16:] == 0).all()
    assert int(B["cnt"][st.C_FREE]) == free + 8
    assert sorted(B["free_stack"][: free + 8].tolist()) == list(range(16))
    STATE_TABLE.check_types(B)


def test_check_names_the_faulty_field():
    dag, topo = _scenario()
    A, _, _, _ = build_state(dag, topo, NetworkSpec(cc="hpcc"))
    sizes = {"heap": 8192, "packet": 4096, "port": _N_PORTS, "node": _N_NODES, "qp": _N_QPS}
    sizes |= {"wh_qp": 0, "window": 1, "dag_node": _N_DAG, "dag_edge": _N_EDGES}
    sizes |= {"rank": _N_RANKS, "route_entry": 4 * _N_QPS, "monitored_port": 0, "sample": 1}
    STATE_TABLE.check(A, sizes)
    bad = [
        ("qp_rate_bps", A["qp_rate_bps"].astype(np.float32), "dtype"),
        ("qp_una", np.zeros(_N_QPS + 1, np.int64), "shape"),
        ("h_t_ns", np.zeros(_N_QPS, np.int64), "dimension"),
        ("g_start_ps", np.zeros((_N_DAG, 2), np.int64)[:, 0], "C-contiguous"),
    ]
    for name, arr, what in bad:
        with pytest.raises(FieldLayoutError, match=f"{name}.*{what}|{what}.*{name}"):
            STATE_TABLE.check({**A, name: arr}, sizes)
    with pytest.raises(FieldLayoutError, match="missing.*'qp_done'"):
        STATE_TABLE.check({k: v for k, v in A.items() if k != "qp_done"}, sizes)
    with pytest.raises(FieldLayoutError, match="undeclared.*'qp_rate'"):
        st.make_state({**A, "qp_rate": A["qp_rate_bps"]})


def test_doc_shows_the_table():
    text = ENGINE_MD.read_text()
    assert DOC.extract(text) == STATE_TABLE.markdown(), (
        "docs/reference/engine-fields.md's state reference is stale: "
        "python -m wormsim.netsim.packet.fields --update docs/reference/engine-fields.md"
    )
    assert DOC.replace(text, STATE_TABLE) == text
