"""AICB format: parse the real AICB file, its rows and sections, and malformed input."""

from __future__ import annotations

import pytest

from tests.workload._aicb import REAL, B, H, M, S, V
from wormsim.workload.aicb import AicbFormatError, parse_aicb, read_aicb

# --------------------------------------------------------------------------------------------
# Parsing


def test_header_of_real_file(real):
    assert real.policy == "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
    assert (real.tp, real.ep, real.pp, real.vpp, real.ga, real.all_gpus) == (8, 1, 4, 10, 4, 128)
    assert real.pp_comm == 20971520 == M
    assert real.dp == 4
    assert real.checkpoints == () and real.checkpoint_initiates == ()
    assert len(real.rows) == 99


def test_rows_sizes_and_groups(real):
    attn = [r for r in real.rows if r.name == "attention_layer"]
    assert len(attn) == 40  # 10 layers per stage x ga 4
    for r in attn:
        assert r.comm("fwd") == ("allreduce", "tp", M)
        assert r.comm("ig") == ("allreduce", "tp", M)
        assert r.comm("wg") is None
    by = {r.name: r for r in real.rows}
    assert by["grad_norm"].comm("fwd") == ("allgather", "tp", 1069547520)
    assert by["grad_norm"].comm("wg") == ("reducescatter", "dp", 2 * 1069547520)
    assert by["moe_grad_norm1"].comm("wg") == ("allgather", "edp", 0)
    assert by["moe_grad_norm2"].comm("wg") == ("reducescatter", "edp", 0)
    assert by["embedding_norm"].comm("fwd") == ("allreduce", "tp", 2 * V * H)
    assert by["cross_entropy1"].comm("fwd") == ("allreduce", "tp", 4 * B * S)
    row = parse_aicb(
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 pp: 1 ga: 1 all_gpus: 8\n"
        "1\nmoe\t-1\t5\tALLTOALL_EP\t64\t5\tALLREDUCEALLTOALL\t32\t5\tALLGATHER_DP_EP\t16\t100\n"
    ).rows[0]
    assert row.comm("fwd") == ("alltoall", "ep", 64)
    assert row.comm("ig") == ("allreduce", "tp", 32)
    assert row.comm("wg") == ("allgather", "edp", 16)


def test_sections_of_real_file(real):
    head, blocks, tail = real.sections()
    assert [r.name for r in head] == ["grad_norm", "layernorm", "moe_grad_norm1", "moe_grad_norm2"]
    assert len(blocks) == 4
    for b in blocks:
        names = [r.name for r in b]
        assert names[0] == "embedding_layer" and names[-1] == "embedding_norm"
        assert names[1:-1] == ["attention_layer", "mlp_layer"] * 10
    assert [r.name for r in tail][:3] == ["cross_entropy1", "cross_entropy2", "cross_entropy3"]
    assert len(tail) == 7


def test_text_round_trip_is_exact(real):
    assert real.to_text() == REAL.read_text()


# --------------------------------------------------------------------------------------------
# Malformed input

GOOD_HEADER = (
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 ep: 1 pp: 1 vpp: 1 ga: 1 "
    "all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0"
)
ROW = "attention_layer\t-1\t1\tALLREDUCE\t64\t1\tALLREDUCE\t64\t1\tNONE\t0\t100"


BAD_SIZE = ROW.replace("\t64\t1\tALLREDUCE", "\t6x4\t1\tALLREDUCE")
NEG_SIZE = ROW.replace("ALLREDUCE\t64\t1\tNONE", "ALLREDUCE\t-64\t1\tNONE")
BAD_TYPE = ROW.replace("\tALLREDUCE\t64\t1\tNONE", "\tBROADCAST\t64\t1\tNONE")
SHORT = "mlp_layer -1 1 NONE 0 1 NONE 0 1 NONE 0"


@pytest.mark.parametrize(
    "text,line,words",
    [
        (f"{GOOD_HEADER}\n2\n{ROW}\n{SHORT}\n", 4, "11 fields"),
        (f"{GOOD_HEADER}\n1\n{BAD_SIZE}\n", 3, "fwd_comm_bytes is '6x4', not an integer"),
        (f"{GOOD_HEADER}\n2\n{ROW}\n{NEG_SIZE}\n", 4, "ig_comm_bytes is -64"),
        (f"{GOOD_HEADER}\n1\n{BAD_TYPE}\n", 3, "'BROADCAST', an unknown comm type"),
        (f"{GOOD_HEADER.replace(' ga: 1', '')}\n1\n{ROW}\n", 1, "'ga:' is missing"),
        (f"{GOOD_HEADER}\n3\n{ROW}\n{ROW}\n", 2, "says 3 layer rows but the file has 2"),
        (f"{GOOD_HEADER.replace('all_gpus: 8', 'all_gpus: 10')}\n1\n{ROW}\n", 1, "not divisible"),
        (
            f"{GOOD_HEADER.replace('HYBRID_TRANSFORMER_FWD_IN_BCKWD', 'DLRM')}\n1\n{ROW}\n",
            1,
            "policy 'DLRM'",
        ),
    ],
    ids=[
        "fields",
        "non-integer",
        "negative",
        "comm-type",
        "missing-key",
        "row-count",
        "all-gpus",
        "policy",
    ],
)
def test_malformed_inputs(tmp_path, text, line, words):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(AicbFormatError) as exc:
        read_aicb(path)
    assert isinstance(exc.value, ValueError)
    msg = str(exc.value)
    assert f"{path}:{line}:" in msg and words in msg
