"""Structure-of-arrays state of the packet engine and its scalar parameters.

``State`` is a namedtuple of numpy arrays (mutated in place by the kernels); ``Params`` a
namedtuple of scalars. Mutable scalars live in ``State.cnt`` at the ``C_*`` indices.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit
from numba.core import cgutils, imputils, types
from numba.core.extending import (
    infer_getattr,
    intrinsic,
    lower_getattr_generic,
    models,
    register_model,
)
from numba.core.typing.templates import AttributeTemplate
from numba.experimental import structref

__all__ = [
    "State",
    "StateType",
    "make_state",
    "Params",
    "STATE_FIELDS",
    "PARAM_FIELDS",
    "grow_pool",
    "grow_heap",
    "alloc_pool",
    "raw_state",
    "raw_params",
]

# ---- counters (State.cnt) ------------------------------------------------------------------
C_HEAPN, C_SEQ, C_FREE, C_EVENTS, C_DATA_SENT, C_HOPS, C_DROPS, C_PFC = range(8)
C_ECN, C_CNP, C_PEAK_PKTS, C_INUSE, C_RNG, C_NODES_DONE, C_FLUID_GEN, C_MONQ = range(8, 16)
C_MONR, C_MONLOST, C_NOW, C_FLUID_N, C_FLUID_LAST, C_NACKS, C_RESUMES, C_NEXT_SAMPLE = range(16, 24)
C_WH_DIRTY, C_WH_SKIPS, C_WH_BACKS, C_WH_STEADY, C_WH_PARTS, C_WH_BYTES = range(24, 30)
C_WH_MEMO = 30  # memo work is pending for the Python driver (lookups or inserts)
C_WH_NACT, C_WH_NTP = 31, 32  # lengths of the Wormhole active-QP and labelled-port lists
C_WH_TUNNELS, C_WH_DEFERS = 33, 34  # control packets past frozen ports / held for skipped QPs
# shadow partitions (wormsim.netsim.packet.shadow): parked behind a leader / materialised
C_WH_PARKED, C_WH_UNPARKED = 35, 37
C_WH_MIRRORED, C_WH_HOLDS = 38, 39  # shadow flows finished with their leader / flows held
C_WH_REMAPS = 40  # re-formed shadows kept parked behind their re-formed leader
C_WH_LIVE = 41  # parked groups not yet materialised
C_WH_ORPHANS, C_WH_EMPTIED = 42, 43  # shadows materialised: leader changed alone / all finished
N_COUNTERS = 48

# ---- event types -----------------------------------------------------------------------------
(
    EV_TXDONE,
    EV_ARRIVE,
    EV_NICWAKE,
    EV_ALPHA,
    EV_DEC,
    EV_RP,
    EV_DAGDONE,
    EV_FLUID,
    EV_SAMPLE,
    EV_WH,
    EV_TUNNEL,
    EV_DEFER,
    EV_LAND,
) = range(13)

# ---- packet types ----------------------------------------------------------------------------
PK_DATA, PK_ACK, PK_NACK, PK_PFC = 0, 1, 2, 3

MAXHOP = 5

STATE_FIELDS = (
    "cnt",
    # heap
    "ht",
    "hs",
    "he",
    "ho",
    # packet pool
    "pk_type",
    "pk_flow",
    "pk_seq",
    "pk_size",
    "pk_payload",
    "pk_ecn",
    "pk_cnp",
    "pk_hop",
    "pk_route",
    "pk_inport",
    "pk_next",
    "pk_ts",
    "pk_nhop",
    "pk_it",
    "pk_ib",
    "pk_iq",
    "pk_ir",
    "pk_at",
    "pk_as",
    "free_stack",
    # ports
    "p_node",
    "p_peer",
    "p_rate",
    "p_delay",
    "p_rev",
    "p_sw",
    "p_busy",
    "p_free",
    "p_pend",
    "lk_head",
    "lk_tail",
    "qh_head",
    "qh_tail",
    "qh_bytes",
    "ql_head",
    "ql_tail",
    "ql_bytes",
    "paused",
    "tx_bytes",
    "peak_bytes",
    "ing_bytes",
    "hdrm_bytes",
    "pfc_on",
    "headroom",
    "pfc_shift",
    "kmin",
    "kmax",
    "pmax",
    "nic_off",
    "nic_n",
    "nic_rr",
    "nic_qps",
    "nic_wake_t",
    "nic_wake_g",
    # nodes
    "is_sw",
    "sw_shared",
    "sw_fixed",
    "sw_used",
    "host_server",
    # queue pairs (packet flows)
    "qp_node",
    "qp_src",
    "qp_dst",
    "qp_nic",
    "qp_size",
    "qp_nxt",
    "qp_una",
    "qp_rate",
    "qp_max",
    "qp_win",
    "qp_next_avail",
    "qp_last_size",
    "qp_start",
    "qp_done",
    "qp_rdata",
    "qp_rack",
    "rx_expected",
    "rx_milestone",
    "rx_nack_t",
    "rx_last_nack",
    "m_alpha",
    "m_alpha_cnp",
    "m_dec_cnp",
    "m_first",
    "m_stage",
    "m_target",
    "g_alpha",
    "g_dec",
    "g_rp",
    "h_last_seq",
    "h_cur",
    "h_inc",
    "h_u",
    "h_t",
    "h_b",
    "h_q",
    "t_last_seq",
    "t_inc",
    "t_last_rtt",
    "t_rtt_diff",
    "t_cur",
    "d_last_seq",
    "d_ca",
    "d_high",
    "d_alpha",
    "d_ecn",
    "d_batch",
    # DAG
    "g_kind",
    "g_src",
    "g_dst",
    "g_rank",
    "g_size",
    "g_dur",
    "g_rem",
    "g_coff",
    "g_cidx",
    "g_start",
    "g_finish",
    "g_qp",
    "rk_busy",
    "rk_head",
    "rk_tail",
    "g_cnext",
    "fl_list",
    "fl_rem",
    "fl_rate",
    # routes
    "r_off",
    "r_ports",
    # monitors
    "mq_ports",
    "mq_t",
    "mq_p",
    "mq_b",
    "mr_t",
    "mr_f",
    "mr_r",
    # Wormhole (see wh.py)
    "qp_credit",
    "wh_lab",
    "wh_last",
    "wh_ring",
    "wh_n",
    "wh_rtt",
    "wh_cred",
    "wh_rate",
    "wh_psize",
    "wh_state",
    "wh_t0",
    "wh_t1",
    "wh_tform",
    "wh_pport",
    "ph_rate",
    "wh_phq",
    "wh_phend",
    "wh_tack",
    "wh_tlast",
    "wh_una0",
    "wh_r0",
    "wh_sizef",
    "wh_rend",
    "wh_memo",
    "wh_tconv",
    "wh_act",
    "wh_par",
    "wh_size",
    "wh_flag",
    "wh_pown",
    "wh_tp",
    "wh_cring",
    "wh_lead",
    "wh_mapq",
    "wh_lu0",
    "wh_mhead",
    "wh_mnext",
    "wh_pgrp",
    "wh_qgrp",
    "wh_vcred",
    "wh_hold",
    "wh_gt0",
    "wh_glive",
    "wh_ccs",
)


@structref.register
class StateType(types.StructRef):
    """Numba type of the engine state: one pointer, so calls do not touch every array."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


