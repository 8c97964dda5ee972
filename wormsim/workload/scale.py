"""How big an experiment gets, estimated before anything large is built.

:func:`check_scale` runs when an experiment loads: it bounds the ops, the DAG nodes and the
simulated time of one iteration, and refuses an experiment beyond the limits with the estimate,
the limit and the fields to change. The ops count is exact (one stage template per pipeline
stage, as the builder writes them); the DAG and flow counts are estimates from the collectives'
algorithms (steps x channels x chunks per member); the time is each rank's compute plus its bytes
sent through the NIC, a lower bound of the iteration.

:func:`check_memory` runs before a pipeline builds anything: it estimates the peak memory of
the run from the measured bytes per op, DAG node and flow of each stage
(:data:`STAGE_BYTES`, from ``bench/scale_stages.py``) and refuses a run that will not fit in the
memory available (:func:`available_memory`: ``MemAvailable``, the cgroup's limit and the
address-space limit, or :data:`MEMORY_ENV`).
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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
    "MemoryEstimate",
    "estimate_scale",
    "estimate_memory",
    "estimate_seconds",
    "STAGE_SECONDS",
    "available_memory",
    "EngineBytes",
    "PACKET_NETSIM_BYTES",
    "resident_bytes",
    "check_memory",
    "STAGE_BYTES",
    "MEMORY_ENV",
    "ADDRESS_SPACE_RESERVE",
    "check_scale",
    "check_ops_count",
    "MAX_OPS",
    "MAX_DAG_NODES",
    "MAX_MESSAGE_BYTES",
]

#: Most ops (rows of ops.parquet) of one experiment.
MAX_OPS = 40_000_000
#: Most DAG nodes (estimated) of one experiment, a bound of the indices; what fits in memory is
#: :func:`check_memory`'s to say.
MAX_DAG_NODES = 1_000_000_000
#: Largest single message (1 PiB).
MAX_MESSAGE_BYTES = 1 << 50


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
    flows : int
        DAG flow nodes (estimate).
    fabric_flows : int
        Those between ranks on different servers (estimate): the packet engine's QPs.
    """

    ops: int
    dag_nodes: int
    memory_bytes: int
    compute_ps: int
    comm_ps: int
    flows: int = 0
    fabric_flows: int = 0


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


def _op_flows(op: TemplateOp, nodes: int) -> float:
    """Flow nodes among the ``nodes`` one member's op expands into (estimate): all but its
    done-node; a send's or receive's flows are those of the pair, counted half on each."""
    if op.kind != "comm" or nodes <= 1:
        return 0.0
    if op.collective in ("send", "recv"):
        return (nodes - 1) / 2
    return float(nodes - 1)


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


def _bytes_per_op() -> float:
    return STAGE_BYTES["workload"][1]


def check_ops_count(ops: int, what: str, fix: str) -> None:
    """Refuse more than :data:`MAX_OPS` ops, naming ``what`` counted them and how to ``fix`` it."""
    if ops > MAX_OPS:
        raise WorkloadError(
            f"{what} has {ops:,} ops "
            f"(about {_num(ops * _bytes_per_op() / BYTES_PER_GB_F)} GB before the DAG), "
            f"over the limit of {MAX_OPS:,}; {fix}"
        )


def _fabric_share(plan: WorkloadPlan, group: str, all_pairs: bool, gpus_per_node: int) -> float:
    """The share of a ``group`` collective's flows that cross servers: over every communicator
    of that kind, each member's flow to the next member (a ring; the pipeline's sends too), or
    to every other member (``all_pairs``: all-to-all)."""
    lay = plan.layout
    ranks = np.arange(lay.world, dtype=np.int64)
    try:
        inst = lay.group_instance(group, ranks)
    except ValueError:
        return 1.0
    order = np.lexsort((ranks, inst))
    r, g = ranks[order], inst[order]
    server = r // max(gpus_per_node, 1)
    if all_pairs:
        _, n = np.unique(g, return_counts=True)
        _, same = np.unique(np.stack([g, server]), axis=1, return_counts=True)
        pairs = float((n * (n - 1)).sum())
        return 1.0 - float((same * (same - 1)).sum()) / pairs if pairs else 0.0
    first = np.r_[True, g[1:] != g[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(r.size), 0))
    nxt = np.arange(1, r.size + 1)
    last = np.r_[g[1:] != g[:-1], True]
    nxt[last] = start[last]  # the last member sends to the first
    return float((server != server[nxt]).mean()) if r.size else 0.0


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
    flows = fabric = 0.0
    share: dict[tuple[str, bool], float] = {}
    for stage in range(plan.layout.pp):
        tmpl = StageBuilder(plan, stage).build()
        stage_nodes = stage_compute = stage_bytes = 0
        stage_flows = stage_fabric = 0.0
        for op in tmpl.ops:
            _check_message(op)
            op_nodes = _op_nodes(op, plan, coll, gpus_per_node)
            stage_nodes += op_nodes
            op_flows = _op_flows(op, op_nodes)
            stage_flows += op_flows
            if op_flows:
                key = (op.group, op.collective == "alltoall")
                if key not in share:
                    share[key] = _fabric_share(plan, *key, gpus_per_node)
                stage_fabric += op_flows * share[key]
            if op.kind == "compute":
                stage_compute += op.duration_ps
            else:
                g = _group_size(plan, op.group)
                stage_bytes += op.size_bytes * (_steps(op.collective, g)[1] if g > 1 else 0)
        ops += len(tmpl.ops) * plan.layout.stage_size
        nodes += stage_nodes * plan.layout.stage_size
        flows += stage_flows * plan.layout.stage_size
        fabric += stage_fabric * plan.layout.stage_size
        compute = max(compute, stage_compute)
        comm = max(comm, int(stage_bytes * BPS_PER_BYTE_PER_PS / (nic_gbps * BPS_PER_GBPS_F)))
    memory = _peak(ops, nodes, int(flows), STAGE_BYTES)[1]
    return WorkloadScale(ops, nodes, memory, compute, comm, int(flows), int(fabric))


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
            f"{_num(s.memory_bytes / BYTES_PER_GB_F)} GB in flow mode), over the limit of "
            f"{MAX_DAG_NODES:,}; {fix}, or "
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


