"""Per-flow FCT against HPCC ns-3 (tests/data/ns3), every scenario x every congestion control:
mean FCT within 5 %, every flow within 15 % (interchangeable flows compared as sorted groups;
DCQCN as our mean over as many seeds as ns-3 has RNG runs, 16 or 64, against theirs, see
ns3_crosscheck), in packet and in Wormhole mode (each test on its own memo store); and, where
ns-3 draws no random number, packet mode equal to ns-3 to the nanosecond."""

import numpy as np
import pytest

from tests.netsim.ns3_crosscheck import (
    CCS,
    DATA,
    SCENARIOS,
    UNSEEN,
    check,
    dcqcn_z,
    errors,
    reference_fct_ns,
    reference_runs_fct_ns,
    run_fct_ns,
)
from wormsim.netsim.scenario import run_hpcc_scenario
from wormsim.netsim.wormhole.spec import WormholeSpec

# Packet mode sends ns-3's frame sizes (data headers 48 B, ACKs 60/88 B, PFC 43 B), orders
# a switch port's transmit-complete among same-ns events as ns-3 does, starts a QP when ns-3 does
# and rounds times as ns-3's Seconds(double) does: HPCC, TIMELY, DCTCP and DCQCN with step
# marking reproduce ns-3's FCTs exactly on every scenario (docs/fidelity.md). Every pair holds
# the bounds in both modes; Wormhole's known misses with flow skips and replayed stores are
# marked below.


_DCQCN_SLOW = ("fattree4-mixed-r3", "fattree4-mixed-r6")
"""The two largest mixed scenarios under DCQCN (64 seeds a mode, about 20 s each on the CI
machine) run only with ``-m slow``; fattree4-mixed-r2 keeps the mixed scenarios under DCQCN in
the CI subset."""


def _every_pair():
    return [
        pytest.param(s, c, marks=[pytest.mark.slow] if c == "dcqcn" and s in _DCQCN_SLOW else [])
        for c in CCS
        for s in SCENARIOS
    ]


@pytest.mark.parametrize("mode", ["packet", "wormhole"])
@pytest.mark.parametrize(("scenario", "cc"), _every_pair())
def test_fct_matches_ns3(scenario, cc, mode):
    r = check(scenario, cc, mode)
    print(
        f"{scenario} {cc} {mode}: mean FCT err {r['mean_fct_err']:.2%}, max flow err "
        f"{r['max_flow_err']:.2%}, max sorted-group err {r['max_group_err']:.2%}"
    )
    assert r["unfinished"] == 0
    assert r["mean_fct_err"] < 0.05
    assert r["max_group_err"] < 0.15


# Every scenario x every deterministic congestion control, to the nanosecond. A flow that starts
# in the nanosecond its host's NIC wakes for another flow sends after that wake, as ns-3 creates
# the QP two zero-delay events after the start (dag_exec.qp_start_event; HPCC on
# fattree4-mixed-r3 was 13 of 32 flows off, up to 3.1 %, before it).
_EXACT = [(s, c) for c in ("hp", "timely", "dctcp", "dcqcn-step") for s in SCENARIOS + UNSEEN]


@pytest.mark.parametrize(("scenario", "cc"), _EXACT)
def test_packet_mode_is_ns3_to_the_nanosecond(scenario, cc):
    """Where ns-3 draws no random number, packet mode reproduces it: HPCC, TIMELY, DCTCP, and
    DCQCN with a step marking threshold (``<scenario>/dcqcn-step/``: KMIN = KMAX = 800 KB, so RED
    never draws), every flow's FCT to the nanosecond. dcqcn-step pins DCQCN's mechanism (CNPs,
    alpha, cuts, recovery, pacing) that the seed-averaged check can only bound; it and TIMELY
    were up to 35 % and 10 % off on a flow while pacing times were cut to whole ns from the
    decimal product instead of ns-3's binary one (``core.ns3_seconds_ns``: 8,384 ns for a frame
    at the 1 Gb/s floor, ns-3 8,383)."""
    ours, _, _ = run_fct_ns(scenario, cc)
    np.testing.assert_array_equal(ours, reference_fct_ns(scenario, cc))


