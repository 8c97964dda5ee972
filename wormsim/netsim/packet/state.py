"""Structure-of-arrays state of the packet engine and its scalar parameters.

``State`` hands the kernels the arrays of :data:`~wormsim.netsim.packet.fields.STATE_TABLE`
(mutated in place) as one pointer; ``Params`` (``WhParams`` in Wormhole mode) is a namedtuple of
scalars. Mutable scalars live in ``State.cnt`` at the ``C_*`` indices.

The mode is part of the types: a packet-mode state and parameters carry no Wormhole field, and
the Wormhole hooks (:mod:`~wormsim.netsim.packet.wormhole.hooks`) compile to nothing for them,
so a packet-mode run compiles the physics alone.
"""

from __future__ import annotations

import hashlib
from collections import namedtuple

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, imputils, types
from numba.core.extending import (
    NativeValue,
    infer_getattr,
    intrinsic,
    lower_getattr_generic,
    models,
    register_model,
    typeof_impl,
    unbox,
)
from numba.core.typing.templates import AttributeTemplate

from wormsim.netsim.common.field_spec import FieldLayoutError
from wormsim.netsim.packet.fields import (
    MAXHOP,
    N_COUNTERS,
    PARAMS,
    PHYSICS_TABLE,
    STATE_TABLE,
    WH_PARAMS,
)

__all__ = [
    "EVENT_NAMES",
    "CC_SUB_BITS",
    "CC_SUB_MASK",
    "RUN_FINISHED",
    "RUN_STOPPED",
    "RUN_NEEDS_ROOM",
    "RUN_MEMO_PENDING",
    "State",
    "StateType",
    "PACKET_STATE",
    "WORMHOLE_STATE",
    "make_state",
    "Params",
    "WhParams",
    "STATE_FIELDS",
    "STATE_TABLE",
    "PARAM_FIELDS",
    "WH_PARAM_FIELDS",
    "MAXHOP",
    "N_COUNTERS",
    "FieldLayoutError",
    "grow_pool",
    "grow_heap",
    "alloc_pool",
    "raw_params",
]

# ---- counters (State.cnt): the slot names are counters.py's, one per row, in its order -----
from wormsim.netsim.packet.counters import *  # noqa: E402, F403  (every C_* slot name)
from wormsim.netsim.packet.counters import C_FREE  # noqa: E402

# ---- event types -----------------------------------------------------------------------------
# An event's code is ``type | arg << 8`` (``heap.py``): 8 bits of type, 56 of arg.
(
    EV_TXDONE,
    EV_ARRIVE,
    EV_NICWAKE,
    EV_CC,
    EV_DAGDONE,
    EV_FLUID,
    EV_SAMPLE,
    EV_QPSTART,
    EV_WH,
    EV_TUNNEL,
    EV_DEFER,
    EV_LAND,
    EV_FLAND,
) = range(13)
EV_FIRST_WH = EV_WH
"""Wormhole's event types are the codes from here on (the loop hands them to
``wormhole.hooks.wh_event``); those before are the physics'. Equal times pop by sequence number,
never by type, so the numbering decides nothing of the order."""

EVENT_NAMES = (
    "tx_done",
    "arrive",
    "nic_wake",
    "cc_timer",
    "dag_done",
    "fluid",
    "sample",
    "qp_start",
    "wormhole",
    "tunnel",
    "defer",
    "land",
    "flow_land",
)
"""A name for each event type, by its code (event-mix reports)."""

CC_SUB_BITS = 2
"""``EV_CC`` (a congestion control's timer) carries ``sub | arg << CC_SUB_BITS``: the control's
own sub-code (< 4, e.g. DCQCN's ``T_ALPHA``, ``T_DEC``, ``T_RP``) in the low bits of the event's
arg and its own ``arg`` above them; the loop calls ``cc.cc_on_timer(S, P, sub, arg, now)``
(``core.push_cc_timer`` packs it). An event code is a signed 64-bit ``type | arg << 8``, so a
control's own arg has 53 bits: DCQCN's ``q | gen << 24`` keeps 24 bits of QP id whole and 29 of
generation."""
CC_SUB_MASK = (1 << CC_SUB_BITS) - 1

