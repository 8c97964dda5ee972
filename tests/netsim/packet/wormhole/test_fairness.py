"""The fair-share gate of patient partitions (:mod:`wormsim.netsim.packet.wormhole.fairness`)
and the patience rule of the steadiness test (``WormholeSpec.patience_windows``)."""

from __future__ import annotations

import numpy as np
import pydantic
import pytest
from numba import njit

from tests.netsim.conftest import dag_of, star
from tests.netsim.packet._kit import kit
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.packet.wormhole.fairness import fair_share_spread
from wormsim.netsim.wormhole.spec import WormholeSpec

GBPS = 1e9 / 8e12  # bytes/ps per Gbit/s


@njit
def _spread(S_, qs, rates):
    return fair_share_spread(S_, qs, rates)


def _four_flows():
    """Flows 0->3, 1->3, 2->3 share host 3's downlink; 2->4 shares host 2's NIC with 2->3.
    Max-min: the downlink's three flows get 100/3 Gbit/s each, 2->4 the 200/3 left at NIC 2."""
    return kit("hpcc", pairs=[(0, 3), (1, 3), (2, 3), (2, 4)], n_hosts=5)


def test_flows_at_one_fraction_of_their_max_min_shares_have_no_spread():
    k = _four_flows()
    fair = np.array([100 / 3, 100 / 3, 100 / 3, 200 / 3]) * GBPS
    qs = np.arange(4, dtype=np.int64)
    assert _spread(k.S, qs, 0.95 * fair) < 1e-9  # HPCC's target utilisation: the same fraction
    assert _spread(k.S, qs, 0.9 * fair) < 1e-9


def test_flows_off_their_max_min_shares_are_spread():
    k = _four_flows()
    qs = np.arange(4, dtype=np.int64)
    equal = np.full(4, 30.0) * GBPS  # 2->4 held at the others' rate: half its share
    assert _spread(k.S, qs, equal) > 0.5
    drifting = np.array([28.0, 33.0, 36.0, 63.0]) * GBPS  # an incast still converging
    assert _spread(k.S, qs, drifting) > 0.1


def _fct(r, fn):
    return (r.node_finish_ps - r.node_start_ps)[fn].astype(np.float64)


def test_a_drifting_share_is_fast_forwarded_once_it_has_converged():
    """Three 100 MB HPCC flows, 0->1 and 0->2 sharing host 0's NIC, 1->2 and 0->2 host 2's
    downlink: their shares drift towards 50/50 for milliseconds, slowly enough for each window
    to pass the range test. Skipped at the first steady window (``patience_windows: 0``) the
    partition froze unequal shares and one flow ended 9 % off packet mode; the patience rule
    holds a partition that took longer than its patience to settle until its flows deliver
    the same fraction of their max-min shares, then skips it: every flow within 1 %."""
    dag, fn = dag_of([(0, 1), (1, 2), (0, 2)], 100_000_000)
    net = NetworkSpec(cc="hpcc")
    ref = _fct(run_packet(dag, star(3), net), fn)
    frozen = run_packet(
        dag, star(3), net, wormhole=WormholeSpec(memo_mode="off", patience_windows=0)
    )
    assert np.abs(_fct(frozen, fn) / ref - 1).max() > 0.05
    r = run_packet(dag, star(3), net, wormhole=WormholeSpec(memo_mode="off"))
    assert r.counters["skips"] >= 1 and r.counters["bytes_skipped"] > 0
    np.testing.assert_allclose(_fct(r, fn), ref, rtol=0.01)
    qp = r.flow_qp[fn]
    np.testing.assert_array_equal(r.qp_acked_bytes[qp] + r.qp_credit_bytes[qp], 100_000_000)


def test_patience_is_recorded_and_off_with_flow_skips():
    dag, _ = dag_of([(0, 1)], 1_000_000)
    r = run_packet(dag, star(2), NetworkSpec(cc="hpcc"), wormhole=WormholeSpec(memo_mode="off"))
    spec = WormholeSpec()
    assert r.wormhole_plan["patience_samples"] == (1 + spec.patience_windows) * spec.window
    r = run_packet(dag, star(2), NetworkSpec(cc="hpcc"), wormhole=WormholeSpec(skip_unit="flow"))
    assert r.wormhole_plan["patience_samples"] == 0


def test_bad_patience_settings_name_their_field():
    with pytest.raises(pydantic.ValidationError, match="patience_windows"):
        WormholeSpec(patience_windows=-1)
    with pytest.raises(pydantic.ValidationError, match="oscillation_max_trend"):
        WormholeSpec(oscillation_max_trend=1.5)
