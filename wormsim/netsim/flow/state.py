"""State of the flow engine's kernel: counters and one StructRef over its arrays.

Built by :func:`wormsim.netsim.flow.build.build_arrays`; ``make_state`` wraps the dict of arrays
for the kernel (one pointer per call, not one per array). Rates are bytes/ps, times ps.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.experimental import structref

__all__ = ["N_COUNTERS", "make_state", "grow_log"]

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
N_COUNTERS = 24
#: float scalars (State.fsc): the re-rating threshold accumulated over a batch
F_THETA, F_FULL = 0, 1


_FIELDS = (
    "cnt",
    # DAG (wormsim.netsim.dag_runtime)
    "g_kind",
    "g_rank",
    "g_dur",
    "g_rem",
    "g_coff",
    "g_cidx",
    "g_start",
    "g_finish",
    # compute streams
    "rk_busy",
    "rk_head",
    "rk_tail",
    "g_cnext",
    # flows (per DAG node)
    "f_type",
    "f_wire",
    "f_lat",
    "f_roff",
    "f_res",
    "f_rem",
    "f_rate",
    "f_tupd",
    "f_new",
    # resources
    "res_cap",
    "res_head",
    "res_cnt",
    "inc_next",
    "inc_prev",
    "inc_flow",
    # node-done timers: an event heap (wormsim.netsim.packet.heap) keyed (time, seq), code = node
    "th_c",
    "th_t",
    "th_s",
    "th_e",
    "th_o",
    # drain times: an event heap keyed (time, node), lazy (fh_pos[v] = v's live drain time)
    "fh_c",
    "fh_t",
    "fh_s",
    "fh_e",
    "fh_o",
    "fh_pos",
    # re-rating scratch
    "seeds",
    "res_mark",
    "flow_mark",
    "comp_res",
    "comp_flows",
    "wf_cap",
    "wf_cnt",
    "new_rate",
    "sh",
    "nbmin",
    "fmin",
    "act",
    "new_list",
    "res_eval",
    "fsc",
    # rate log
    "log_t",
    "log_v",
    "log_r",
)


@structref.register
class _StateType(types.StructRef):
    """Numba type of the flow-engine state: one pointer per call, not one per array."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class _State(structref.StructRefProxy):
    """The flow-engine state (fields :data:`_FIELDS`); Python keeps the dict of arrays."""

    def __new__(cls, *args):
        return structref.StructRefProxy.__new__(cls, *args)


structref.define_constructor(_State, _StateType, list(_FIELDS))
structref.define_boxing(_StateType, _State)


def make_state(arrays: dict[str, np.ndarray]) -> _State:
    """The kernel's view of ``arrays`` (every field of :data:`_FIELDS`)."""
    return _State(*(arrays[k] for k in _FIELDS))


def grow_log(arrays: dict[str, np.ndarray]) -> None:
    """Double the rate log (in place in ``arrays``)."""
    cap = 2 * arrays["log_t"].shape[0] + 2 * int(arrays["cnt"][C_ACTIVE]) + 64
    k = int(arrays["cnt"][C_LOG_N])
    for name in ("log_t", "log_v", "log_r"):
        old = arrays[name]
        a = np.zeros(cap, old.dtype)
        a[:k] = old[:k]
        arrays[name] = a