# ---- run_kernel's return statuses ------------------------------------------------------------
RUN_FINISHED = 0
"""No events left: the run is over."""
RUN_STOPPED = 1
"""Reached ``t_stop`` or the call's event budget; the next call carries on where it stopped."""
RUN_NEEDS_ROOM = 2
"""The packet pool or the heap is short of its margin: grow it (``grow_pool``, ``grow_heap``)
and call again (nothing was lost)."""
RUN_MEMO_PENDING = 3
"""Wormhole memo work is pending: serve it (``MemoBridge.service``) and call again."""

# ---- packet types ----------------------------------------------------------------------------
PK_DATA, PK_ACK, PK_NACK, PK_PFC = 0, 1, 2, 3

STATE_FIELDS = STATE_TABLE.names
"""Every field of a Wormhole-mode state, in its order (the physics' fields, then Wormhole's)."""


# ---- the state as the kernels see it ---------------------------------------------------------
# A kernel gets the state as one pointer to a block of array descriptors, one per field in the
# table's order, each laid out as numba lays out an array value (meminfo, parent, nitems,
# itemsize, data, shape..., strides...). Python builds the block once per set of arrays
# (:class:`State`) and keeps the arrays alive; ``S.field`` in a kernel loads the descriptor and
# comes back as a borrowed view (no meminfo: no reference counting in the event loop), marked
# invariant (fields are never reassigned inside a kernel call). Its numba type names its mode
# and a digest of its fields, and is all a kernel is typed on: there is no struct to construct,
# box or unbox, so nothing is compiled per field.


class StateType(types.Type):
    """Numba type of a :class:`State`: its mode (``"packet"`` or ``"wormhole"``) and fields."""

    def __init__(self, mode: str, fields: tuple[tuple[str, types.Type], ...]):
        self.mode = mode
        self.fields = fields
        self.field_dict = dict(fields)
        self.position = {name: i for i, (name, _) in enumerate(fields)}
        digest = hashlib.sha256(repr(fields).encode()).hexdigest()[:16]
        super().__init__(name=f"PacketState({mode}, {len(fields)} fields, {digest})")

    @property
    def wormhole(self) -> bool:
        """Whether Wormhole's fields are part of the state (the mode the kernels compile for)."""
        return self.mode == "wormhole"


def _state_type(mode: str, table) -> StateType:
    return StateType(
        mode,
        tuple(
            (f.name, types.Array(numba.from_dtype(np.dtype(f.dtype)), len(f.dims), "C"))
            for f in table
        ),
    )


PACKET_STATE = _state_type("packet", PHYSICS_TABLE)
"""The state's type in packet mode: the physics' fields only, so no Wormhole code compiles."""
WORMHOLE_STATE = _state_type("wormhole", STATE_TABLE)
"""The state's type in Wormhole mode: the physics' fields, then Wormhole's."""

register_model(StateType)(models.OpaqueModel)


class State:
    """The engine state handed to the kernels: the arrays of one mode's table and the block of
    their descriptors (see the note above). Python code keeps using the dict it was made from
    (the kernels mutate the same arrays in place).

    Build it with :func:`make_state`.
    """

    __slots__ = ("arrays", "numba_type", "_block", "address")

    def __init__(self, arrays: dict[str, np.ndarray], numba_type: StateType):
        words: list[int] = []
        kept = []
        for name, _ in numba_type.fields:
            a = arrays[name]
            kept.append(a)
            words += [0, 0, a.size, a.itemsize, a.ctypes.data, *a.shape, *a.strides]
        self.arrays = kept
        self.numba_type = numba_type
        self._block = np.array(words, np.int64) if words else np.zeros(1, np.int64)
        self.address = int(self._block.ctypes.data)


@typeof_impl.register(State)
def _typeof_state(val: State, c) -> StateType:
    return val.numba_type


