"""Per-flow FCT against HPCC ns-3 (tests/data/ns3), every scenario x every congestion control:
mean FCT within 5 %, every flow within 15 % (interchangeable flows compared as sorted groups;
DCQCN as the mean over 16 seeds against ns-3's mean over 16 RNG runs, see ns3_crosscheck), in
packet and in Wormhole mode (each test on its own memo store)."""

import numpy as np
import pytest

from tests.netsim.ns3_crosscheck import (
    CCS,
    SCENARIOS,
    check,
    reference_fct_ns,
    reference_runs_fct_ns,
)

# TIMELY updates its rate once per RTT, on the ACK of the packet sent just after its last update;
# which update first sees the RTT above T_low decides which flow backs off. Our frames are 12 B
# shorter than ns-3's (its PPP header is 14 B, ``PppHeader::GetStaticSize``; we count 2), so the
# update phase drifts by 33 ns per RTT against ns-3's (measured on joiner3: 4,233 ns vs 4,200 ns
# between updates) and a different update crosses T_low. With ns-3's frame sizes all three are
# within bounds (joiner3 0.26 % mean, leafspine-a2a 6.5 %, fattree4-perm 10.1 % per flow); the
# change is open (issue 11, docs/fidelity.md).
KNOWN = {
    ("fattree4-perm", "timely"): "TIMELY update phase: frames 12 B shorter than ns-3's",
    ("joiner3", "timely"): "TIMELY update phase: frames 12 B shorter than ns-3's",
    ("leafspine-a2a", "timely"): "TIMELY update phase: frames 12 B shorter than ns-3's",
}


@pytest.mark.parametrize("mode", ["packet", "wormhole"])
@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("cc", CCS)
def test_fct_matches_ns3(scenario, cc, mode, request):
    r = check(scenario, cc, mode)
    print(
        f"{scenario} {cc} {mode}: mean FCT err {r['mean_fct_err']:.2%}, max flow err "
        f"{r['max_flow_err']:.2%}, max sorted-group err {r['max_group_err']:.2%}"
    )
    assert r["unfinished"] == 0
    if (scenario, cc) in KNOWN:
        # not strict: the phase may land right by chance (joiner3 in Wormhole mode: 0.01 %)
        request.applymarker(pytest.mark.xfail(reason=KNOWN[(scenario, cc)], strict=False))
    assert r["mean_fct_err"] < 0.05
    assert r["max_group_err"] < 0.15


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_dcqcn_rng_runs_are_ns3_runs(scenario):
    """The recorded RNG runs are what they say: run 1 is the reference, and RED's randomness
    really moves ns-3's per-flow outcomes (else a single-run comparison would do)."""
    runs = reference_runs_fct_ns(scenario)
    assert runs.shape[0] == 16 and not np.isnan(runs).any()
    np.testing.assert_array_equal(runs[0], reference_fct_ns(scenario, "dcqcn"))
    assert (np.ptp(runs, axis=0) / runs.mean(axis=0)).max() > 0.05
