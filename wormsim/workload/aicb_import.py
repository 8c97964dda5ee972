"""SimAI / AICB workload import: the ops table, experiment document and scale check of a workload.

:func:`aicb_to_ops` runs an :class:`~wormsim.workload.aicb_format.AicbWorkload` the way SimAI
does; the format and those execution semantics are described in
:mod:`wormsim.workload.aicb_format`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from wormsim.errors import ConfigError
from wormsim.inputs import MAX_TIME_PS, format_ps
from wormsim.units import PS_PER_NS

from .aicb_format import AicbRow, AicbWorkload
from .errors import WorkloadError
from .schedule import stage_schedule
from .template import StageTemplate, TemplateOp, expand_stage

__all__ = ["aicb_experiment_document", "check_aicb_scale", "aicb_to_ops"]


def aicb_experiment_document(
    w: AicbWorkload, data: dict[str, Any], source: str = "", keep_model: bool = False
) -> dict[str, Any]:
    """The experiment document an imported workload runs in, as a plain mapping.

    ``data`` is an experiment document (read and overridden, not yet validated) whose cluster,
    collective, network and sim sections the workload runs on. The file defines the ops, so any
    ``model``/``parallel`` of the document is replaced: the parallel section by the file's
    degrees, the model by a placeholder shape consistent with them (named after the file; MoE
    when the file has expert parallelism). ``cluster.gpus`` defaults to the file's ``all_gpus``.
    The experiment layer validates the result
    (:func:`wormsim.experiment.aicb.import_experiment`).

    Parameters
    ----------
    w : AicbWorkload
        The parsed workload file.
    data : dict
        The experiment document; it is not modified.
    source : str
        The workload file's name, for messages and the placeholder model's name.
    keep_model : bool
        Keep the document's ``model`` (the model compute times are filled from,
        :func:`wormsim.workload.aicb_compute.fill_compute`) instead of the placeholder.

    Returns
    -------
    dict
        A new document with ``model``, ``parallel`` and ``cluster.gpus`` from the workload.

    Raises
    ------
    ConfigError
        ``cluster.gpus`` differs from the file's ``all_gpus``.
    """
    data = dict(data)
    cluster = data.get("cluster")
    data["cluster"] = dict(cluster) if isinstance(cluster, dict) else {}
    gpus = data["cluster"].setdefault("gpus", w.all_gpus)
    if gpus != w.all_gpus:
        raise ConfigError(
            f"{source or 'the AICB file'} has all_gpus {w.all_gpus} but the experiment's "
            f"cluster.gpus is {gpus}; make them equal (or leave cluster.gpus out)"
        )
    if not (keep_model and data.get("model") is not None):
        data["model"] = _placeholder_model(w, source or "aicb")
    data["parallel"] = _file_parallel(w)
    return data


def _file_parallel(w: AicbWorkload) -> dict[str, Any]:
    moe_sp = w.ep > 1 and w.tp > 1
    return dict(
        tp=w.tp, pp=w.pp, dp=w.dp, ep=w.ep, etp=w.etp, cp=1, micro_batch=1,
        global_batch=w.dp * w.ga, sequence_parallel=moe_sp,
    )  # fmt: skip


def _placeholder_model(w: AicbWorkload, source: str) -> dict[str, Any]:
    """A model shape the file's layout validates against (the ops come from the file)."""
    _, blocks, _ = w.sections()
    per_stage = max([_block_layers(b)[1] for b in blocks] + [1])
    return dict(
        name=f"aicb:{Path(source).name}"[:200],
        num_layers=w.pp * per_stage,
        hidden_size=128 * w.tp,
        num_heads=w.tp,
        vocab_size=1024,
        seq_length=w.tp,
        num_experts=w.ep if w.ep > 1 else 0,
        moe_top_k=1,
    )


