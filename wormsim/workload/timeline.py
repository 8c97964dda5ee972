"""A network-free timeline of an ops table: when every op would finish if communication were free.

Communication ops take no time but keep their synchronisation: a collective finishes on every member
when the last member arrives; a receive finishes when both its own deps and the matching send are
done (a send does not wait for its receiver). The result isolates what the schedule itself costs:
the pipeline bubble, and each rank's compute time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np
import polars as pl

__all__ = ["ComputeTimeline", "compute_timeline"]


@dataclass(frozen=True)
class ComputeTimeline:
    """Finish time of every op and the derived iteration figures (picoseconds)."""

    finish_ps: np.ndarray
    iteration_ps: int
    busy_ps: np.ndarray  # compute time per rank
    pass_busy_ps: np.ndarray  # forward/backward compute per rank
    pass_end_ps: np.ndarray  # when each rank's last forward/backward compute ends

    @property
    def bubble_fraction(self) -> float:
        """Pipeline bubble: idle time before each rank's last forward/backward pass, relative to
        its forward/backward compute (max over ranks; the optimizer step is not counted).

        For 1F1B with equal stages this is ``(p-1)/m``; interleaved ``(p-1)/(v·m)``.
        """
        ok = self.pass_busy_ps > 0
        if not ok.any():
            return 0.0
        idle = (self.pass_end_ps[ok] - self.pass_busy_ps[ok]) / self.pass_busy_ps[ok]
        return float(idle.max())


@nb.njit(cache=True)
def _longest_path(dur, is_comm, coll, coll_members_count, is_send, child_off, child_idx):
    n = dur.shape[0]
    n_coll = coll_members_count.shape[0]
    ready = np.zeros(n, np.int64)
    remaining = np.zeros(n, np.int64)
    for i in range(n):
        for j in range(child_off[i], child_off[i + 1]):
            remaining[child_idx[j]] += 1
    coll_arrived = np.zeros(n_coll, np.int64)
    coll_time = np.zeros(n_coll, np.int64)
    finish = np.full(n, -1, np.int64)
    stack = np.empty(n, np.int64)
    top = 0
    for i in range(n):
        if remaining[i] == 0:
            stack[top] = i
            top += 1
    # waiting[c]: members of collective c that arrived; they finish when the last one arrives
    member_off = np.zeros(n_coll + 1, np.int64)
    for c in range(n_coll):
        member_off[c + 1] = member_off[c] + coll_members_count[c]
    members = np.empty(member_off[n_coll], np.int64)
    fill = np.zeros(n_coll, np.int64)
    done_stack = np.empty(n, np.int64)
    while top > 0:
        top -= 1
        i = stack[top]
        ndone = 0
        if is_comm[i]:
            c = coll[i]
            coll_time[c] = max(coll_time[c], ready[i])
            members[member_off[c] + fill[c]] = i
            fill[c] += 1
            coll_arrived[c] += 1
            if is_send[i]:
                finish[i] = ready[i]
                done_stack[ndone] = i
                ndone += 1
            if coll_arrived[c] == coll_members_count[c]:
                for k in range(member_off[c], member_off[c + 1]):
                    m = members[k]
                    if not is_send[m]:
                        finish[m] = coll_time[c]
                        done_stack[ndone] = m
                        ndone += 1
        else:
            finish[i] = ready[i] + dur[i]
            done_stack[ndone] = i
            ndone += 1
        for q in range(ndone):
            m = done_stack[q]
            for j in range(child_off[m], child_off[m + 1]):
                ch = child_idx[j]
                if finish[m] > ready[ch]:
                    ready[ch] = finish[m]
                remaining[ch] -= 1
                if remaining[ch] == 0:
                    stack[top] = ch
                    top += 1
    return finish


def compute_timeline(ops: pl.DataFrame) -> ComputeTimeline:
    """Run the network-free timeline of an ops table.

    Raises
    ------
    ValueError
        If some op never finishes (a dependency cycle or a collective whose members wait on each
        other), naming how many.
    """
    n = ops.height
    deps = ops["deps"]
    lens = deps.list.len().to_numpy().astype(np.int64)
    parent = deps.explode().drop_nulls().to_numpy().astype(np.int64)
    child = np.repeat(np.arange(n, dtype=np.int64), lens)
    order = np.argsort(parent, kind="stable")
    child_idx = child[order]
    child_off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(parent, minlength=n), out=child_off[1:])
    is_comm = (ops["kind"] == "comm").to_numpy()
    coll_raw = ops["coll_id"].to_numpy()
    uniq, coll = np.unique(np.where(is_comm, coll_raw, -1), return_inverse=True)
    coll = coll.astype(np.int64)
    counts = np.bincount(coll[is_comm], minlength=uniq.size).astype(np.int64)
    is_send = (ops["collective"] == "send").to_numpy()
    dur = ops["duration_ps"].to_numpy().astype(np.int64)
    finish = _longest_path(dur, is_comm, coll, counts, is_send, child_off, child_idx)
    stuck = int((finish < 0).sum())
    if stuck:
        raise ValueError(f"{stuck} ops never finish: the schedule deadlocks")
    per_rank = (
        ops.lazy()
        .with_columns(pl.Series("finish_ps", finish))
        .filter(pl.col("kind") == "compute")
        .group_by("rank")
        .agg(
            pl.col("duration_ps").sum().alias("busy"),
            pl.col("duration_ps").filter(pl.col("phase") != "step").sum().alias("pass_busy"),
            pl.col("finish_ps").filter(pl.col("phase") != "step").max().alias("pass_end"),
        )
        .sort("rank")
        .collect()
    )
    return ComputeTimeline(
        finish_ps=finish,
        iteration_ps=int(finish.max()),
        busy_ps=per_rank["busy"].to_numpy(),
        pass_busy_ps=per_rank["pass_busy"].to_numpy(),
        pass_end_ps=per_rank["pass_end"].fill_null(0).to_numpy(),
    )