# Wormhole on the fattree4-mixed scenarios (short flows starting while long ones run, added for
# issue 30), found with them and not fixed yet: with flow skips, flows that start or run while
# others are skipped finish up to twice as late, and replays of memo entries learned in an
# earlier run move HPCC's short flows by 16-33 % (docs/fidelity.md). Packet mode and Wormhole
# on a fresh store hold on all of them.
_WH_MISSES = {
    ("flow_skips", "fattree4-mixed-r3", "hp"): "flow 13 (210 KB) 91 % late",
    ("flow_skips", "fattree4-mixed-r6", "hp"): "a group of flows 28.6 % late",
    ("flow_skips", "fattree4-mixed-r6", "dctcp"): "flow 6 (2 MB) 39 % late",
    ("warm_store", "fattree4-mixed-r6", "hp"): "a short flow 18.6 % off",
}
_SHARED_STORE_MISSES = {"hp": {"fattree4-mixed-r3", "fattree4-mixed-r6", "fattree4-mixed-r2"}}


_SLOW = {("flow_skips", s, "dcqcn") for s in SCENARIOS if s.startswith("fattree4-mixed")}
"""Pairs run only with ``-m slow``: DCQCN over 16 or 64 seeds on the larger mixed scenarios
with flow skips (not the default skip unit), about a minute each on the CI machine."""


def _pairs(test, ccs):
    """(scenario, cc) of every scenario and CC, the known Wormhole misses of ``test`` as strict
    xfails (they fail the run once they hold), the pairs of ``_SLOW`` marked slow."""
    out = []
    for c in ccs:
        for s in SCENARIOS:
            why = _WH_MISSES.get((test, s, c))
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            if (test, s, c) in _SLOW:
                marks.append(pytest.mark.slow)
            out.append(pytest.param(s, c, marks=marks))
    return out


@pytest.mark.parametrize(
    ("scenario", "cc"), _pairs("flow_skips", [c for c in CCS if c != "timely"])
)
def test_flow_skips_match_ns3(scenario, cc):
    """Wormhole with flow skips (``skip_unit="flow"``, default detector) within the same bounds;
    TIMELY refuses them (a phantom load adds no queueing delay)."""
    r = check(scenario, cc, "wormhole", wormhole=WormholeSpec(skip_unit="flow"))
    assert r["unfinished"] == 0
    assert r["mean_fct_err"] < 0.05
    assert r["max_group_err"] < 0.15


@pytest.mark.parametrize(
    "scenario",
    [pytest.param(s, marks=[pytest.mark.slow] if s == UNSEEN[1] else []) for s in UNSEEN],
)  # the largest (s57, about 25 s on the CI machine) with -m slow
def test_dcqcn_on_unseen_scenarios_is_ns3_within_its_randomness(scenario):
    """DCQCN on scenarios made after the engine's fixes: our per-flow mean over 64 seeds against
    ns-3's over 64 RNG runs. Their short flows are bimodal (a 110 KB flow takes 23 or 111 us,
    depending on the draws), so a fixed per-flow bound measures the draws: ns-3's own runs 1-16
    and 17-32 differ by up to 26 % on a flow (s41, s57), and at 64 runs our means are still 24 %
    and 33 % off on one flow each. So each flow's difference is judged against its standard
    error: no flow beyond 3.5 of them (measured: largest 2.3-2.7), the typical one about one
    (RMS 1.1-1.4), and the mean FCT within 1 % (measured 0.07-0.43 %)."""
    z, mean_err = dcqcn_z(scenario)
    print(f"{scenario}: RMS z {np.sqrt(np.mean(z**2)):.2f}, max |z| {np.abs(z).max():.2f}")
    assert np.abs(z).max() < 3.5
    assert np.sqrt(np.mean(z**2)) < 1.8
    assert mean_err < 0.01


