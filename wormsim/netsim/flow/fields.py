"""The flow engine's state, described once: every array of its StructRef with its dtype,
dimensions, unit and meaning.

:data:`STATE_TABLE` is the one list of the flow kernel's fields. Everything else derives from it:
``state.STATE_FIELDS`` (the order of the StructRef's fields), the mechanical allocation in
``build.build_arrays``, which fields ``state.grow_log`` grows (those along ``log``), the check that
``build_arrays`` produced every field at its declared dtype and shape, and the flow-engine field
reference in ``docs/reference/engine-fields.md`` (``python -m wormsim.netsim.flow.fields``
prints it).

Conventions
-----------
* **Rates carry their unit in the name**, as in the packet engine: the flow kernel computes in
  bytes per picosecond (``_Bpps``: bytes = rate × ps needs no conversion) and logs bit/s
  (``_bps``); :class:`~wormsim.netsim.common.field_spec.FieldTable` refuses a rate field without its
  suffix, or a suffix on anything else.
* **Times carry their unit in the name** too: every field in ps ends in ``_ps``, and no other
  field does (``field_spec.UNIT_SUFFIXES``).
* ``init`` is the value an array starts at; ``None`` means ``build_arrays`` computes it.
* The DAG executor's arrays are :data:`~wormsim.netsim.common.dag_runtime.DAG_RUNTIME_FIELDS`, the
same
  entries as the packet engine's.

To add a field: add a row here (the kernel then sees it as ``S.name``); if its ``init`` is
``None``, compute it in ``build.build_arrays``.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.dag_runtime import DAG_RUNTIME_DIMS, DAG_RUNTIME_FIELDS
from wormsim.netsim.common.field_spec import (
    COMMON_UNITS,
    RATE_SUFFIXES,
    UNIT_SUFFIXES,
    Dim,
    DocBlock,
    FieldSpec,
    FieldTable,
)

__all__ = [
    "STATE_TABLE",
    "STATE_DIMS",
    "UNITS",
    "RATE_SUFFIXES",
    "N_COUNTERS",
    "N_FLOAT_SCALARS",
    "DRAIN_HEAP_SLACK",
    "DOC",
]

N_COUNTERS = 24
"""Slots of ``cnt`` (the ``C_*`` indices of :mod:`~wormsim.netsim.flow.state`)."""

N_FLOAT_SCALARS = 4
"""Slots of ``fsc`` (the ``F_*`` indices of :mod:`~wormsim.netsim.flow.state`)."""

DRAIN_HEAP_SLACK = 1024
"""Drain-heap slots beyond 3 per network flow (stale entries are compacted past that)."""

UNITS = {
    **COMMON_UNITS,
    "bytes": "bytes (flow sizes, bytes left)",
    "count": "a number of things, or a batch / re-rating number used as a mark",
    "index": "a position in another field's array; -1 = none",
}
"""The units of the state's values."""


STATE_DIMS = (
    Dim("counter", f"`C_*` counter slot ({N_COUNTERS})", fixed=N_COUNTERS),
    Dim("float_scalar", f"`F_*` float scalar slot ({N_FLOAT_SCALARS})", fixed=N_FLOAT_SCALARS),
    *DAG_RUNTIME_DIMS,
    Dim(
        "dag_slot",
        "slot of a list of DAG nodes (timer heap, re-rating lists): one per node, at least 1",
        extent=lambda s: max(s["dag_node"], 1),
    ),
    Dim(
        "resource",
        "resource: fabric port `p`, NVLink egress `n_ports + h`, ingress `n_ports + n_nodes + h` "
        "(`n_ports + 2 × n_nodes`)",
    ),
    Dim(
        "incidence",
        "entry of the flows' resource lists (`f_roff[v]` ..): one resource of one flow",
    ),
    Dim("heap_count", "heap bookkeeping: entries in the heap, next sequence number", fixed=2),
    Dim(
        "drain_slot",
        f"drain-heap slot: 3 per network flow (`sizes['flow']`) + {DRAIN_HEAP_SLACK}",
        extent=lambda s: 3 * s["flow"] + DRAIN_HEAP_SLACK,
    ),
    Dim("log", "rate-log entry (`log_capacity`, at least 1; doubled by `grow_log`)"),
)
"""The dimensions the state's arrays are indexed by."""

i8, i32, i64, f8 = np.int8, np.int32, np.int64, np.float64
B = None  # init: built by ``build.build_arrays`` from the scenario


def _group(group: str, rows: tuple) -> list[FieldSpec]:
    """Rows ``(name, dtype, "dim dim", unit, init, meaning)`` of one group as field specs."""
    return [
        FieldSpec(name, dtype, tuple(dims.split()), unit, meaning, init, group)
        for name, dtype, dims, unit, init, meaning in rows
    ]


