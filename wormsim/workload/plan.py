"""The workload plan: the resolved rank layout, micro-batches and message sizes of an experiment.

:func:`resolve_layout` checks every cross-field rule of the model and parallel sections and returns
the :class:`~wormsim.workload.parallel.RankLayout`; :func:`plan_workload` bundles it with the
micro-batch count into the :class:`WorkloadPlan` the stage builder
(:mod:`wormsim.workload.stage_builder`) writes templates from.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import WorkloadError
from .hardware import HardwareSpec
from .model import ModelSpec
from .parallel import ParallelSpec, RankLayout

__all__ = ["WorkloadPlan", "plan_workload", "resolve_layout", "microbatches"]


def resolve_layout(model: ModelSpec, par: ParallelSpec, gpus: int) -> RankLayout:
    """Check every cross-field rule and return the resolved rank layout.

    Raises
    ------
    WorkloadError
        Naming the field that is wrong and how to fix it.
    """
    if model.num_heads % par.tp:
        raise WorkloadError(
            f"parallel.tp ({par.tp}) must divide model.num_heads ({model.num_heads})"
        )
    if model.hidden_size % par.tp:
        raise WorkloadError(
            f"parallel.tp ({par.tp}) must divide model.hidden_size ({model.hidden_size})"
        )
    base = par.tp * par.pp * par.cp
    if gpus % base:
        raise WorkloadError(
            f"cluster.gpus ({gpus}) is not divisible by tp*pp*cp = {base}; "
            "change the cluster size or the parallel degrees"
        )
    dp = par.dp if par.dp is not None else gpus // base
    if base * dp != gpus:
        raise WorkloadError(
            f"world size mismatch: tp*pp*cp*dp = {base * dp} but cluster.gpus = {gpus}; "
            "set parallel.dp so that tp*pp*cp*dp equals the number of GPUs (or omit it)"
        )
    if model.kv_heads % par.tp and par.tp % model.kv_heads:
        raise WorkloadError(
            f"parallel.tp ({par.tp}) and model.num_kv_heads ({model.kv_heads}) must divide one "
            "another"
        )
    v = par.virtual_stages if par.schedule == "interleaved" else 1
    if par.schedule == "1f1b" and par.virtual_stages != 1:
        raise WorkloadError("parallel.virtual_stages > 1 needs parallel.schedule: interleaved")
    if model.num_layers % (par.pp * v):
        raise WorkloadError(
            f"model.num_layers ({model.num_layers}) must divide into pp*virtual_stages = "
            f"{par.pp * v} equal chunks"
        )
    if model.seq_length % (2 * par.cp) and par.cp > 1:
        raise WorkloadError(
            f"model.seq_length ({model.seq_length}) must be divisible by 2*cp = {2 * par.cp}"
        )
    if par.sequence_parallel and model.seq_length % (par.tp * par.cp):
        raise WorkloadError("model.seq_length must be divisible by tp*cp with sequence_parallel")
    etp = par.etp if par.etp is not None else par.tp
    if par.ep > 1 and not model.is_moe:
        raise WorkloadError("parallel.ep > 1 needs a MoE model (model.num_experts > 0)")
    if model.is_moe:
        stage = par.tp * par.cp * dp
        if stage % (etp * par.ep):
            raise WorkloadError(
                f"parallel.etp*ep = {etp * par.ep} must divide the ranks of a pipeline stage "
                f"(tp*cp*dp = {stage}); experts are carved out of them. Lower ep, or set "
                "parallel.etp (e.g. 1)"
            )
        if model.num_experts % par.ep:
            raise WorkloadError(
                f"parallel.ep ({par.ep}) must divide model.num_experts ({model.num_experts})"
            )
    if model.is_moe and par.tp > 1 and not par.sequence_parallel:
        raise WorkloadError(
            "MoE with tp > 1 needs parallel.sequence_parallel: true (Megatron requires it)"
        )
    lay = RankLayout(tp=par.tp, cp=par.cp, dp=dp, pp=par.pp, ep=par.ep, etp=etp)
    microbatches(par, lay)  # validates the batch
    return lay


def microbatches(par: ParallelSpec, lay: RankLayout) -> int:
    """Micro-batches per pipeline per iteration ``m = global_batch / (dp · micro_batch)``."""
    gb = par.global_batch if par.global_batch is not None else lay.dp * par.micro_batch * lay.pp
    if gb % (lay.dp * par.micro_batch):
        raise WorkloadError(
            f"parallel.global_batch ({gb}) must be a multiple of dp*micro_batch = "
            f"{lay.dp * par.micro_batch}"
        )
    m = gb // (lay.dp * par.micro_batch)
    if par.schedule == "interleaved" and par.virtual_stages > 1 and m % lay.pp:
        raise WorkloadError(
            f"the interleaved schedule needs micro-batches per pipeline ({m}) to be a multiple "
            f"of pp ({lay.pp}); change parallel.global_batch"
        )
    return m


@dataclass(frozen=True)
class WorkloadPlan:
    """Everything the builder resolved: layout, micro-batches, per-op sizes and durations."""

    model: ModelSpec
    parallel: ParallelSpec
    hardware: HardwareSpec
    layout: RankLayout
    microbatches: int
    virtual_stages: int

    @property
    def layers_per_chunk(self) -> int:
        """Transformer layers in one model chunk."""
        return self.model.num_layers // (self.layout.pp * self.virtual_stages)

    def chunk_layers(self, stage: int, chunk: int) -> range:
        """Global layer indices of model chunk ``chunk`` on pipeline stage ``stage``."""
        idx = chunk * self.layout.pp + stage
        n = self.layers_per_chunk
        return range(idx * n, (idx + 1) * n)

    @property
    def activation_bytes(self) -> int:
        """The basic message ``M = b·s·h·B_a`` (per CP rank: ``s/c``)."""
        m, p = self.model, self.parallel
        return p.micro_batch * m.seq_length // self.layout.cp * m.hidden_size * p.activation_bytes


def plan_workload(
    model: ModelSpec, par: ParallelSpec, hardware: HardwareSpec, gpus: int
) -> WorkloadPlan:
    """Validate the inputs and resolve the layout."""
    lay = resolve_layout(model, par, gpus)
    v = par.virtual_stages if par.schedule == "interleaved" else 1
    return WorkloadPlan(model, par, hardware, lay, microbatches(par, lay), v)