#: Peak memory of each stage of a pipeline run, as measured by ``bench/scale_stages.py``
#: (GPT-175B, TP8-PP8, 512 to 2,048 GPUs, flow mode, 2026-12-07): ``(base, per op, per DAG
#: node, per flow)`` bytes, the peak RSS of the process while the stage runs (what earlier
#: stages left included), fitted to the estimated counts. The netsim row is the flow engine's
#: (its state is about 400 bytes per DAG node); packet and Wormhole mode's netsim stage is
#: counted from their engine's field table instead (:class:`EngineBytes`).
STAGE_BYTES: dict[str, tuple[float, float, float, float]] = {
    "workload": (220e6, 331.0, 0.0, 0.0),
    "collective": (320e6, 0.0, 408.0, 0.0),
    "netsim": (320e6, 0.0, 465.0, 0.0),
    "analysis": (320e6, 1667.0, 0.0, 0.0),
}
#: Address space a run reserves beyond its resident memory (thread arenas, the allocators' and
#: the compiled kernels' reservations): ``VmPeak`` less peak RSS was 3.5 to 4.1 GB at 512 to
#: 2,048 GPUs, so under ``ulimit -v`` this much less is usable.
ADDRESS_SPACE_RESERVE = 9 * 2**29  # 4.5 GiB
#: Wall time of the stages that show no count of their own, as measured by
#: ``bench/scale_stages.py`` (same runs as :data:`STAGE_BYTES`, a quiet 2-core machine):
#: ``(base, per op, per DAG node)`` seconds; the labels are those of
#: :func:`wormsim.progress.stage` (the report's plots and trace cost seconds at any size).
STAGE_SECONDS: dict[str, tuple[float, float, float]] = {
    "workload: building ops": (0.5, 0.65e-6, 0.0),
    "collective": (0.5, 0.0, 1.3e-6),
    # routes grouped by destination and the engine's arrays: 3.7 / 13.8 / 42.1 s at 1,024 /
    # 2,048 / 4,096 GPUs (3.3 / 8.2 / 22.6 M DAG nodes; the last on a shared machine)
    "flow engine: building routes and state": (0.2, 0.0, 1.7e-6),
    "report: analysing": (1.0, 4.0e-6, 0.0),
    "report: writing": (6.0, 3.0e-6, 0.0),
}


def estimate_seconds(scale: WorkloadScale) -> dict[str, float]:
    """The expected seconds of each stage of :data:`STAGE_SECONDS` for ``scale`` (for the
    progress display's time left; the engine's own display counts DAG nodes)."""
    return {
        label: base + scale.ops * per_op + scale.dag_nodes * per_node
        for label, (base, per_op, per_node) in STAGE_SECONDS.items()
    }


#: The environment variable that sets the memory a run may use (bytes, or with a K, M, G or T
#: suffix), instead of what the machine reports.
MEMORY_ENV = "WORMSIM_MEMORY_BYTES"


@dataclass(frozen=True)
class MemoryEstimate:
    """The estimated peak memory of a pipeline run, and the stage where it peaks.

    Attributes
    ----------
    peak_bytes : int
        The largest stage's estimate.
    stage : str
        The stage that peaks.
    stages : dict
        Every stage's estimate (bytes).
    scale : WorkloadScale
        The counts it is estimated from.
    mode : str
        The engine it is estimated for.
    """

    peak_bytes: int
    stage: str
    stages: dict[str, int]
    scale: WorkloadScale
    mode: str

    def describe(self) -> str:
        """The estimate in one phrase: ``about 7.2 GB (peak in netsim: 3.3 M DAG nodes, ...)``."""
        s = self.scale
        return (
            f"about {_gb(self.peak_bytes)} (peak in {self.stage}, {self.mode} mode: "
            f"{_num(s.ops / 1e6)} M ops, {_num(s.dag_nodes / 1e6)} M DAG nodes, "
            f"{_num(s.flows / 1e6)} M flows)"
        )


def _gb(n: float) -> str:
    return f"{_num(n / BYTES_PER_GB_F)} GB"


