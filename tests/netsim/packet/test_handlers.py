"""The event handlers called through an address: the table, the calls and the linking agree."""

from __future__ import annotations

import importlib
import inspect
import sys
import types as pytypes

import numba
import pytest

from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet import calls, handlers
from wormsim.netsim.packet.handlers import HANDLER_FIELDS, HANDLERS, Handler
from wormsim.netsim.packet.state import PACKET_STATE, Params, WhParams
from wormsim.netsim.packet.wormhole import calls as wh_calls
from wormsim.netsim.packet.wormhole.handlers import WH_HANDLER_FIELDS, WH_HANDLERS

TABLES = [(name, row, calls) for name, row in HANDLERS.items()] + [
    (name, row, wh_calls) for name, row in WH_HANDLERS.items()
]


def _params(fn) -> list[str]:
    return list(inspect.signature(getattr(fn, "py_func", fn)).parameters)


@pytest.mark.parametrize(("name", "row", "module"), TABLES, ids=[t[0] for t in TABLES])
def test_each_handler_takes_its_rows_arguments_and_has_a_call(
    name: str, row: Handler, module
) -> None:
    impl = getattr(importlib.import_module(f"wormsim.netsim.packet.{row.module}"), row.function)
    assert _params(impl)[:2] == ["S", "P"]
    assert len(_params(impl)) == 2 + len(row.args)
    assert callable(getattr(module, name))


def test_every_handler_has_a_params_field() -> None:
    assert set(HANDLER_FIELDS) <= set(Params._fields)
    assert not set(WH_HANDLER_FIELDS) & set(Params._fields)  # Wormhole's: in WhParams only
    assert set(WH_HANDLER_FIELDS) <= set(WhParams._fields)
    assert set(calls.__all__) == set(HANDLERS) and set(wh_calls.__all__) == set(WH_HANDLERS)


def test_a_run_gets_an_address_for_every_handler() -> None:
    from wormsim.netsim.fabric.topology import Topology
    from wormsim.netsim.packet.run import _params as run_params

    topo = Topology.from_links(2, [], [(0, 1, 100e9, 1_000_000)])  # two hosts, one link
    P = run_params(NetworkSpec(cc="hpcc"), topo, 0)
    addresses = [getattr(P, f) for f in HANDLER_FIELDS]
    assert all(a > 0 for a in addresses) and len(set(addresses)) == len(addresses)


def test_a_handler_that_returns_a_value_is_refused(monkeypatch) -> None:
    module = pytypes.ModuleType("wormsim.netsim.packet._returns_a_value")

    @numba.njit
    def bad(S, P, now):
        return now

    module.bad = bad
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(
        handlers, "HANDLERS", {"bad": Handler("_returns_a_value", "bad", (numba.int64,))}
    )
    handlers.handler_addresses.cache_clear()
    try:
        with pytest.raises(TypeError, match="returns a value"):
            handlers.handler_addresses(
                PACKET_STATE, numba.typeof(Params(*([0] * len(Params._fields))))
            )
    finally:
        handlers.handler_addresses.cache_clear()
