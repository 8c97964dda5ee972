"""AICB MoE files whose EP exceeds DP (TP8-EP8-PP4/128, TP8-EP8-PP2/64, AICB's own output):
expert groups are folded as Megatron-core's MoE parallel folding does, and every collective
keeps the file's bytes in the group it names."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from wormsim.collective.config import CollectiveSpec
from wormsim.collective.expand import expand_dag
from wormsim.workload.aicb import AicbFormatError, aicb_to_ops, parse_aicb, read_aicb

from ._aicb import DATA

FILES = {
    "moe8x13b-tp8-ep8-pp4-128.txt": dict(gpus=128, pp=4),
    "moe8x13b-tp8-ep8-pp2-64.txt": dict(gpus=64, pp=2),
}
_GROUP = {"_DP_EP": "edp", "_EP": "ep"}


def _file_comms(path: Path) -> tuple[dict, int]:
    """Per (collective type, group): the byte sizes the file lists, read from its text; and ga."""
    lines = path.read_text().splitlines()
    ga = int(lines[0].split("ga:")[1].split()[0])
    out: dict[tuple[str, str], set[int]] = {}
    for line in lines[2:]:
        f = line.split()
        for col, (t, b) in {"fwd": (3, 4), "ig": (6, 7), "wg": (9, 10)}.items():
            if f[t] == "NONE" or int(float(f[b])) == 0:
                continue
            base, group = f[t], ("dp" if col == "wg" else "tp")
            for suffix, g in _GROUP.items():
                if base.endswith(suffix):
                    base, group = base[: -len(suffix)], g
                    break
            out.setdefault((base.lower(), group), set()).add(int(float(f[b])))
    return out, ga


@pytest.mark.parametrize("name", sorted(FILES))
def test_ep_above_dp_imports_with_folded_expert_groups(name: str):
    w = read_aicb(DATA / name)
    gpus, pp = FILES[name]["gpus"], FILES[name]["pp"]
    assert (w.tp, w.ep, w.pp, w.all_gpus, w.dp) == (8, 8, pp, gpus, 4)  # EP 8 > DP 4
    ops = aicb_to_ops(w)
    comm = ops.filter(pl.col("kind") == "comm")
    inst = comm.group_by("coll_id").agg(
        pl.col("rank").sort().alias("members"), pl.first("group"), pl.first("size_bytes"),
        pl.first("collective"),
    )  # fmt: skip
    stage = gpus // pp
    for row in inst.filter(pl.col("group") == "ep").iter_rows(named=True):
        m = row["members"]  # ep consecutive ranks: one server's TP group (expert TP 1)
        assert m == list(range(m[0], m[0] + 8)) and m[0] % 8 == 0
    for row in inst.filter(pl.col("group") == "edp").iter_rows(named=True):
        m = row["members"]  # edp = TP*DP/EP = 4 ranks of one stage, one per EP group
        assert len(m) == 4 and len({r // stage for r in m}) == 1
        assert [b - a for a, b in zip(m, m[1:], strict=False)] == [8, 8, 8]
    # every EP group runs the same all-to-alls: 2 per MoE layer each way, per micro-batch
    per_group = Counter(tuple(m) for m in inst.filter(pl.col("group") == "ep")["members"])
    assert len(per_group) == gpus // 8
    text = (DATA / name).read_text()
    rows = text.splitlines()[2:]
    a2a = sum(r.split()[3] == "ALLTOALL_EP" for r in rows) + sum(
        r.split()[6] == "ALLTOALL_EP" for r in rows
    )
    # the file is one rank's work (AICB writes the layers of one stage): every EP group runs
    # each of its all-to-alls once
    assert set(per_group.values()) == {a2a}
    # exact bytes: the sizes of each (collective, group) are those the file lists
    want, _ = _file_comms(DATA / name)
    got = {
        (c, g): set(x["size_bytes"].to_list())
        for (c, g), x in inst.group_by(["collective", "group"])
    }
    for key, sizes in want.items():
        assert got[key] <= sizes, key  # (a stage may not hold every row, e.g. embeddings)
    assert got[("alltoall", "ep")] == want[("alltoall", "ep")]
    assert got[("allgather", "edp")] == want[("allgather", "edp")]
    assert got[("reducescatter", "edp")] == want[("reducescatter", "edp")]


@pytest.mark.parametrize("name", sorted(FILES))
def test_folded_moe_files_expand_into_flows_of_their_groups(name: str):
    w = read_aicb(DATA / name)
    ops = aicb_to_ops(w)
    dag = expand_dag(ops, (8, w.all_gpus), CollectiveSpec())
    flows = dag.filter(pl.col("kind") == "flow")
    ep = flows.filter(pl.col("group") == "ep")
    assert ep.height > 0 and (ep["src"] // 8 == ep["dst"] // 8).all()  # inside a server
    # an all-to-all moves (n-1)/n of each member's buffer: per instance 8 * 7/8 * size
    a2a = ops.filter((pl.col("group") == "ep") & (pl.col("kind") == "comm"))
    per_inst = a2a.group_by("coll_id").agg(pl.first("size_bytes"), pl.len().alias("n"))
    n = per_inst["n"]
    want = int((per_inst["size_bytes"] // n * (n - 1) * n).sum())
    assert int(ep["size_bytes"].sum()) == want
    edp = flows.filter(pl.col("group") == "edp")
    assert edp.height > 0 and (edp["src"] // 8 != edp["dst"] // 8).all()  # across servers


def test_ep_must_still_fit_a_pipeline_stage():
    head = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 64 pp: 4 ga: 1 "
    text = head + "all_gpus: 128 pp_comm: 8\n1\nmlp 0 1 NONE 0 1 NONE 0 1 NONE 0 100\n"
    msg = r"x.txt:1: ep \(64\) must divide TP\*DP = all_gpus/PP = 32"
    with pytest.raises(AicbFormatError, match=msg):
        parse_aicb(text, "x.txt")