def check_aicb_scale(w: AicbWorkload, source: str = "the AICB workload") -> None:
    """Refuse a workload beyond the op limit or the simulated-time range, before expanding it.

    Raises
    ------
    WorkloadError
        With the count or time, the limit, and the header fields to change.
    """
    from .scale import check_ops_count

    head, blocks, tail = w.sections()
    per_rank = (len(head) + len(tail)) * 6 + sum(len(b) for b in blocks) * 6 + 4 * len(blocks)
    check_ops_count(
        per_rank * w.all_gpus, f"{source} (at most)", "lower all_gpus or ga in the header"
    )
    rows = [*head, *tail, *(r for b in blocks for r in b)]
    ns = sum(r.fwd_compute + r.ig_compute + r.wg_compute for r in rows)
    if ns * PS_PER_NS > MAX_TIME_PS // 2:
        raise WorkloadError(
            f"{source}: one iteration's compute takes {format_ps(ns * PS_PER_NS)} (the sum of the "
            f"rows' compute times, in ns); simulated time must stay below "
            f"{format_ps(MAX_TIME_PS // 2)}; check the compute columns (ns, not ps)"
        )


# --------------------------------------------------------------------------------------------
# AICB -> ops


def _block_layers(block: list[AicbRow]) -> tuple[list[int], int]:
    """Local layer index of each block row (-1 for non-layer rows) and the layer count.

    A row whose name contains ``attention`` and follows a row that does not starts a transformer
    layer (AICB may split attention into ``attention_column``/``attention_row``); ``mlp``/``moe``/
    ``expert`` rows after it belong to the same layer.
    """
    cur, out, prev_attn = -1, [], False
    for row in block:
        n = row.name.lower()
        attn = "attention" in n
        if attn:
            cur += 0 if prev_attn else 1
            out.append(cur)
        elif cur >= 0 and ("mlp" in n or "moe" in n or "expert" in n):
            out.append(cur)
        else:
            out.append(-1)
        prev_attn = attn
    return out, cur + 1


def _comm_name(row: str, column: str, collective: str, group: str) -> str:
    """Our op name for the collective of ``column`` in row ``row``."""
    low = row.lower()
    if group == "tp" and collective == "allreduce" and column in ("fwd", "ig"):
        grad = column == "ig"
        if low.startswith("attention"):
            return "tp_attn_in_grad" if grad else "tp_attn_out"
        if low.startswith("mlp"):
            return "tp_mlp_in_grad" if grad else "tp_mlp_out"
        if low == "embedding_layer":
            return "tp_embedding_grad" if grad else "tp_embedding"
        m = re.fullmatch(r"cross_entropy(\d+)", low)
        if m and not grad:
            return f"tp_cross_entropy_{int(m.group(1)) - 1}"
    if column == "wg" and group in ("dp", "edp"):
        if collective in ("allreduce", "reducescatter"):
            return f"{group}_grad_bucket"
        if collective == "allgather":
            return f"{group}_param_gather"
    return f"{group}_{row}_{column}"


