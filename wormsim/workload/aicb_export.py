"""SimAI / AICB workload export: one rank's schedule of an ops table as an AICB workload.

How ops map to rows (and which cannot be written) is described in
:mod:`wormsim.workload.aicb_format`.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wormsim.rundir import write_text
from wormsim.units import PS_PER_NS

from .aicb_format import AicbRow, AicbWorkload
from .errors import WorkloadError
from .parallel import RankLayout
from .plan import resolve_layout

__all__ = ["AicbExportWarning", "ops_to_workload", "ops_to_aicb", "write_aicb"]


class AicbExportWarning(UserWarning):
    """Some ops of an ops table have no AICB equivalent and were left out of the file."""


_AICB_TYPE = {
    "allreduce": "ALLREDUCE",
    "allgather": "ALLGATHER",
    "reducescatter": "REDUCESCATTER",
    "alltoall": "ALLTOALL",
}
_WG_GROUPS = {"dp": "", "dp_cp": "", "edp": "_DP_EP"}
_COL_GROUPS = {"tp": "", "ep": "_EP", "edp": "_DP_EP"}


def _aicb_type(collective: str, suffix: str) -> str:
    return _AICB_TYPE[collective] + suffix


def _ns(ps: int) -> int:
    return max(1, int(round(ps / PS_PER_NS))) if ps > 0 else 0


def _infer_layout(ops: pl.DataFrame) -> RankLayout:
    world = int(ops["rank"].max()) + 1
    pp = int(ops["stage"].max()) + 1
    sizes = (
        ops.filter((pl.col("kind") == "comm") & ~pl.col("collective").is_in(["send", "recv"]))
        .group_by("group", "coll_id")
        .len()
        .group_by("group")
        .agg(pl.col("len").max())
    )
    size = dict(zip(sizes["group"].to_list(), sizes["len"].to_list(), strict=True))
    tp, ep = int(size.get("tp", 1)), int(size.get("ep", 1))
    etp = int(size.get("etp", tp))
    return RankLayout(tp=tp, cp=1, dp=world // (tp * pp), pp=pp, ep=ep, etp=etp)


def _resolve_layout(ops: pl.DataFrame, config: Any) -> RankLayout:
    if isinstance(config, RankLayout):
        return config
    if config is not None and hasattr(config, "parallel"):
        return resolve_layout(config.model, config.parallel, config.cluster.gpus)
    return _infer_layout(ops)


def _row_label(names: list[str], slot: Any) -> str:
    if slot == "pre":
        return "embedding_layer"
    if slot == "post":
        return "lm_head"
    text = " ".join(names)
    if "attn" in text:
        return "attention_layer"
    if "mlp" in text:
        return "mlp_layer"
    if "ep_" in text or "moe" in text or "expert" in text:
        return "moe_layer"
    return "layer"


@dataclass
class _Segment:
    """The compute before a collective plus the collective: one column of one AICB row."""

    slot: Any  # layer index, or "pre"/"post" for non-layer ops before/after the layers
    compute_ps: int
    comm: dict | None
    names: list[str]


def _segments(ops: list[dict], backward: bool) -> list[_Segment]:
    """Cut one pass (ops in execution order) into segments.

    A segment ends at each collective and at each change of layer. Non-layer ops before the
    first layer op are ``pre`` (``post`` in a backward pass, which runs the model in reverse).
    """
    out: list[_Segment] = []
    acc, names, seen_layer, cur = 0, [], False, None
    before, after = ("post", "pre") if backward else ("pre", "post")
    for op in ops:
        if op["layer"] >= 0:
            slot: Any = op["layer"]
            seen_layer = True
        else:
            slot = after if seen_layer else before
        if slot != cur and names:
            out.append(_Segment(cur, acc, None, names))
            acc, names = 0, []
        cur = slot
        names.append(op["name"])
        if op["kind"] == "compute":
            acc += op["duration_ps"]
        else:
            out.append(_Segment(slot, acc, op, names))
            acc, names = 0, []
    if names:
        out.append(_Segment(cur, acc, None, names))
    return out


def _slot_order(slot: Any) -> tuple[int, int]:
    if slot == "pre":
        return (0, 0)
    if slot == "post":
        return (2, 0)
    return (1, int(slot))


def _block_rows(fwd_ops: list[dict], bwd_ops: list[dict]) -> list[AicbRow]:
    """AICB rows of one micro-batch: per slot, forward segments top down, backward bottom up."""
    fseg = _segments(fwd_ops, backward=False)
    bseg = _segments(bwd_ops, backward=True)
    slots = sorted({x.slot for x in fseg} | {x.slot for x in bseg}, key=_slot_order)
    rows = []
    for slot in slots:
        sf = [x for x in fseg if x.slot == slot]
        sb = [x for x in bseg if x.slot == slot]
        n = max(len(sf), len(sb))
        for i in range(n):
            f = sf[i] if i < len(sf) else None
            b = sb[n - 1 - i] if n - 1 - i < len(sb) else None
            vals: dict[str, Any] = {"name": _row_label((f or b).names, slot)}  # type: ignore[union-attr]
            for col, seg in (("fwd", f), ("ig", b)):
                if seg is None:
                    continue
                vals[f"{col}_compute"] = _ns(seg.compute_ps)
                if seg.comm is not None:
                    op = seg.comm
                    vals[f"{col}_comm_type"] = _aicb_type(
                        op["collective"], _COL_GROUPS[op["group"]]
                    )
                    vals[f"{col}_comm_bytes"] = int(op["size_bytes"])
            rows.append(AicbRow(**vals))
    return rows


def ops_to_workload(ops: pl.DataFrame, config: Any = None, *, rank: int = 0) -> AicbWorkload:
    """One representative rank's schedule as an :class:`AicbWorkload`.

    Parameters
    ----------
    ops : polars.DataFrame
        An ops table (e.g. from :func:`wormsim.workload.builder.build_ops`).
    config : ExperimentConfig, RankLayout or None
        Where TP, PP, EP and the world size come from: an experiment config (its layout is
        resolved), a layout, or ``None`` to infer them from the table (PP from ``stage``, TP and
        EP from the size of the ``tp``/``ep`` communicators).
    rank : int
        The rank whose schedule is written (every rank of the imported file runs it).

    Warns
    -----
    AicbExportWarning
        When ops with no AICB equivalent (``pp``/``cp`` collectives, ``etp`` ones when
        ``etp != tp``, CP transfers) are left out.
    """
    lay = _resolve_layout(ops, config)
    sub = ops.filter(pl.col("rank") == rank).sort("seq")
    if sub.height == 0:
        raise WorkloadError(f"the ops table has no rank {rank}; pick a rank in 0..{lay.world - 1}")
    recs = sub.select(
        "name",
        "kind",
        "phase",
        "layer",
        "microbatch",
        "duration_ps",
        "collective",
        "group",
        "size_bytes",
    ).to_dicts()
    dropped: Counter[str] = Counter()
    pp_comm = 0
    head: list[AicbRow] = []
    tail: list[AicbRow] = []
    passes: dict[tuple[int, str], list[dict]] = {}
    for op in recs:
        mb = op["microbatch"]
        if op["kind"] == "comm":
            coll, group = op["collective"], op["group"]
            if group == "etp" and lay.etp == lay.tp:
                group = op["group"] = "tp"  # expert TP = TP: the same communicators
            if coll in ("send", "recv"):
                if group == "pp":
                    pp_comm = pp_comm or int(op["size_bytes"])
                else:
                    dropped[f"{op['name']} ({group} {coll})"] += 1
                continue
            if group in _WG_GROUPS:
                head.append(
                    AicbRow(
                        f"iter_{op['name']}",
                        wg_comm_type=_aicb_type(coll, _WG_GROUPS[group]),
                        wg_comm_bytes=int(op["size_bytes"]),
                    )
                )
                continue
            if group not in _COL_GROUPS:
                dropped[f"{op['name']} ({group} {coll})"] += 1
                continue
            if mb < 0:
                head.append(
                    AicbRow(
                        f"iter_{op['name']}",
                        ig_comm_type=_aicb_type(coll, _COL_GROUPS[group]),
                        ig_comm_bytes=int(op["size_bytes"]),
                    )
                )
                continue
        elif mb < 0:
            tail.append(AicbRow(f"iter_{op['name']}", fwd_compute=_ns(op["duration_ps"])))
            continue
        direction = "fwd" if op["phase"] == "fwd" else "bwd"
        passes.setdefault((mb, direction), []).append(op)
    if dropped:
        what = ", ".join(f"{k} x{v}" for k, v in sorted(dropped.items()))
        warnings.warn(
            f"AICB export of rank {rank} leaves out ops the format cannot express: {what}",
            AicbExportWarning,
            stacklevel=2,
        )
    mbs = sorted({mb for mb, _ in passes})
    blocks = [_block_rows(passes.get((mb, "fwd"), []), passes.get((mb, "bwd"), [])) for mb in mbs]
    layers = sub.filter(pl.col("layer") >= 0)["layer"].n_unique()
    return AicbWorkload(
        tp=lay.tp,
        pp=lay.pp,
        ga=max(len(mbs), 1),
        all_gpus=lay.world,
        ep=lay.ep,
        vpp=layers,
        pp_comm=pp_comm if lay.pp > 1 else 0,
        rows=tuple(head + [r for b in blocks for r in b] + tail),
    )


def ops_to_aicb(ops: pl.DataFrame, config: Any = None, *, rank: int = 0) -> str:
    """The AICB ``.txt`` text of one rank's schedule (see :func:`ops_to_workload`)."""
    return ops_to_workload(ops, config, rank=rank).to_text()


def write_aicb(path: str | Path, ops: pl.DataFrame, config: Any = None, *, rank: int = 0) -> Path:
    """Write :func:`ops_to_aicb` to ``path`` and return the path."""
    path = Path(path)
    write_text(path, ops_to_aicb(ops, config, rank=rank))
    return path
