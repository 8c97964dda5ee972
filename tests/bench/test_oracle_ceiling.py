"""The oracle counts of ``bench/oracle_ceiling.py`` on a hand-made trace with known answers.

Three flows, every port 100 bit/s except port 5 (60 bit/s), each sending 1 byte per ps from its
start to its finish (no samples, so the bytes are linear in time):

* flow 0: ports (0, 2), from 0 to 100;
* flow 1: ports (1, 2, 5), from 40 to 80 (shares port 2 with flow 0);
* flow 2: ports (6, 5), from 60 to 70 (shares port 5 with flow 1 only).

Flow 0's partition changes at 0, 40, 60, 70, 80; flow 2 never reaches it (no shared port), so
its bottleneck-scoped changes are 0, 40, 80 only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import oracle_ceiling as oc  # noqa: E402

START = np.array([0, 40, 60], np.int64)
FINISH = np.array([100, 80, 70], np.int64)
LINKS = [(0, 2), (1, 2, 5), (6, 5)]
CAP = np.full(7, 100.0)
CAP[5] = 60.0


def _curves():
    none = np.zeros(0, np.int64)
    return oc.Curves(
        START, FINISH, (FINISH - START).astype(float), none, none.astype(np.int32), none
    )


def test_partition_changes_and_whole_partition_skip():
    changes, _, _ = oc.partition_pass(START, FINISH, LINKS, CAP)
    assert changes[0].tolist() == [0, 40, 60, 70, 80]
    assert changes[1].tolist() == [40, 60, 70]
    assert changes[2].tolist() == [60]
    c = _curves()
    # settled 10 ps after each change: flow 0 [10,40) [50,60) [90,100); flow 1 [50,60)
    got = [oc.skippable(c, q, changes[q], FINISH[q], 10) for q in range(3)]
    assert got == pytest.approx([50, 10, 0])


def test_a_bottleneck_scoped_skip_outlives_an_unrelated_flow():
    reach = oc.reach_times(START, FINISH, LINKS)
    assert [r.tolist() for r in reach] == [[0, 40, 80], [40, 60, 70], [60]]
    c = _curves()
    got = [oc.skippable(c, q, reach[q], FINISH[q], 10) for q in range(3)]
    assert got == pytest.approx([70, 10, 0])  # flow 0 skips through flow 2's start and end


def test_max_min_share_at_each_change():
    _, mm_t, mm_r = oc.partition_pass(START, FINISH, LINKS, CAP)
    assert mm_t[0].tolist() == [0, 40, 60, 70, 80]
    # alone 100; with flow 1 50/50; flow 2 makes port 5 (60) the bottleneck of flows 1 and 2
    assert mm_r[0].tolist() == pytest.approx([100, 50, 70, 50, 100])
    assert mm_r[1].tolist() == pytest.approx([50, 30, 50])
    assert mm_r[2].tolist() == pytest.approx([30])


def test_bytes_between_follow_the_samples():
    # one flow of 100 bytes over [0, 100] that sent 80 bytes by t=20 (then 20 bytes in 80 ps)
    c = oc.Curves(
        np.array([0]), np.array([100]), np.array([100.0]),
        np.array([20]), np.array([0], np.int32), np.array([80]),
    )  # fmt: skip
    assert float(c.between(0, 0, 20)) == pytest.approx(80)
    assert float(c.between(0, 20, 100)) == pytest.approx(20)
    assert float(c.between(0, 50, 40)) == 0.0


def test_local_contexts_recur_across_ports_and_time():
    # two lone flows on the same two ports at different times: 8 contexts (2 ports x start and
    # end x 2 flows); the first start and the first end are new, the other 6 recur
    start, finish = np.array([0, 20]), np.array([10, 30])
    links = [(0, 1), (0, 1)]
    cap = np.full(2, 100.0)
    none = np.zeros(0, np.int64)
    memo = oc.MemoContexts(cap, links, start, none, none, none, 2)
    oc.partition_pass(start, finish, links, cap, on_change=memo)
    assert (memo.n, memo.hits) == (8, 6)