class _AicbStage:
    """Writes the template of one pipeline stage from the file's sections."""

    def __init__(
        self,
        w: AicbWorkload,
        stage: int,
        head: list[AicbRow],
        blocks: list[list[AicbRow]],
        tail: list[AicbRow],
    ) -> None:
        self.w, self.stage, self.lay = w, stage, w.layout
        self.head, self.blocks, self.tail = head, blocks, tail
        self.t = StageTemplate()
        self.seq = 0
        self.last_wg: int | None = None
        self.group_size = {
            "tp": self.lay.tp,
            "dp": self.lay.dp,
            "ep": self.lay.ep,
            "edp": self.lay.edp,
        }
        self.layers = [_block_layers(b) for b in blocks]

    def compute(self, row: AicbRow, column: str, phase: str, layer: int, mb: int) -> None:
        ns = getattr(row, f"{column}_compute")
        if ns > 0:
            self.t.add(
                TemplateOp(
                    f"{row.name}_{column}",
                    "compute",
                    phase,
                    0,
                    layer,
                    mb,
                    duration_ps=ns * PS_PER_NS,
                )
            )

    def coll(
        self, row: AicbRow, column: str, phase: str, layer: int, mb: int, blocking: bool
    ) -> None:
        c = row.comm(column)
        if c is None:
            return
        collective, group, size = c
        if size <= 0 or self.group_size[group] <= 1:
            return
        self.seq += 1
        op = TemplateOp(
            _comm_name(row.name, column, collective, group),
            "comm",
            phase,
            0,
            layer,
            mb,
            collective=collective,
            group=group,
            key=("aicb", self.stage, self.seq),
            size_bytes=size,
        )
        if blocking:
            self.t.add(op)
        else:
            deps = list(self.t.pending) + ([self.last_wg] if self.last_wg is not None else [])
            self.last_wg = self.t.add(op, deps=deps, chain=False)

    def fwd(self, row: AicbRow, phase: str, layer: int, mb: int) -> None:
        self.compute(row, "fwd", phase, layer, mb)
        self.coll(row, "fwd", phase, layer, mb, blocking=True)

    def bwd(self, row: AicbRow, phase: str, layer: int, mb: int, wg_comm: bool) -> None:
        self.compute(row, "ig", phase, layer, mb)
        self.coll(row, "ig", phase, layer, mb, blocking=True)
        self.compute(row, "wg", phase, layer, mb)
        if wg_comm:
            self.coll(row, "wg", phase, layer, mb, blocking=False)

    def p2p(self, name: str, *, send: bool, rule: str, key: tuple, phase: str, mb: int) -> None:
        if self.w.pp_comm <= 0:
            return
        op = TemplateOp(
            name,
            "comm",
            phase,
            0,
            -1,
            mb,
            collective="send" if send else "recv",
            group="pp",
            key=key,
            peer=rule,
            anchor_self=send,
            size_bytes=self.w.pp_comm,
        )
        idx = self.t.add(op, deps=list(self.t.pending), chain=False)
        self.t.pending = self.t.pending + [idx]

    def build(self) -> StageTemplate:
        s, pp, m = self.stage, self.lay.pp, len(self.blocks)
        for row in self.head:
            self.fwd(row, "fwd", -1, -1)
        for ps in stage_schedule(s, pp, m):
            mb = ps.microbatch
            block = self.blocks[mb]
            local, n_layers = self.layers[mb]
            glob = [s * n_layers + x if x >= 0 else -1 for x in local]
            if ps.direction == "fwd":
                if s > 0:
                    self.p2p(
                        "pp_recv_fwd",
                        send=False,
                        rule="pp_prev",
                        key=("pp", "fwd", mb, s - 1),
                        phase="fwd",
                        mb=mb,
                    )
                for row, layer in zip(block, glob, strict=True):
                    self.fwd(row, "fwd", layer, mb)
                if s < pp - 1:
                    self.p2p(
                        "pp_send_fwd",
                        send=True,
                        rule="pp_next",
                        key=("pp", "fwd", mb, s),
                        phase="fwd",
                        mb=mb,
                    )
            else:
                if s < pp - 1:
                    self.p2p(
                        "pp_recv_bwd",
                        send=False,
                        rule="pp_next",
                        key=("pp", "bwd", mb, s + 1),
                        phase="bwd",
                        mb=mb,
                    )
                for row, layer in zip(reversed(block), reversed(glob), strict=True):
                    self.bwd(row, "bwd", layer, mb, wg_comm=mb == m - 1)
                if s > 0:
                    self.p2p(
                        "pp_send_bwd",
                        send=True,
                        rule="pp_prev",
                        key=("pp", "bwd", mb, s),
                        phase="bwd",
                        mb=mb,
                    )
        for row in self.tail:
            self.fwd(row, "step", -1, -1)
        for row in reversed(self.tail):
            self.bwd(row, "step", -1, -1, wg_comm=True)
        for row in reversed(self.head):
            self.bwd(row, "bwd", -1, -1, wg_comm=True)
        return self.t


def aicb_to_ops(w: AicbWorkload) -> pl.DataFrame:
    """The ops table of one iteration of an AICB workload, for all ``all_gpus`` ranks.

    Parameters
    ----------
    w : AicbWorkload
        From :func:`read_aicb`.

    Returns
    -------
    polars.DataFrame
        Schema :data:`wormsim.workload.ops.OPS_SCHEMA`, rank-major, schedule order within a
        rank; the execution semantics are those of :mod:`wormsim.workload.aicb_format`.
    """
    check_aicb_scale(w)
    head, blocks, tail = w.sections()
    key_ids: dict[tuple, int] = {}
    frames = []
    base = 0
    for stage in range(w.pp):
        tmpl = _AicbStage(w, stage, head, blocks, tail).build()
        frames.append(expand_stage(w.layout, stage, tmpl, key_ids, base))
        base += len(tmpl.ops) * w.layout.stage_size
    return pl.concat(frames, rechunk=True)
