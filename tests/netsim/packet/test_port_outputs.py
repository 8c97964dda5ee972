"""The per-port outputs are rows of one table: each names a per-port kernel field, and a row added
to it reaches the result, ``ports.parquet``'s columns and the report's link and tier tables."""

from __future__ import annotations

import pickle

import numpy as np
import polars as pl

from wormsim.analysis.traffic import link_table, tier_table
from wormsim.netsim.packet import port_outputs as po
from wormsim.netsim.packet.fields import STATE_TABLE, UNITS
from wormsim.netsim.result import SimResult


def test_each_row_names_a_per_port_kernel_field():
    for o in po.PORT_OUTPUTS:
        f = STATE_TABLE[o.field]
        assert f.dims == ("port",), o
        assert o.unit in UNITS and o.tier in ("max", "sum"), o
        assert o.column.endswith("_ps") == (o.unit == "ps"), o
    for attr in ("field", "result", "column"):
        names = [getattr(o, attr) for o in po.PORT_OUTPUTS]
        assert len(set(names)) == len(names), attr


def _result(outputs: dict[str, np.ndarray]) -> SimResult:
    z = np.zeros(0, np.int64)
    return SimResult(z, z, {}, z, z, (z, z), port_outputs=outputs)


def test_a_row_added_to_the_table_reaches_every_table(monkeypatch):
    extra = po.PortOutput("tx_bytes", "tx_bytes", "tx_bytes", "bytes", "bytes it sent")
    monkeypatch.setattr(po, "PORT_OUTPUTS", (*po.PORT_OUTPUTS, extra))
    n = 3
    arrays = {o.field: np.arange(n, dtype=np.int64) + 7 for o in po.PORT_OUTPUTS}
    arrays["pfc_since_ps"] = np.array([-1, 5, -1])
    got = po.collect(arrays, now_ps=10)
    assert list(got) == list(po.result_names())
    assert got["pfc_paused_ps"].tolist() == [7, 8 + 5, 9]  # a pause in force counts up to now
    assert got["tx_bytes"].tolist() == [7, 8, 9]
    result = _result(got)
    assert result.tx_bytes is got["tx_bytes"] and result.ecn_marks is got["ecn_marks"]
    assert list(po.zeros(n)) == list(po.result_names())
    cols = po.columns(got)
    assert list(cols)[-1] == "tx_bytes"
    ports = pl.DataFrame(
        {
            "port": np.arange(n),
            "node": np.arange(n),
            "peer": np.arange(n),
            "tier": ["a", "a", "b"],
            "rate_bps": np.full(n, 10**11),
            "payload_bytes": np.arange(n),
            **cols,
        }
    )
    links = link_table(ports, 1000)
    assert links.columns[-1] == "tx_bytes" and "pfc_paused_us" in links.columns
    tiers = tier_table(links).sort("tier")
    assert tiers["tx_bytes"].to_list() == [15, 9]


def test_a_result_pickles_with_its_port_outputs():
    result = _result({"ecn_marks": np.arange(4)})
    back = pickle.loads(pickle.dumps(result))
    assert back.ecn_marks.tolist() == [0, 1, 2, 3]
    assert not hasattr(back, "no_such_output")


def test_a_row_may_declare_its_own_kernel_field(monkeypatch):
    """A new per-port output whose field nothing else reads declares it in its row: the state
    table's physics rows end with :func:`own_fields`, so the row and the kernel line that fills
    the field are the whole change."""
    import numpy as np

    from wormsim.netsim.common.field_spec import field_group
    from wormsim.netsim.packet import fields
    from wormsim.netsim.packet import port_outputs as po

    assert [f.name for f in field_group("x", po.own_fields())] == [
        f.name for f in fields.PHYSICS_FIELDS if f.group.startswith("per-port outputs declared")
    ]
    extra = po.PortOutput(
        "acks_tx", "acks_sent", "ack_count", "count", "ACKs it sent", dtype=np.int64
    )
    monkeypatch.setattr(po, "PORT_OUTPUTS", (*po.PORT_OUTPUTS, extra))
    spec = field_group("x", po.own_fields())[-1]
    assert (spec.name, spec.dtype, spec.dims, spec.unit, spec.init) == (
        "acks_tx",
        np.int64,
        ("port",),
        "count",
        0,
    )
