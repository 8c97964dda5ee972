"""How big an experiment gets, estimated before anything large is built.

:func:`check_scale` runs when an experiment loads: it bounds the ops, the DAG nodes (so the memory)
and the simulated time of one iteration, and refuses an experiment beyond the limits with the
estimate, the limit and the fields to change. The ops count is exact (one stage template per
pipeline stage, as the builder writes them); the DAG count is an estimate from the collectives'
algorithms (steps x channels x chunks per member); the time is each rank's compute plus its bytes
sent through the NIC, a lower bound of the iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wormsim.collective.config import CollectiveSpec
from wormsim.humanize import human_number as _num
from wormsim.inputs import MAX_TIME_PS, format_ps
from wormsim.units import BPS_PER_BYTE_PER_PS, BPS_PER_GBPS_F, BYTES_PER_GB_F

from .errors import WorkloadError
from .hardware import HardwareSpec
from .model import ModelSpec
from .parallel import ParallelSpec
from .plan import WorkloadPlan, plan_workload
from .stage_builder import StageBuilder
from .template import TemplateOp

__all__ = [
    "WorkloadScale",
    "estimate_scale",
    "check_scale",
    "check_ops_count",
    "MAX_OPS",
    "MAX_DAG_NODES",
    "MAX_MESSAGE_BYTES",
]

#: Most ops (rows of ops.parquet) of one experiment.
MAX_OPS = 40_000_000
#: Most DAG nodes (estimated) of one experiment: about 26 GB of tables and engine state.
MAX_DAG_NODES = 64_000_000
#: Largest single message (1 PiB).
MAX_MESSAGE_BYTES = 1 << 50
#: Memory per op and per DAG node (tables, engine state), bytes; for the messages.
BYTES_PER_OP, BYTES_PER_DAG_NODE = 120, 400


@dataclass(frozen=True)
class WorkloadScale:
    """Size and duration of one iteration, before it is built.

    Attributes
    ----------
    ops : int
        Rows of ops.parquet (exact).
    dag_nodes : int
        DAG nodes (estimate).
    memory_bytes : int
        Memory of the tables and the engine state (estimate).
    compute_ps, comm_ps : int
        The busiest rank's compute, and its bytes sent at the NIC rate, per iteration.
    """

    ops: int
    dag_nodes: int
    memory_bytes: int
    compute_ps: int
    comm_ps: int


def _group_size(plan: WorkloadPlan, group: str) -> int:
    lay = plan.layout
    return {
        "tp": lay.tp,
        "cp": lay.cp,
        "dp": lay.dp,
        "dp_cp": lay.dp * lay.cp,
        "pp": 2,
        "ep": lay.ep,
        "edp": lay.edp,
        "etp": lay.etp,
    }.get(group, 1)


def _steps(collective: str, g: int) -> tuple[int, float]:
    """Flows per member of one channel, and bytes sent per byte of buffer."""
    if collective in ("send", "recv"):
        return 1, 0.5  # the pair's flow counted once, on each of its two ops
    if collective == "allreduce":
        return 2 * (g - 1), 2 * (g - 1) / g
    return g - 1, (g - 1) / g


def _op_nodes(op: TemplateOp, plan: WorkloadPlan, coll: CollectiveSpec, gpn: int) -> int:
    """DAG nodes one member's op expands into (estimate)."""
    g = _group_size(plan, op.group)
    if op.kind != "comm" or g <= 1 or op.size_bytes <= 0:
        return 1
    steps, _ = _steps(op.collective, g)
    if op.collective in ("send", "recv"):
        chunk = coll.p2p_chunk_bytes
        return 1 + (math.ceil(op.size_bytes / chunk) if chunk else 1)
    intra = op.group in ("tp", "etp") and g <= gpn
    if intra and coll.intra_node == "aggregate":
        return 2
    channels = 1 if intra else coll.max_channels
    loops = 1
    if coll.granularity == "nccl_chunks":
        loops = math.ceil(op.size_bytes / (channels * g * coll.nccl_chunk_bytes))
    return 1 + steps * channels * loops


def _check_message(op: TemplateOp) -> None:
    if op.size_bytes > MAX_MESSAGE_BYTES:
        raise WorkloadError(
            f"op {op.name} sends {op.size_bytes:,} bytes, over the limit of "
            f"{MAX_MESSAGE_BYTES:,} (1 PiB); check model.hidden_size, model.seq_length, "
            "parallel.micro_batch and the *_bytes fields of parallel"
        )


def _lower_bound_ops(plan: WorkloadPlan, gpus: int) -> int:
    """Ops per layer and micro-batch at the least: attention (one per CP round) and MLP, forward
    and backward."""
    layers_per_stage = plan.model.num_layers // plan.layout.pp
    return gpus * plan.microbatches * layers_per_stage * (2 * plan.layout.cp + 2)