@unbox(StateType)
def _unbox_state(typ, obj, c):
    address = c.pyapi.object_getattr_string(obj, "address")
    ptr = c.pyapi.long_as_voidptr(address)
    c.pyapi.decref(address)
    return NativeValue(ptr, is_error=c.pyapi.c_api_error())


@infer_getattr
class _StateAttribute(AttributeTemplate):
    key = StateType

    def generic_resolve(self, typ, attr):
        return typ.field_dict.get(attr)


def _invariant_load(builder, ptr):
    v = builder.load(ptr)
    v.set_metadata("invariant.load", builder.module.add_metadata([]))
    return v


@lower_getattr_generic(StateType)
def _state_getattr(context, builder, typ, val, attr):
    block = ir.LiteralStructType([context.get_value_type(t) for _, t in typ.fields])
    ptr = builder.bitcast(val, block.as_pointer())
    fieldtype = typ.field_dict[attr]
    ret = _invariant_load(builder, cgutils.gep_inbounds(builder, ptr, 0, typ.position[attr]))
    return imputils.impl_ret_untracked(context, builder, fieldtype, ret)


# ---- untracked parameters ---------------------------------------------------------------------
# ``P`` is a namedtuple of scalars passed by value; the entry points copy it to their frame
# once (:func:`raw_params`) and hand callees a pointer, so a call does not copy ~80 scalars.


class ParamsPtrType(types.Type):
    """Raw pointer to a stack copy of the :class:`Params` tuple (kernel-internal)."""

    def __init__(self, pt):
        self.pt = pt
        super().__init__(name=f"ParamsPtr({pt.name})")


register_model(ParamsPtrType)(models.OpaqueModel)


@infer_getattr
class _ParamsPtrAttribute(AttributeTemplate):
    key = ParamsPtrType

    def generic_resolve(self, typ, attr):
        if attr in typ.pt.fields:
            return typ.pt.types[typ.pt.fields.index(attr)]


@lower_getattr_generic(ParamsPtrType)
def _params_ptr_getattr(context, builder, typ, val, attr):
    model = context.data_model_manager[typ.pt]
    ptr = builder.bitcast(val, model.get_value_type().as_pointer())
    idx = typ.pt.fields.index(attr)
    ret = builder.load(cgutils.gep_inbounds(builder, ptr, 0, idx))
    return imputils.impl_ret_untracked(context, builder, typ.pt.types[idx], ret)


@intrinsic
def raw_params(typingctx, p):
    """Untracked pointer to a copy of ``P`` in the caller's frame (see the note above)."""
    if not isinstance(p, types.BaseNamedTuple):
        return None

    def codegen(context, builder, sig, args):
        ptr = cgutils.alloca_once_value(builder, args[0])
        return builder.bitcast(ptr, cgutils.voidptr_t)

    return ParamsPtrType(p)(p), codegen


def make_state(arrays: dict[str, np.ndarray], wormhole: bool = False) -> State:
    """The kernels' view of a dict of state arrays, for packet mode or (``wormhole``) Wormhole
    mode.

    Raises
    ------
    FieldLayoutError
        If ``arrays`` is not exactly the table's fields at their dtypes, ranks and C layout
        (numba would otherwise compile the kernels again for the other array types).
    """
    STATE_TABLE.check_types(arrays)
    return State(arrays, WORMHOLE_STATE if wormhole else PACKET_STATE)


PARAM_FIELDS = tuple(p.name for p in PARAMS)
Params = namedtuple("Params", PARAM_FIELDS)
"""The physics' scalars (:data:`~wormsim.netsim.packet.fields.PARAMS`): a packet-mode run's."""
WH_PARAM_FIELDS = tuple(p.name for p in WH_PARAMS)
WhParams = namedtuple("WhParams", PARAM_FIELDS + WH_PARAM_FIELDS)
"""A Wormhole run's scalars: the physics', then Wormhole's
(:data:`~wormsim.netsim.packet.wormhole.fields.WH_PARAMS`)."""


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
    return {**s, **STATE_TABLE.grow(s, "heap", 2 * s["ht_ps"].shape[0])}
