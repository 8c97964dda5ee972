"""The collective algorithms are rows of one table: the config choices, the selector's lists and
the DAG's labels follow it, a row added to it is selectable and expanded, and no module of the
collective stage names an algorithm by a bare string."""

from __future__ import annotations

import ast
import math
import typing
from dataclasses import replace
from pathlib import Path

import pytest
from _ops import OpsBuilder

import wormsim.collective as collective_pkg
from wormsim.collective import algorithms as alg
from wormsim.collective import selector
from wormsim.collective.config import CollectiveSpec
from wormsim.collective.expand import expand_dag
from wormsim.collective.plan import algorithm_names
from wormsim.collective.ring import ring_build, ring_key
from wormsim.collective.template import Shape, Template, TemplateKey
from wormsim.workload.ops import COLLECTIVES

SETTINGS = ("allreduce", "allgather", "reducescatter", "alltoall")


@pytest.mark.parametrize("kind", SETTINGS)
def test_the_config_choices_are_the_rows_serving_each_collective(kind: str) -> None:
    literal = CollectiveSpec.model_fields[kind].annotation
    assert typing.get_args(literal) == alg.choices(kind)
    assert alg.choices(kind)[0] == alg.AUTO
    assert set(typing.get_args(literal)) - {alg.AUTO} == {
        a.name for a in alg.TABLE if kind in a.collectives
    }


def test_the_selector_lists_and_the_dag_labels_are_the_table() -> None:
    assert selector.ALGORITHMS == {
        c: tuple(a.name for a in alg.TABLE if c in a.collectives) for c in COLLECTIVES
    }
    assert algorithm_names() == ("", *alg.names())
    assert len(set(alg.names())) == len(alg.TABLE)
    for a in alg.TABLE:
        assert set(a.collectives) <= set(COLLECTIVES), a.name


@pytest.mark.parametrize("kind", COLLECTIVES)
@pytest.mark.parametrize(("uniform", "intra"), [(True, True), (True, False), (False, False)])
def test_auto_has_a_candidate_for_every_group(kind: str, uniform: bool, intra: bool) -> None:
    assert any(a.auto is not None and a.auto(uniform, intra) for a in alg.serving(kind))


def test_the_nccl_model_prices_exactly_the_rows_that_say_so() -> None:
    for a in alg.TABLE:
        kind = a.collectives[0]
        if kind not in ("allreduce", "allgather", "reducescatter"):
            assert not a.nccl_model, a.name
            continue
        t = selector.collective_time_us(kind, a.name, "Simple", 1 << 24, 16, 4, 2)
        assert math.isfinite(t) == a.nccl_model, a.name


def _copy_of_ring(name: str) -> alg.Algorithm:
    """A ring under another name (an algorithm as a new module would add it)."""

    def key(shape: Shape, channels: int, spec: CollectiveSpec) -> TemplateKey:
        return replace(ring_key(shape, channels, spec), algorithm=name)

    def build(key: TemplateKey) -> Template:
        return ring_build(replace(key, algorithm="ring"))

    return alg.Algorithm(name, ("allreduce",), key, build, "a ring by another name")


def test_a_row_added_to_the_table_is_selected_planned_and_labelled(monkeypatch) -> None:
    monkeypatch.setattr(alg, "TABLE", (*alg.TABLE, _copy_of_ring("ring_copy")))
    assert alg.choices("allreduce")[-1] == "ring_copy"
    b = OpsBuilder()
    b.coll("allreduce", [0, 1, 2, 3], size=1 << 20)
    ops = b.frame()
    # the config's Literal is fixed when the class is made: bypass its validation
    spec = CollectiveSpec(max_channels=1).model_copy(update={"allreduce": "ring_copy"})
    got = expand_dag(ops, (2, 4), spec)
    ref = expand_dag(ops, (2, 4), CollectiveSpec(allreduce="ring", max_channels=1))
    assert "ring_copy" in got["algorithm"].to_list()
    assert got.drop("algorithm").equals(ref.drop("algorithm"))
    assert got["algorithm"].replace("ring_copy", "ring").equals(ref["algorithm"])


def test_no_module_of_the_stage_names_an_algorithm_by_a_bare_string() -> None:
    """An algorithm's name is written once, as a module-level constant of its module
    (``RING = "ring"``); everything else uses the constant or a row (docstrings aside)."""
    names = set(alg.names())
    found = []
    for path in sorted(Path(collective_pkg.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = {id(node.value) for node in tree.body if isinstance(node, ast.Assign)}
        found += [
            f"{path.name}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in own
        ]
    assert not found, "use the algorithm's constant or its row:\n" + "\n".join(found)