def _peak(
    ops: int, nodes: int, flows: int, table: dict[str, tuple[float, float, float, float]]
) -> tuple[str, int, dict[str, int]]:
    stages = {
        name: int(base + ops * per_op + nodes * per_node + flows * per_flow)
        for name, (base, per_op, per_node, per_flow) in table.items()
    }
    worst = max(stages, key=lambda k: stages[k])
    return worst, stages[worst], stages


@dataclass(frozen=True)
class EngineBytes:
    """The packet engine's state per QP (one per fabric flow) and per DAG node, bytes, as its
    field table counts them for a run's settings
    (:func:`wormsim.netsim.packet.run.engine_bytes`)."""

    per_qp: float
    per_node: float


#: The netsim stage of a packet or Wormhole run besides the engine's state: ``(base, per DAG
#: node)`` bytes (the compiled kernels, the memo bridge, the DAG's arrays). Fitted to GPT-175B on
#: 1,024 GPUs in Wormhole mode (2026-12-08: 2.25 GB peak, of it 1.42 GB engine state).
PACKET_NETSIM_BYTES = (720e6, 65.0)


def estimate_memory(
    scale: WorkloadScale, mode: str = "flow", engine: EngineBytes | None = None
) -> MemoryEstimate:
    """The peak memory of a pipeline run of ``scale`` in ``mode`` (:data:`STAGE_BYTES`).

    Flow mode's engine is measured per DAG node; packet and Wormhole mode's is counted from
    ``engine`` (its bytes per fabric flow and per DAG node) over :data:`PACKET_NETSIM_BYTES`.
    Without ``engine`` their estimate is that of the other stages (a lower bound)."""
    table = dict(STAGE_BYTES)
    if mode != "flow":
        table.pop("netsim")
    worst, peak, stages = _peak(scale.ops, scale.dag_nodes, scale.flows, table)
    if mode != "flow" and engine is not None:
        base, per_node = PACKET_NETSIM_BYTES
        fabric = scale.fabric_flows or scale.flows
        stages["netsim"] = int(
            base + scale.dag_nodes * (per_node + engine.per_node) + fabric * engine.per_qp
        )
        worst = max(stages, key=lambda k: stages[k])
        peak = stages[worst]
    return MemoryEstimate(peak, worst, stages, scale, mode)


def _parse_bytes(text: str) -> int:
    t = text.strip().upper().removesuffix("B")
    mult = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if mult > 1 else t)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value <= 0:
        raise WorkloadError(
            f"{MEMORY_ENV}={text!r} is not a memory size; give bytes, or a number with a K, M, "
            "G or T suffix (e.g. 8G)"
        )
    return int(value * mult)


def _proc_kib(path: str, key: str) -> int | None:
    """The ``key:`` line of a ``/proc`` file given in KiB, in bytes (``None`` if unreadable)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _meminfo_available() -> int | None:
    return _proc_kib("/proc/meminfo", "MemAvailable")


def resident_bytes() -> int:
    """This process's resident memory (``VmRSS``), 0 where it cannot be read."""
    return _proc_kib("/proc/self/status", "VmRSS") or 0


def _cgroup_available() -> int | None:
    base = Path("/sys/fs/cgroup")
    try:
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return int(limit) - int((base / "memory.current").read_text().strip())
    except (OSError, ValueError):
        return None


def available_memory() -> tuple[int | None, str]:
    """The memory a run may use (bytes, ``None`` if unknown) and where it comes from.

    :data:`MEMORY_ENV` if set; else the least of ``MemAvailable`` (``/proc/meminfo``), the
    cgroup's ``memory.max`` less its use, and the process's address-space limit
    (``ulimit -v``, less :data:`ADDRESS_SPACE_RESERVE`).
    """
    env = os.environ.get(MEMORY_ENV)
    if env:
        return _parse_bytes(env), MEMORY_ENV
    seen: list[tuple[int, str]] = []
    mem = _meminfo_available()
    if mem is not None:
        seen.append((mem, "MemAvailable"))
    cg = _cgroup_available()
    if cg is not None:
        seen.append((max(cg, 0), "the cgroup's memory.max"))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        seen.append((max(soft - ADDRESS_SPACE_RESERVE, 0), "ulimit -v"))
    if not seen:
        return None, "unknown"
    return min(seen)


def check_memory(
    scale: WorkloadScale, mode: str = "flow", engine: EngineBytes | None = None
) -> MemoryEstimate:
    """:func:`estimate_memory`, refused when it exceeds :func:`available_memory`.

    Raises
    ------
    WorkloadError
        In one line: the estimate, the memory seen (and where from) and what to change.
    """
    est = estimate_memory(scale, mode, engine)
    avail, source = available_memory()
    if avail is not None and est.peak_bytes > avail:
        raise WorkloadError(
            f"the run would need {est.describe()}, and {_gb(avail)} is available ({source}); "
            "lower cluster.gpus or parallel.global_batch, use coarser flows "
            "(collective.granularity: step, fewer collective.max_channels), or run it where "
            f"more memory is free ({MEMORY_ENV} sets what may be used)"
        )
    return est