# ---- untracked views for the kernels -----------------------------------------------------------
# ``S.field`` on a StructRef increfs the field array and every call increfs/decrefs ``S`` itself:
# out-of-line atomic NRT calls that were the largest single cost of the event loop. The kernel
# entry points (``run_kernel``, ``init_kernel``, ``shift_owner_events``) therefore convert ``S``
# with :func:`raw_state` and ``P`` with :func:`raw_params` into plain pointers (no refcount) whose
# attributes are loaded directly: an array field comes back as a borrowed view without a meminfo
# and its loads are marked invariant (fields are never reassigned inside a kernel call). Safe
# because the caller's ``State`` (and the dict holding the arrays) keeps everything alive for the
# whole call, and no kernel stores or returns a field array or the raw pointers.


class StatePtrType(types.Type):
    """Raw pointer to a :class:`StateType` payload (kernel-internal)."""

    def __init__(self, st):
        self.st = st
        super().__init__(name=f"StatePtr({st.name})")


class ParamsPtrType(types.Type):
    """Raw pointer to a stack copy of the :class:`Params` tuple (kernel-internal)."""

    def __init__(self, pt):
        self.pt = pt
        super().__init__(name=f"ParamsPtr({pt.name})")


register_model(StatePtrType)(models.OpaqueModel)
register_model(ParamsPtrType)(models.OpaqueModel)


