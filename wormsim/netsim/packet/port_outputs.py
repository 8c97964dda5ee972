"""The packet kernel's per-port outputs, one row each: the kernel state field that counts it, the
:class:`~wormsim.netsim.result.SimResult` entry it becomes, its ``ports.parquet`` column, unit and
meaning.

Everything that carries per-port outputs iterates over :data:`PORT_OUTPUTS`: the packet engine's
result (:func:`collect`), the flow engine's zeros (:func:`zeros`), the ``ports.parquet`` table
(:func:`columns`, in :mod:`wormsim.netsim.stage`) and the report's link and tier tables
(:mod:`wormsim.analysis.traffic`). To add a per-port output: a row here, with ``dtype`` when its
kernel field is new (the state table then declares that ``port`` field from the row,
:func:`own_fields`), and the kernel line that fills it. Rows without ``dtype`` name a field the
physics' table already declares because the kernel reads it too (PFC state, queue peaks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PortOutput",
    "PORT_OUTPUTS",
    "own_fields",
    "collect",
    "zeros",
    "columns",
    "result_names",
]

Arrays = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class PortOutput:
    """One per-port output of a run.

    Attributes
    ----------
    field : the kernel state field (dimension ``port``) that counts it.
    result : its key in ``SimResult.port_outputs`` (also a ``SimResult`` attribute).
    column : its ``ports.parquet`` column (the unit in the name).
    unit : ``bytes``, ``ps`` or ``count`` (a ``ps`` column is shown in µs and as a percentage
        of the iteration by the report).
    meaning : one line.
    tier : how the report's tier table aggregates it over a tier's ports: ``max`` or ``sum``.
    at_end : ``at_end(arrays, now_ps)``: the output from the end-of-run state, when it is more
        than a copy of ``field`` (``None``: a copy).
    dtype : the numpy type of ``field`` when this row declares it (a field only this output
        uses, starting at 0); ``None`` when the physics' table declares it.
    """

    field: str
    result: str
    column: str
    unit: str
    meaning: str
    tier: str = "sum"
    at_end: Callable[[Arrays, int], np.ndarray] | None = None
    dtype: type[np.generic] | None = None


def _with_pause_in_force(A: Arrays, now_ps: int) -> np.ndarray:
    """Ended pauses plus a pause still in force at the end, up to the end."""
    return A["pfc_paused_ps"] + np.where(A["pfc_since_ps"] >= 0, now_ps - A["pfc_since_ps"], 0)


# fmt: off
PORT_OUTPUTS: tuple[PortOutput, ...] = (
    PortOutput("peak_bytes", "peak_queue_bytes", "peak_queue_bytes", "bytes",
               "largest egress queue, both queues", tier="max"),
    PortOutput("pfc_paused_ps", "pfc_paused_ps", "pfc_paused_ps", "ps",
               "time its transmission was paused by PFC from its peer (a pause still in force "
               "at the end counted up to the end)", at_end=_with_pause_in_force),
    PortOutput("pfc_rx", "pfc_pause_frames", "pfc_pause_count", "count",
               "PFC pause frames it received"),
    PortOutput("ecn_marked", "ecn_marks", "ecn_mark_count", "count",
               "data packets it marked CE"),
)
# fmt: on
"""Every per-port output, in ``ports.parquet`` column order (after the port's own facts). The
functions below read this tuple when they are called, so a row added to it is carried through."""


def own_fields() -> list[tuple]:
    """The kernel fields the rows declare themselves, as state-table rows ``(name, dtype,
    "port", unit, 0, meaning)`` (:func:`~wormsim.netsim.common.field_spec.field_group`)."""
    return [
        (o.field, o.dtype, "port", o.unit, 0, o.meaning)
        for o in PORT_OUTPUTS
        if o.dtype is not None
    ]


def result_names() -> tuple[str, ...]:
    """The ``SimResult`` names of the per-port outputs, in table order."""
    return tuple(o.result for o in PORT_OUTPUTS)


def collect(A: Arrays, now_ps: int) -> dict[str, np.ndarray]:
    """The per-port outputs of a finished packet run (state arrays ``A``, simulated time
    ``now_ps``), by ``SimResult`` name."""
    return {
        o.result: (o.at_end(A, now_ps) if o.at_end is not None else A[o.field].copy())
        for o in PORT_OUTPUTS
    }


def zeros(n_ports: int) -> dict[str, np.ndarray]:
    """Per-port outputs of an engine that counts none of them (the flow engine): zeros of each
    field's dtype."""
    from wormsim.netsim.packet.fields import STATE_TABLE  # the table imports this module

    return {o.result: np.zeros(n_ports, STATE_TABLE[o.field].dtype) for o in PORT_OUTPUTS}


def columns(outputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``SimResult.port_outputs`` as ``ports.parquet`` columns, in table order."""
    return {o.column: outputs[o.result] for o in PORT_OUTPUTS}