@pytest.mark.parametrize("scenario", SCENARIOS + UNSEEN)
def test_dcqcn_rng_runs_are_ns3_runs(scenario):
    """The recorded RNG runs are what they say: run 1 is the reference, and RED's randomness
    really moves ns-3's per-flow outcomes (else a single-run comparison would do)."""
    runs = reference_runs_fct_ns(scenario)
    assert runs.shape[0] in (16, 64) and not np.isnan(runs).any()
    np.testing.assert_array_equal(runs[0], reference_fct_ns(scenario, "dcqcn"))
    assert (np.ptp(runs, axis=0) / runs.mean(axis=0)).max() > 0.05


@pytest.mark.parametrize(("scenario", "cc"), _pairs("warm_store", [c for c in CCS if c != "dcqcn"]))
def test_a_rerun_on_a_warm_store_stays_within_bounds(scenario, cc, tmp_path, monkeypatch):
    """The default memo store persists across runs: a second run replays the first one's
    transients and must still hold the bounds (entries used to restore the rate alone, and the
    delivered rate at that: parkinglot under DCTCP came out 15.6 % off on its long flow).
    DCQCN's seed-averaged check reruns on one store already (16 seeds)."""
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(tmp_path / "memo.sqlite"))
    cold = check(scenario, cc, "wormhole")
    warm_fct, group, counters = run_fct_ns(scenario, cc, "wormhole")
    warm = errors(warm_fct, reference_fct_ns(scenario, cc), group)
    print(
        f"{scenario} {cc} warm store: {counters['memo_hits']} hits, mean FCT err "
        f"{warm['mean_fct_err']:.2%} (cold {cold['mean_fct_err']:.2%}), max sorted-group err "
        f"{warm['max_group_err']:.2%} (cold {cold['max_group_err']:.2%})"
    )
    assert warm["unfinished"] == 0
    assert warm["mean_fct_err"] < 0.05
    assert warm["max_group_err"] < 0.15


@pytest.mark.parametrize("cc", ["hp", "dctcp"])
def test_every_scenario_on_one_shared_store_stays_within_bounds(cc, tmp_path, monkeypatch):
    """All scenarios, twice, on one store (as a user's default store sees them): entries learned
    on one scenario are replayed on others of the same namespace. TIMELY is left out: its
    incast shares have no unique fixed point, so a replay's perturbation may pick another one
    (see the next test). HPCC's known misses on the fattree4-mixed scenarios are reported, not
    asserted (``_SHARED_STORE_MISSES``)."""
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(tmp_path / "memo.sqlite"))
    misses = []
    for _ in range(2):
        for scenario in SCENARIOS:
            r = check(scenario, cc, "wormhole")
            if r["unfinished"] or r["mean_fct_err"] >= 0.05 or r["max_group_err"] >= 0.15:
                misses.append((scenario, round(r["mean_fct_err"], 4), round(r["max_group_err"], 4)))
    print(f"{cc} on one store, misses: {misses}")
    assert [m for m in misses if m[0] not in _SHARED_STORE_MISSES.get(cc, ())] == []


def test_timely_incast_shares_hang_on_a_microsecond(tmp_path):
    """Why TIMELY is not held to the bounds across scenarios: in packet mode, starting
    incast-mixed's second flow 1 us later hands its first flow a different share for good
    (it finishes about 4x sooner), so any replay that shifts a flow by that much can too."""
    d = DATA / "incast-mixed" / "timely"
    lines = (d / "flow.txt").read_text().splitlines()
    moved = lines[2].split()
    moved[5] = f"{float(moved[5]) + 1e-6:.10f}"
    (tmp_path / "flow.txt").write_text("\n".join([*lines[:2], " ".join(moved), *lines[3:]]) + "\n")
    base = run_hpcc_scenario(d / "topology.txt", d / "flow.txt", d / "config.txt")
    late = run_hpcc_scenario(d / "topology.txt", tmp_path / "flow.txt", d / "config.txt")
    assert late.fct_ps[1] == pytest.approx(base.fct_ps[1], rel=0.02)  # the moved flow itself
    assert late.fct_ps[0] < 0.5 * base.fct_ps[0]