@infer_getattr
class _StatePtrAttribute(AttributeTemplate):
    key = StatePtrType

    def generic_resolve(self, typ, attr):
        if attr in typ.st.field_dict:
            return typ.st.field_dict[attr]


@infer_getattr
class _ParamsPtrAttribute(AttributeTemplate):
    key = ParamsPtrType

    def generic_resolve(self, typ, attr):
        if attr in typ.pt.fields:
            return typ.pt.types[typ.pt.fields.index(attr)]


def _invariant_load(builder, ptr):
    v = builder.load(ptr)
    v.set_metadata("invariant.load", builder.module.add_metadata([]))
    return v


@lower_getattr_generic(StatePtrType)
def _state_ptr_getattr(context, builder, typ, val, attr):
    valtype = typ.st.get_data_type()
    model = context.data_model_manager[valtype]
    ptr = builder.bitcast(val, model.get_value_type().as_pointer())
    idx = model.get_field_position(attr)
    ret = _invariant_load(builder, cgutils.gep_inbounds(builder, ptr, 0, idx))
    fieldtype = typ.st.field_dict[attr]
    if isinstance(fieldtype, types.Array):
        ret = builder.insert_value(ret, cgutils.get_null_value(ret.type.elements[0]), 0)
    return imputils.impl_ret_untracked(context, builder, fieldtype, ret)


@lower_getattr_generic(ParamsPtrType)
def _params_ptr_getattr(context, builder, typ, val, attr):
    model = context.data_model_manager[typ.pt]
    ptr = builder.bitcast(val, model.get_value_type().as_pointer())
    idx = typ.pt.fields.index(attr)
    ret = builder.load(cgutils.gep_inbounds(builder, ptr, 0, idx))
    return imputils.impl_ret_untracked(context, builder, typ.pt.types[idx], ret)


@intrinsic
def raw_state(typingctx, s):
    """Untracked pointer view of a :class:`State` (see the note above)."""
    if not isinstance(s, StateType):
        return None

    def codegen(context, builder, sig, args):
        ptr = structref._Utils(context, builder, sig.args[0]).get_data_pointer(args[0])
        return builder.bitcast(ptr, cgutils.voidptr_t)

    return StatePtrType(s)(s), codegen


@intrinsic
def raw_params(typingctx, p):
    """Untracked pointer to a copy of ``P`` in the caller's frame (see the note above)."""
    if not isinstance(p, types.BaseNamedTuple):
        return None

    def codegen(context, builder, sig, args):
        ptr = cgutils.alloca_once_value(builder, args[0])
        return builder.bitcast(ptr, cgutils.voidptr_t)

    return ParamsPtrType(p)(p), codegen


class State(structref.StructRefProxy):
    """The engine state handed to the kernels (fields are :data:`STATE_FIELDS`).

    Build it with :func:`make_state` from a dict of arrays; Python code keeps using that dict
    (the kernels mutate the same arrays in place).
    """

    def __new__(cls, *args):
        return structref.StructRefProxy.__new__(cls, *args)


structref.define_constructor(State, StateType, list(STATE_FIELDS))
structref.define_boxing(StateType, State)


def _cached_constructor():
    """``State(*fields)`` as a cached jitted function.

    ``structref.define_constructor`` jits its constructor without a cache, and with ~170 array
    fields that compile took ~5 s in every new process. The wrapper is generated (one parameter
    per field) but compiled with this file as its source, so numba caches it next to the kernels
    and invalidates it when this file (hence ``STATE_FIELDS``) changes.
    """
    params = ", ".join(STATE_FIELDS)
    src = f"def _new_state({params}):\n    return State({params})\n"
    ns: dict = {}
    exec(compile(src, __file__, "exec"), globals(), ns)  # noqa: S102 - fixed, generated source
    return njit(cache=True)(ns["_new_state"])


_new_state = _cached_constructor()


