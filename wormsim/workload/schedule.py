"""Pipeline schedules: the order of forward and backward passes on each pipeline stage.

1F1B (PipeDream-flush): stage ``r`` of ``p`` runs ``min(p-r-1, m)`` warm-up forwards, then
alternates one forward and one backward, then drains the remaining backwards. Interleaved 1F1B with
``v`` model chunks per stage runs ``min(2(p-r-1) + (v-1)p, m·v)`` warm-up forwards (all of them when
``m == p``), with Megatron's chunk and micro-batch mapping
(Megatron-LM's schedules).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["PassSpec", "stage_schedule", "warmup_count"]


@dataclass(frozen=True)
class PassSpec:
    """One forward or backward pass of a micro-batch through one model chunk."""

    direction: Literal["fwd", "bwd"]
    microbatch: int
    chunk: int


def warmup_count(stage: int, pp: int, m: int, v: int = 1) -> int:
    """Warm-up forward passes of ``stage`` (1F1B when ``v == 1``, interleaved otherwise)."""
    if v == 1:
        return min(pp - stage - 1, m)
    total = m * v
    if m == pp:
        return total
    return min(2 * (pp - stage - 1) + (v - 1) * pp, total)


def _chunk_of(k: int, pp: int, v: int, forward: bool) -> int:
    c = (k // pp) % v
    return c if forward else v - 1 - c


def _mb_of(k: int, pp: int, v: int) -> int:
    return (k // (pp * v)) * pp + k % pp


def stage_schedule(stage: int, pp: int, m: int, v: int = 1) -> list[PassSpec]:
    """Order of passes on pipeline stage ``stage``.

    Parameters
    ----------
    stage, pp : int
        Stage index and number of stages.
    m : int
        Micro-batches per iteration; must be a multiple of ``pp`` when ``v > 1``.
    v : int
        Model chunks per stage (1 = plain 1F1B).

    Examples
    --------
    >>> [(p.direction, p.microbatch) for p in stage_schedule(0, 2, 3)]
    [('fwd', 0), ('fwd', 1), ('bwd', 0), ('fwd', 2), ('bwd', 1), ('bwd', 2)]
    """
    total = m * v
    warm = warmup_count(stage, pp, m, v)

    def fwd(k: int) -> PassSpec:
        if v == 1:
            return PassSpec("fwd", k, 0)
        return PassSpec("fwd", _mb_of(k, pp, v), _chunk_of(k, pp, v, True))

    def bwd(k: int) -> PassSpec:
        if v == 1:
            return PassSpec("bwd", k, 0)
        return PassSpec("bwd", _mb_of(k, pp, v), _chunk_of(k, pp, v, False))

    order = [fwd(k) for k in range(warm)]
    f, b = warm, 0
    for _ in range(total - warm):
        order.append(fwd(f))
        f += 1
        order.append(bwd(b))
        b += 1
    while b < total:
        order.append(bwd(b))
        b += 1
    return order
