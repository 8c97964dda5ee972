"""Structure-of-arrays state of the packet engine and its scalar parameters.

``State`` is a structref over numpy arrays (mutated in place by the kernels) whose fields are the
rows of :data:`~wormsim.netsim.packet.fields.STATE_TABLE`; ``Params`` a namedtuple of scalars.
Mutable scalars live in ``State.cnt`` at the ``C_*`` indices.
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

from wormsim.netsim.common.field_spec import FieldLayoutError
from wormsim.netsim.packet.fields import MAXHOP, N_COUNTERS, PARAMS, STATE_TABLE

__all__ = [
    "State",
    "StateType",
    "make_state",
    "Params",
    "STATE_FIELDS",
    "STATE_TABLE",
    "PARAM_FIELDS",
    "MAXHOP",
    "N_COUNTERS",
    "FieldLayoutError",
    "grow_pool",
    "grow_heap",
    "alloc_pool",
    "raw_state",
    "raw_params",
]

# ---- counters (State.cnt): slot = position in counters.COUNTERS (a test holds this order) ---
(
    C_HEAPN, C_SEQ, C_FREE, C_EVENTS, C_DATA_SENT, C_HOPS, C_DROPS, C_PFC, C_ECN, C_CNP,
    C_PEAK_PKTS, C_INUSE, C_RNG, C_NODES_DONE, C_FLUID_GEN, C_MONQ, C_MONR, C_MONLOST, C_NOW,
    C_FLUID_N, C_FLUID_LAST, C_NACKS, C_RESUMES,
    C_WH_DIRTY, C_WH_SKIPS, C_WH_BACKS, C_WH_STEADY, C_WH_PARTS, C_WH_BYTES, C_WH_MEMO,
    C_WH_NACT, C_WH_NTP, C_WH_TUNNELS, C_WH_DEFERS, C_WH_PARKED, C_WH_RELEASED, C_WH_UNPARKED,
    C_WH_MIRRORED, C_WH_HOLDS, C_WH_REMAPS, C_WH_LIVE, C_WH_ORPHANS, C_WH_EMPTIED,
    C_WH_PORTS_BACK, C_CURSEQ, C_FS_PEND, C_FS_LIVE, C_WH_MEMO_PAUSE, C_WH_SHADOW_BYTES,
) = range(N_COUNTERS)  # fmt: skip

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
    EV_QPSTART,
    EV_WH,
    EV_TUNNEL,
    EV_DEFER,
    EV_LAND,
    EV_FLAND,
) = range(15)
EV_FIRST_WH = EV_WH
"""Wormhole's event types are the codes from here on (the loop hands them to
``wormhole.hooks.wh_event``); those before are the physics'. Equal times pop by sequence number,
never by type, so the numbering decides nothing of the order."""

# ---- packet types ----------------------------------------------------------------------------
PK_DATA, PK_ACK, PK_NACK, PK_PFC = 0, 1, 2, 3

STATE_FIELDS = STATE_TABLE.names
"""The state's field names, in the order of the structref (generated from the field table)."""


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

    ``structref.define_constructor`` jits its constructor without a cache, and with ~180 array
    fields that compile took ~5 s in every new process. The wrapper is generated (one parameter
    per field) but compiled with this file as its source, so numba caches it next to the kernels.
    numba would invalidate it only when this file changes; the package's cache guard
    (:mod:`wormsim.kernel_cache`) also drops it when ``fields.py`` (hence ``STATE_FIELDS``), or
    another module this one imports, changes.
    """
    params = ", ".join(STATE_FIELDS)
    src = f"def _new_state({params}):\n    return State({params})\n"
    ns: dict = {}
    exec(compile(src, __file__, "exec"), globals(), ns)  # noqa: S102 - fixed, generated source
    return njit(cache=True)(ns["_new_state"])


_new_state = _cached_constructor()


def make_state(arrays: dict[str, np.ndarray]) -> State:
    """Wrap a dict of state arrays into a :class:`State` for the kernels.

    Raises
    ------
    FieldLayoutError
        If ``arrays`` is not exactly the table's fields at their dtypes, ranks and C layout
        (numba would otherwise compile the kernels again for the other array types).
    """
    STATE_TABLE.check_types(arrays)
    return _new_state(*(arrays[k] for k in STATE_FIELDS))


PARAM_FIELDS = tuple(p.name for p in PARAMS)
Params = namedtuple("Params", PARAM_FIELDS)


def alloc_pool(n: int) -> dict[str, np.ndarray]:
    """Arrays of a packet pool of ``n`` packets (all free): the fields along ``packet``."""
    d = STATE_TABLE.allocate({"packet": n}, STATE_TABLE.along("packet"))
    d["free_stack"] = np.arange(n - 1, -1, -1, dtype=STATE_TABLE["free_stack"].dtype)
    return d


def grow_pool(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Double the packet pool (between kernel calls); in-use packets keep their index."""
    n = s["free_stack"].shape[0]
    new = STATE_TABLE.grow(s, "packet", 2 * n, skip=("free_stack",))
    free_n = int(s["cnt"][C_FREE])
    # free stack: old free entries on top of the new indices n..2n-1
    fs = np.empty(2 * n, STATE_TABLE["free_stack"].dtype)
    fs[:n] = np.arange(2 * n - 1, n - 1, -1, dtype=fs.dtype)
    fs[n : n + free_n] = s["free_stack"][:free_n]
    new["free_stack"] = fs
    s["cnt"][C_FREE] = free_n + n
    return {**s, **new}


def grow_heap(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Double the event heap capacity: the fields along ``heap``."""
    return {**s, **STATE_TABLE.grow(s, "heap", 2 * s["ht"].shape[0])}
