"""The flow state's field table: ``build_arrays`` allocates exactly it, ``grow_log`` follows it,
the kernel's numba types are what it declares, and ``docs/reference/engine-fields.md`` shows it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numba import typeof, types

from tests.netsim.packet.test_fields import _scenario
from wormsim.netsim.common.dag_runtime import DAG_RUNTIME_FIELDS
from wormsim.netsim.common.field_spec import FieldLayoutError
from wormsim.netsim.common.flow_plan import FT_FABRIC, FT_INSTANT, FT_NVLINK
from wormsim.netsim.flow import state as st
from wormsim.netsim.flow.build import build_arrays
from wormsim.netsim.flow.fields import DOC, RATE_SUFFIXES, STATE_TABLE
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.fields import STATE_TABLE as PACKET_TABLE

ENGINE_MD = Path(__file__).resolve().parents[3] / "docs" / "reference" / "engine-fields.md"

# extents worked out by hand for the packet tests' _scenario (hosts 0-3 on switch 4: two fabric
# flows, one NVLink flow, one empty flow, two compute nodes on ranks 0 and 2, a delay)
_N_PORTS, _N_NODES, _N_DAG, _N_EDGES, _N_RANKS = 8, 5, 7, 6, 3
_N_FLOWS = 3  # 2 fabric + 1 NVLink (the empty flow is instant)
_N_INC = 2 * 2 + 2  # fabric: host NIC + switch port; NVLink: egress + ingress


def _build(log_capacity: int = 0) -> dict[str, np.ndarray]:
    dag, topo = _scenario()
    A, _, _ = build_arrays(dag, topo, NetworkSpec(cc="dcqcn"), "hash", 0, None, log_capacity)
    return A


def _expected(log_capacity: int) -> dict[str, int]:
    return {
        "counter": st.N_COUNTERS,
        "float_scalar": 4,
        "dag_node": _N_DAG,
        "dag_offset": _N_DAG + 1,
        "dag_edge": _N_EDGES,
        "rank": _N_RANKS,
        "dag_slot": _N_DAG,
        "resource": _N_PORTS + 2 * _N_NODES,
        "incidence": _N_INC,
        "heap_count": 2,
        "drain_slot": 3 * _N_FLOWS + 1024,
        "log": max(log_capacity, 1),
    }


@pytest.mark.parametrize("log_capacity", [0, 16])
def test_build_arrays_allocates_every_field_as_declared(log_capacity):
    A = _build(log_capacity)
    assert set(A) == set(STATE_TABLE.names) | st.NOT_STATE
    assert sorted(A["f_type"].tolist()) == sorted(
        [0, FT_FABRIC, FT_FABRIC, FT_NVLINK, FT_INSTANT, 0, 0]
    )
    ext = _expected(log_capacity)
    for f in STATE_TABLE:
        a = A[f.name]
        assert a.dtype == np.dtype(f.dtype), f.name
        assert a.shape == tuple(ext[d] for d in f.dims), f.name
        assert a.flags.c_contiguous and a.flags.writeable, f.name
        if f.init is not None and f.name not in ("cnt", "fsc"):
            assert (a == f.init).all(), f.name
    assert A["cnt"][st.C_RECORD] == (1 if log_capacity else 0)
    assert A["fsc"][st.F_THETA] == np.inf and (A["fsc"][1:] == 0).all()


def test_state_fields_come_from_the_table():
    assert st.STATE_FIELDS == STATE_TABLE.names
    assert len(set(st.STATE_FIELDS)) == len(st.STATE_FIELDS)
    assert not st.NOT_STATE & set(STATE_TABLE.names)


def test_dag_fields_are_shared_with_the_packet_engine():
    for f in DAG_RUNTIME_FIELDS:
        assert STATE_TABLE[f.name] is f is PACKET_TABLE[f.name], f.name
    for d in ("dag_node", "dag_offset", "dag_edge", "rank"):
        assert STATE_TABLE.dims[d] is PACKET_TABLE.dims[d], d


# the StructRef's (numba dtype, ndim) before the table; renames only add a unit suffix (and
# g_ready, the DAG runtime's scratch of released children, was added after)
_TYPES_BEFORE = (
    "cnt i8 g_kind i8 g_rank i8 g_dur_ps i8 g_rem i8 g_coff i8 g_cidx i8 g_start_ps i8 "
    "g_finish_ps i8 "
    "rk_busy i1 rk_head i8 rk_tail i8 g_cnext i8 g_ready i8 "
    "f_type i1 f_wire f8 f_lat_ps i8 f_roff i8 f_res i8 "
    "f_rem f8 f_rate_Bpps f8 f_tupd_ps i8 f_new i1 res_cap_Bpps f8 res_head i8 res_cnt i8 "
    "inc_next i8 inc_prev i8 inc_flow i8 th_c i8 th_t_ps i8 th_s i8 th_e i8 th_o i4 fh_c i8 "
    "fh_t_ps i8 fh_s i8 fh_e i8 fh_o i4 fh_pos_ps i8 seeds i8 res_mark i8 flow_mark i8 "
    "comp_res i8 "
    "comp_flows i8 wf_cap_Bpps f8 wf_cnt i8 new_rate_Bpps f8 sh_Bpps f8 nbmin_Bpps f8 "
    "fmin_Bpps f8 act i8 new_list i8 res_eval i8 fsc f8 log_t_ps i8 log_v i8 log_r_bps f8"
).split()


def test_numba_types_are_the_declared_ones():
    S = st.make_state(_build())
    fields = dict(typeof(S).field_dict)
    assert tuple(fields) == STATE_TABLE.names == tuple(_TYPES_BEFORE[::2])
    for f, code in zip(STATE_TABLE, _TYPES_BEFORE[1::2], strict=True):
        want = types.Array(typeof(np.dtype(f.dtype).type(0)), len(f.dims), "C")
        assert fields[f.name] == want, f.name
        assert np.dtype(f.dtype).str[1:] == code and len(f.dims) == 1, f.name


def test_every_time_field_names_its_unit():
    times = {
        f.name: f.unit
        for f in STATE_TABLE
        if f.unit in STATE_TABLE.suffixes and STATE_TABLE.suffixes[f.unit] in ("_ps", "_ns")
    }
    assert {"f_tupd_ps", "log_t_ps", "g_finish_ps"} <= set(times)
    for name, unit in times.items():
        assert name.endswith(STATE_TABLE.suffixes[unit]), name
    assert all(f.name in times for f in STATE_TABLE if f.name.endswith(("_ps", "_ns")))


def test_every_rate_field_names_its_unit():
    rates = {f.name: f.unit for f in STATE_TABLE if f.unit in RATE_SUFFIXES}
    assert {"f_rate_Bpps", "res_cap_Bpps", "wf_cap_Bpps", "new_rate_Bpps", "log_r_bps"} <= set(
        rates
    )
    for name, unit in rates.items():
        assert name.endswith(RATE_SUFFIXES[unit])
    for old in ("f_rate", "res_cap", "wf_cap", "new_rate", "sh", "nbmin", "fmin", "log_r"):
        assert old not in STATE_TABLE


def test_grow_log_follows_the_table():
    A = _build(4)
    A["log_t_ps"][:3] = [5, 6, 7]
    A["log_v"][:3] = [1, 2, 3]
    A["log_r_bps"][:3] = [1e9, 2e9, 0.0]
    A["cnt"][st.C_LOG_N] = 3
    A["cnt"][st.C_ACTIVE] = 2
    before = {name: A[name].copy() for name in STATE_TABLE.along("log")}
    st.grow_log(A)
    assert STATE_TABLE.along("log") == ("log_t_ps", "log_v", "log_r_bps")
    for name, old in before.items():
        assert A[name].shape == (2 * 4 + 2 * 2 + 64,), name
        assert (A[name][:4] == old).all() and (A[name][4:] == 0).all(), name
    st.make_state(A)  # still the declared types


def test_check_names_the_faulty_field():
    A = _build()
    sizes = {"dag_node": _N_DAG, "dag_edge": _N_EDGES, "rank": _N_RANKS, "flow": _N_FLOWS}
    sizes |= {"resource": _N_PORTS + 2 * _N_NODES, "incidence": _N_INC, "log": 1}
    kernel_arrays = {k: a for k, a in A.items() if k not in st.NOT_STATE}
    STATE_TABLE.check(kernel_arrays, sizes)
    bad = [
        ("f_rate_Bpps", A["f_rate_Bpps"].astype(np.float32), "dtype"),
        ("res_head", np.zeros(_N_PORTS, np.int64), "shape"),
        ("th_o", np.zeros((_N_DAG, 1), np.int32), "dimension"),
    ]
    for name, arr, what in bad:
        with pytest.raises(FieldLayoutError, match=f"{name}.*{what}|{what}.*{name}"):
            STATE_TABLE.check({**kernel_arrays, name: arr}, sizes)
    with pytest.raises(FieldLayoutError, match="undeclared.*'f_rate'"):
        st.make_state({**A, "f_rate": A["f_rate_Bpps"]})
    with pytest.raises(FieldLayoutError, match="missing.*'log_r_bps'"):
        st.make_state({k: a for k, a in A.items() if k != "log_r_bps"})


def test_doc_shows_the_table():
    text = ENGINE_MD.read_text()
    assert DOC.extract(text) == STATE_TABLE.markdown(), (
        "docs/reference/engine-fields.md's flow-state reference is stale: "
        "python -m wormsim.netsim.flow.fields --update docs/reference/engine-fields.md"
    )
    assert DOC.replace(text, STATE_TABLE) == text
