"""State of the flow engine's kernel: counters and one StructRef over its arrays.

Built by :func:`wormsim.netsim.flow.build.build_arrays`; ``make_state`` wraps the dict of arrays
for the kernel (one pointer per call, not one per array). The fields are those of
:data:`wormsim.netsim.flow.fields.STATE_TABLE`. Rates are bytes/ps (``_Bpps``), times ps.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.experimental import structref

from wormsim.netsim.flow.fields import N_COUNTERS, STATE_TABLE

__all__ = ["N_COUNTERS", "STATE_FIELDS", "NOT_STATE", "make_state", "grow_log"]

# counters
(
    C_NOW,
    C_DONE,
    C_RERATE,
    C_STAMP,
    C_LOG_N,
    C_LOG_LOST,
    C_ACTIVE,
    C_PEAK_ACTIVE,
    C_COMP_FLOWS,
    C_COMP_RES,
    C_NET_STARTED,
    C_NV_STARTED,
    C_INSTANT,
    C_BATCHES,
    C_RECORD,
    C_NSEED,
    C_INITED,
    C_NNEW,
    C_ROUNDS,
) = range(19)
# (N_COUNTERS, the length of ``cnt``, is the fixed extent of its dimension in fields.py)
#: float scalars (State.fsc): the re-rating threshold accumulated over a batch
F_THETA, F_FULL = 0, 1


STATE_FIELDS: tuple[str, ...] = STATE_TABLE.names
"""The StructRef's fields, in order: those of :data:`~wormsim.netsim.flow.fields.STATE_TABLE`."""
_FIELDS = STATE_FIELDS

NOT_STATE = frozenset({"r_off", "r_ports"})
"""Keys of ``build_arrays``' dict that are not kernel state: the compiled routes, for the
caller."""


@structref.register
class _StateType(types.StructRef):
    """Numba type of the flow-engine state: one pointer per call, not one per array."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class _State(structref.StructRefProxy):
    """The flow-engine state (fields :data:`STATE_FIELDS`); Python keeps the dict of arrays."""

    def __new__(cls, *args):
        return structref.StructRefProxy.__new__(cls, *args)


structref.define_constructor(_State, _StateType, list(_FIELDS))
structref.define_boxing(_StateType, _State)


def make_state(arrays: dict[str, np.ndarray]) -> _State:
    """The kernel's view of ``arrays``: the fields of :data:`STATE_FIELDS`, besides the
    :data:`NOT_STATE` keys ``build_arrays`` returns for the caller.

    Raises
    ------
    FieldLayoutError
        If ``arrays`` (less :data:`NOT_STATE`) is not exactly the table's fields at their dtypes,
        ranks and C layout (numba would otherwise compile the kernel again for other types).
    """
    STATE_TABLE.check_types({k: a for k, a in arrays.items() if k not in NOT_STATE})
    return _State(*(arrays[k] for k in _FIELDS))


def grow_log(arrays: dict[str, np.ndarray]) -> None:
    """Grow the rate log (the fields along ``log``, in place in ``arrays``) to twice its length
    plus room for a rate change of every active flow; the entries logged so far are kept."""
    cap = 2 * arrays["log_t_ps"].shape[0] + 2 * int(arrays["cnt"][C_ACTIVE]) + 64
    arrays.update(STATE_TABLE.grow(arrays, "log", cap))