def make_state(arrays: dict[str, np.ndarray]) -> State:
    """Wrap a dict of state arrays into a :class:`State` for the kernels."""
    return _new_state(*(arrays[k] for k in STATE_FIELDS))


PARAM_FIELDS = (
    "cc",
    "mtu",
    "hdr_bytes",
    "int_bytes",
    "ack_bytes",
    "pfc_bytes",
    "ack_interval",
    "chunk",
    "nack_ps",
    "win",
    "base_rtt_ns",
    "var_win",
    "rate_bound",
    "ack_hi",
    "sw_ack_hi",
    "ecn_on",
    "pfc_on",
    "buffer",
    "reserve",
    "resume_off",
    "g",
    "rai",
    "rhai",
    "min_rate",
    "dctcp_rai",
    "alpha_ps",
    "dec_ps",
    "rp_ps",
    "frt",
    "clamp",
    "first_cnp_frac",
    "u_target",
    "fast_react",
    "mi_thresh",
    "int_multi",
    "t_alpha",
    "t_beta",
    "t_low",
    "t_high",
    "t_minrtt",
    "trunc_ns",
    "sample_ps",
    "nvlink_rate",
    "n_ports",
    "wh_ps",
    "wh_ff",
    "wh_window",
    "wh_theta",
    "wh_min_skip",
    "wh_span_min",
    "wh_span",
    "wh_memo_on",
    "wh_margin_rtts",
    "wh_margin_span",
    "wh_signal",
    "wh_gap",
    "wh_data_only",
    "wh_partial",
)
Params = namedtuple("Params", PARAM_FIELDS)

_POOL = (
    "pk_type",
    "pk_flow",
    "pk_seq",
    "pk_size",
    "pk_payload",
    "pk_ecn",
    "pk_cnp",
    "pk_hop",
    "pk_route",
    "pk_inport",
    "pk_next",
    "pk_ts",
    "pk_nhop",
    "pk_it",
    "pk_ib",
    "pk_iq",
    "pk_ir",
    "pk_at",
    "pk_as",
)


def alloc_pool(n: int) -> dict[str, np.ndarray]:
    """Arrays of a packet pool of ``n`` packets (all free)."""
    i32, i64, i8 = np.int32, np.int64, np.int8
    d = dict(
        pk_type=np.zeros(n, i8),
        pk_flow=np.zeros(n, i32),
        pk_seq=np.zeros(n, i64),
        pk_size=np.zeros(n, i32),
        pk_payload=np.zeros(n, i32),
        pk_ecn=np.zeros(n, i8),
        pk_cnp=np.zeros(n, i8),
        pk_hop=np.zeros(n, i32),
        pk_route=np.zeros(n, i64),
        pk_inport=np.zeros(n, i32),
        pk_next=np.full(n, -1, i32),
        pk_ts=np.zeros(n, i64),
        pk_nhop=np.zeros(n, i32),
        pk_it=np.zeros((n, MAXHOP), i64),
        pk_ib=np.zeros((n, MAXHOP), i64),
        pk_iq=np.zeros((n, MAXHOP), i64),
        pk_ir=np.zeros((n, MAXHOP), i64),
        pk_at=np.zeros(n, i64),
        pk_as=np.zeros(n, i64),
    )
    d["free_stack"] = np.arange(n - 1, -1, -1, dtype=i32)
    return d


def grow_pool(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Double the packet pool (between kernel calls); in-use packets keep their index."""
    n = s["pk_type"].shape[0]
    new = alloc_pool(2 * n)
    for k in _POOL:
        new[k][:n] = s[k]
    free_n = int(s["cnt"][C_FREE])
    # free stack: old free entries on top of the new indices n..2n-1
    fs = np.empty(2 * n, np.int32)
    fs[:n] = np.arange(2 * n - 1, n - 1, -1, dtype=np.int32)
    fs[n : n + free_n] = s["free_stack"][:free_n]
    new["free_stack"] = fs
    s["cnt"][C_FREE] = free_n + n
    return {**s, **new}


def grow_heap(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Double the event heap capacity."""
    n = s["ht"].shape[0]
    out = {}
    for k in ("ht", "hs", "he", "ho"):
        b = np.zeros(2 * n, s[k].dtype)
        b[:n] = s[k]
        out[k] = b
    return {**s, **out}
