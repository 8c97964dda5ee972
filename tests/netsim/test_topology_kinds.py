"""The fabric kinds are rows of one table: the cluster's choices follow it, each builder reads only
the cluster fields its row declares, and a row added to it is built."""

from __future__ import annotations

import typing

import numpy as np
import pytest

from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric import kinds
from wormsim.netsim.fabric.builders import build_clos, build_topology
from wormsim.netsim.fabric.cluster import ClusterSpec

#: Values to move every field a builder might read to (and the kind's base cluster).
_BASE = dict(gpus=32, gpus_per_node=4, hosts_per_leaf=4)
_OTHER = dict(
    gpus=64,
    gpus_per_node=8,
    host_link_gbps=200.0,
    fabric_link_gbps=200.0,
    link_delay_ns=500,
    oversubscription=2.0,
    hosts_per_leaf=2,
)


def _same(a, b) -> bool:
    fields = ("port_node", "port_peer", "port_rate_bps", "port_delay_ps", "is_switch")
    return a.n_nodes == b.n_nodes and all(
        np.array_equal(getattr(a, f), getattr(b, f)) for f in fields
    )


def test_the_cluster_choices_are_the_kinds():
    literal = ClusterSpec.model_fields["topology"].annotation
    assert typing.get_args(literal) == kinds.names()
    assert ClusterSpec(gpus=8).topology == kinds.KINDS[0].name
    assert len(set(kinds.names())) == len(kinds.KINDS)


@pytest.mark.parametrize("row", kinds.KINDS, ids=lambda k: k.name)
def test_a_builder_reads_only_the_fields_of_its_row(row):
    assert set(row.fields) <= set(ClusterSpec.model_fields), row.fields
    base = ClusterSpec(topology=row.name, **_BASE)
    for name, value in _OTHER.items():
        moved = base.model_copy(update={name: value})
        if name not in row.fields:
            assert _same(build_topology(base), build_topology(moved)), name


def test_a_row_added_to_the_table_is_built(monkeypatch):
    extra = kinds.TopologyKind("clos_copy", build_clos, kinds.kind("clos").fields, "a copy")
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, extra))
    base = ClusterSpec(topology="clos", **_BASE)
    # the cluster's Literal is fixed when the class is made: bypass its validation
    copy = base.model_copy(update={"topology": "clos_copy"})
    assert _same(build_topology(copy), build_topology(base))
    with pytest.raises(NetsimInputError, match="clos_copy"):
        build_topology(base.model_copy(update={"topology": "nope"}))