def check_ops_count(ops: int, what: str, fix: str) -> None:
    """Refuse more than :data:`MAX_OPS` ops, naming ``what`` counted them and how to ``fix`` it."""
    if ops > MAX_OPS:
        raise WorkloadError(
            f"{what} has {ops:,} ops "
            f"(about {_num(ops * BYTES_PER_OP / BYTES_PER_GB_F)} GB before the DAG), "
            f"over the limit of {MAX_OPS:,}; {fix}"
        )


def estimate_scale(
    model: ModelSpec,
    par: ParallelSpec,
    hardware: HardwareSpec,
    gpus: int,
    gpus_per_node: int = 8,
    coll: CollectiveSpec | None = None,
    nic_gbps: float = 100.0,
) -> WorkloadScale:
    """Estimate the ops, DAG nodes, memory and per-rank time of one iteration.

    Raises
    ------
    WorkloadError
        When a lower bound of the op count already exceeds :data:`MAX_OPS` (nothing is built
        then), or a single message exceeds :data:`MAX_MESSAGE_BYTES`.
    """
    coll = coll or CollectiveSpec()
    plan = plan_workload(model, par, hardware, gpus)
    fix = "lower cluster.gpus, parallel.global_batch or model.num_layers"
    check_ops_count(_lower_bound_ops(plan, gpus), "the experiment (at least)", fix)
    ops = nodes = compute = comm = 0
    for stage in range(plan.layout.pp):
        tmpl = StageBuilder(plan, stage).build()
        stage_nodes = stage_compute = stage_bytes = 0
        for op in tmpl.ops:
            _check_message(op)
            stage_nodes += _op_nodes(op, plan, coll, gpus_per_node)
            if op.kind == "compute":
                stage_compute += op.duration_ps
            else:
                g = _group_size(plan, op.group)
                stage_bytes += op.size_bytes * (_steps(op.collective, g)[1] if g > 1 else 0)
        ops += len(tmpl.ops) * plan.layout.stage_size
        nodes += stage_nodes * plan.layout.stage_size
        compute = max(compute, stage_compute)
        comm = max(comm, int(stage_bytes * BPS_PER_BYTE_PER_PS / (nic_gbps * BPS_PER_GBPS_F)))
    memory = ops * BYTES_PER_OP + nodes * BYTES_PER_DAG_NODE
    return WorkloadScale(ops, nodes, memory, compute, comm)


def _time_message(s: WorkloadScale, hardware: HardwareSpec) -> str:
    if s.compute_ps >= s.comm_ps:
        return (
            f"one iteration's compute on the busiest rank takes {format_ps(s.compute_ps)} "
            f"(at {hardware.efficiency:g} of the {hardware.gpu}'s peak); raise "
            "hardware.efficiency, lower hardware.kernel_times_us, or shrink the work per rank "
            "(model.seq_length, model.hidden_size, model.num_layers, parallel.global_batch)"
        )
    return (
        f"one iteration's traffic on the busiest rank takes {format_ps(s.comm_ps)} at the NIC "
        "rate; raise cluster.host_link_gbps or shrink the messages (model.seq_length, "
        "model.hidden_size, parallel.global_batch)"
    )


def check_scale(
    model: ModelSpec,
    par: ParallelSpec,
    hardware: HardwareSpec,
    gpus: int,
    gpus_per_node: int = 8,
    coll: CollectiveSpec | None = None,
    nic_gbps: float = 100.0,
) -> WorkloadScale:
    """:func:`estimate_scale`, refused beyond the limits of ops, DAG nodes and simulated time.

    The time limit is half of :data:`~wormsim.inputs.MAX_TIME_PS` (the other half is headroom
    for queueing and pipeline bubbles).

    Raises
    ------
    WorkloadError
        Saying the estimate, the limit and the fields to change.
    """
    s = estimate_scale(model, par, hardware, gpus, gpus_per_node, coll, nic_gbps)
    fix = "lower cluster.gpus, parallel.global_batch or model.num_layers"
    check_ops_count(s.ops, "the experiment", fix)
    if s.dag_nodes > MAX_DAG_NODES:
        raise WorkloadError(
            f"the experiment would expand into about {s.dag_nodes:,} DAG nodes (about "
            f"{_num(s.memory_bytes / BYTES_PER_GB_F)} GB), over the limit of {MAX_DAG_NODES:,}; "
            f"{fix}, or "
            "use coarser flows (collective.granularity: step, larger collective.*_chunk_bytes, "
            "fewer collective.max_channels)"
        )
    limit = MAX_TIME_PS // 2
    if s.compute_ps + s.comm_ps > limit:
        raise WorkloadError(
            f"{_time_message(s, hardware)}; simulated time must stay below {format_ps(limit)} "
            "(picoseconds in 64-bit integers, with headroom)"
        )
    return s
