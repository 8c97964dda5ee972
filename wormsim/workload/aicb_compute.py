"""Compute times of an AICB workload: placeholders detected, and filled from a model.

AICB writes measured compute times only when it profiles kernels (``--aiob_enable``); without
that, which is how most AICB files in the wild are made, every compute column is the
placeholder ``1`` (ns), and an iteration simulated from the file has almost no compute at all.
:func:`placeholder_compute` detects such a file (all or nearly all compute values equal to
:data:`PLACEHOLDER_NS`); :func:`fill_compute` replaces the compute columns with the roofline of
the native workload stage (:mod:`wormsim.workload.compute`, ``HardwareSpec.flops_to_ps``, and
``hardware.kernel_times_us`` where given) for a model and hardware the user names:

- an attention row gets the attention block's forward FLOPs (split evenly when AICB splits the
  layer's attention into ``attention_column``/``attention_row``), an MLP row the dense MLP's,
  a MoE row (``moe``/``expert`` in the name, or any MLP row of a MoE model) the MoE block's, a
  ``final`` row (AICB's output layer) the LM head's;
- input-gradient and weight-gradient columns get one forward each (backward = 2 x forward, as
  the native stage counts it, split between the two halves);
- every other row (embedding, norms, cross entropy, optimizer, gradient norm) gets no compute.
"""

from __future__ import annotations

import dataclasses

from wormsim.units import NS_PER_US_F, PS_PER_NS_F

from .aicb_format import AicbRow, AicbWorkload
from .compute import (
    BACKWARD_FACTOR,
    attention_fwd_flops,
    lm_head_fwd_flops,
    mlp_fwd_flops,
    moe_fwd_flops,
)
from .errors import WorkloadError
from .hardware import HardwareSpec
from .model import ModelSpec
from .parallel import ParallelSpec

__all__ = [
    "PLACEHOLDER_NS",
    "PLACEHOLDER_SHARE",
    "compute_values",
    "placeholder_compute",
    "fill_compute",
    "row_kind",
]

#: The compute time AICB writes when it did not profile kernels (ns).
PLACEHOLDER_NS = 1
#: A file whose nonzero compute values are at least this share placeholders has no real compute.
PLACEHOLDER_SHARE = 0.95

_COLUMNS = ("fwd_compute", "ig_compute", "wg_compute")


def compute_values(w: AicbWorkload) -> list[int]:
    """Every nonzero compute value of the file's rows (ns)."""
    return [v for r in w.rows for c in _COLUMNS if (v := getattr(r, c)) > 0]


def placeholder_compute(w: AicbWorkload) -> bool:
    """Whether the file's compute times are AICB's placeholders (module docstring)."""
    values = compute_values(w)
    if not values:
        return False
    share = sum(v == PLACEHOLDER_NS for v in values) / len(values)
    return share >= PLACEHOLDER_SHARE


def row_kind(name: str, moe_model: bool) -> str:
    """``attn``, ``mlp``, ``moe``, ``lm_head`` or ``none``: the roofline block a row stands for."""
    n = name.lower()
    if "attention" in n:
        return "attn"
    if "moe" in n or "expert" in n:
        return "moe"
    if "mlp" in n:
        return "moe" if moe_model else "mlp"
    if n.startswith("final"):
        return "lm_head"
    return "none"


def _attention_rows(w: AicbWorkload) -> int:
    """How many consecutive attention rows make one layer (AICB may split it in two)."""
    run, best = 0, 1
    for r in w.rows:
        run = run + 1 if "attention" in r.name.lower() else 0
        best = max(best, run)
    return best


def fill_compute(
    w: AicbWorkload, model: ModelSpec, parallel: ParallelSpec, hardware: HardwareSpec
) -> AicbWorkload:
    """The workload with every compute column from the roofline (module docstring).

    Raises
    ------
    WorkloadError
        The model's layers do not fit the file's pipeline (``num_layers`` must be ``pp`` x the
        layers of a stage's block).
    """
    from .aicb_import import _block_layers

    _, blocks, _ = w.sections()
    per_stage = max([_block_layers(b)[1] for b in blocks] + [0])
    if per_stage and model.num_layers != w.pp * per_stage:
        raise WorkloadError(
            f"model {model.name or ''} has {model.num_layers} layers but the AICB file has "
            f"{w.pp * per_stage} ({w.pp} pipeline stages of {per_stage}); give the model the "
            "file was generated for (its --num_layers)"
        )
    split = _attention_rows(w)
    fwd = {
        "attn": attention_fwd_flops(model, parallel) / split,
        "mlp": mlp_fwd_flops(model, parallel),
        "moe": moe_fwd_flops(model, parallel) if model.is_moe else mlp_fwd_flops(model, parallel),
        "lm_head": lm_head_fwd_flops(model, parallel),
        "none": 0.0,
    }
    measured = {"attn": "attn", "mlp": "mlp", "moe": "moe", "lm_head": "lm_head"}
    kernel = hardware.kernel_times_us

    def ns(kind: str, direction: str) -> int:
        name = f"{measured.get(kind, '')}_{direction}"
        if kind != "none" and name in kernel:
            us = kernel[name] / (split if kind == "attn" else 1)
            return int(round(us * NS_PER_US_F / (BACKWARD_FACTOR if direction == "bwd" else 1)))
        flops = fwd[kind] if direction == "fwd" else fwd[kind] * BACKWARD_FACTOR / 2
        return int(round(hardware.flops_to_ps(flops) / PS_PER_NS_F))

    rows: list[AicbRow] = []
    for r in w.rows:
        kind = row_kind(r.name, model.is_moe)
        bwd = ns(kind, "bwd")
        rows.append(dataclasses.replace(r, fwd_compute=ns(kind, "fwd"), ig_compute=bwd,
                                        wg_compute=bwd))  # fmt: skip
    return dataclasses.replace(w, rows=tuple(rows))