# fmt: off
_FIELDS = [
    *_group("counters", (
        ("cnt", i64, "counter", "mixed", 0,
         "counters and mutable scalars at the `C_*` indices: counts, `C_NOW` ps, `C_RECORD` flag"),
    )),
    *DAG_RUNTIME_FIELDS,
    *_group("flows (per DAG node)", (
        ("f_type", i8, "dag_node", "code", B,
         "`FT_NONE`, `FT_INSTANT`, `FT_NVLINK` or `FT_FABRIC` (`flow_plan`)"),
        ("f_wire", f8, "dag_node", "bytes", B,
         "bytes on the wire: size + headers (fabric), size (NVLink)"),
        ("f_lat_ps", i64, "dag_node", "ps", B,
         "fabric: finish after the drain (data-route delay + serialization, ACK-route delay)"),
        ("f_roff", i64, "dag_offset", "index", B, "start of its resources in `f_res`"),
        ("f_res", i64, "incidence", "id", B, "the resources it crosses"),
        ("f_rem", f8, "dag_node", "bytes", 0, "bytes left to drain at `f_tupd_ps`"),
        ("f_rate_Bpps", f8, "dag_node", "bytes/ps", 0, "its max-min fair rate"),
        ("f_tupd_ps", i64, "dag_node", "ps", 0, "when `f_rem` was last brought up to date"),
        ("f_new", i8, "dag_node", "flag", 0, "started in this batch, not rated yet"),
    )),
    *_group("resources", (
        ("res_cap_Bpps", f8, "resource", "bytes/ps", B,
         "capacity: a port's usable rate, `nvlink_rate_bps` / `BPS_PER_BYTE_PER_PS`"),
        ("res_head", i64, "resource", "index", -1, "first of its flows' entries (`inc_*`)"),
        ("res_cnt", i64, "resource", "count", 0, "flows crossing it"),
        ("inc_next", i64, "incidence", "index", -1, "next entry on the same resource"),
        ("inc_prev", i64, "incidence", "index", -1, "previous entry on the same resource"),
        ("inc_flow", i64, "incidence", "id", B, "the flow (DAG node) of the entry"),
    )),
    *_group("node-done timers (`timers.py`: event heap keyed (time, seq), code = DAG node)", (
        ("th_c", i64, "heap_count", "count", 0, "entries in the heap, next sequence number"),
        ("th_t_ps", i64, "dag_slot", "ps", 0, "finish time"),
        ("th_s", i64, "dag_slot", "count", 0, "sequence number: equal times pop in this order"),
        ("th_e", i64, "dag_slot", "id", 0, "the DAG node that finishes"),
        ("th_o", i32, "dag_slot", "id", 0, "owner (unused, 0)"),
    )),
    *_group("drain times (`timers.py`: lazy event heap keyed (time, node))", (
        ("fh_c", i64, "heap_count", "count", 0, "entries in the heap (slot 1 unused)"),
        ("fh_t_ps", i64, "drain_slot", "ps", 0, "drain time"),
        ("fh_s", i64, "drain_slot", "id", 0, "tie-break: the DAG node"),
        ("fh_e", i64, "drain_slot", "id", 0, "the draining flow (DAG node)"),
        ("fh_o", i32, "drain_slot", "id", 0, "owner (unused, 0)"),
        ("fh_pos_ps", i64, "dag_node", "ps", -1,
         "its live drain time (-1 = none; heap entries at other times are stale)"),
    )),
    *_group("re-rating scratch (`maxmin.py`)", (
        ("seeds", i64, "resource", "id", 0, "resources touched in the batch (`C_NSEED`)"),
        ("res_mark", i64, "resource", "count", 0,
         "re-rating stamp that reached it, or -(batch + 1) once seeded in that batch"),
        ("flow_mark", i64, "dag_node", "count", 0, "re-rating stamp that reached it"),
        ("comp_res", i64, "resource", "id", 0, "the resources of the component re-rated"),
        ("comp_flows", i64, "dag_slot", "id", 0, "the flows of the component re-rated"),
        ("wf_cap_Bpps", f8, "resource", "bytes/ps", 0,
         "residual capacity: less fixed flows, less frozen ones while filling"),
        ("wf_cnt", i64, "resource", "count", 0, "its unfrozen flows while filling"),
        ("new_rate_Bpps", f8, "dag_node", "bytes/ps", 0, "the rate the filling gives it"),
        ("sh_Bpps", f8, "resource", "bytes/ps", 0, "fair share in the current round"),
        ("nbmin_Bpps", f8, "resource", "bytes/ps", 0,
         "smallest fair share its flows see in the current round"),
        ("fmin_Bpps", f8, "dag_node", "bytes/ps", 0,
         "smallest fair share on its route in the current round"),
        ("act", i64, "dag_slot", "id", 0, "the flows still unfrozen"),
        ("new_list", i64, "dag_slot", "id", 0, "flows started in the batch (`C_NNEW`)"),
        ("res_eval", i64, "resource", "count", -1,
         "batch whose saturation level was last computed for it"),
        ("fsc", f8, "float_scalar", "mixed", 0.0,
         "float scalars: `F_THETA` the batch's re-rating level (bytes/ps, `inf` = none), "
         "`F_FULL` flag: re-rate whole components"),
    )),
    *_group("rate log (`record_rates`)", (
        ("log_t_ps", i64, "log", "ps", 0, "time of the rate change"),
        ("log_v", i64, "log", "id", 0, "the flow (DAG node)"),
        ("log_r_bps", f8, "log", "bit/s", 0, "its new rate (0 when it drains)"),
    )),
]
# fmt: on

STATE_TABLE = FieldTable(STATE_DIMS, _FIELDS, UNITS, UNIT_SUFFIXES)
"""The flow kernel's state, field by field, in the order of its StructRef."""


DOC = DocBlock("<!-- flow-state-fields:begin", "<!-- flow-state-fields:end -->")
"""Markers of the generated reference in ``docs/reference/engine-fields.md`` (the begin line
may say more)."""


if __name__ == "__main__":  # print the reference, or --update FILE
    DOC.cli(
        STATE_TABLE, None, "Print this field table's reference of docs/reference/engine-fields.md."
    )
