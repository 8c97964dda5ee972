import numpy as np

from tests.netsim.conftest import US, star
from wormsim.collective.dag import KIND_COMPUTE, KIND_DELAY, KIND_FLOW, DagArrays
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet


def _dag(kind, src, dst, rank, size, dur, deps):
    n = len(kind)
    parents = [(p, c) for c, ds in enumerate(deps) for p in ds]
    parents.sort()
    offs = np.zeros(n + 1, np.int64)
    for p, _ in parents:
        offs[p + 1] += 1
    return DagArrays(
        kind=np.array(kind, np.int8),
        src=np.array(src, np.int32),
        dst=np.array(dst, np.int32),
        rank=np.array(rank, np.int32),
        size_bytes=np.array(size, np.int64),
        duration_ps=np.array(dur, np.int64),
        dep_count=np.array([len(d) for d in deps], np.int32),
        child_offsets=np.cumsum(offs),
        child_index=np.array([c for _, c in parents], np.int64),
    )


def test_delay_compute_flow_chain_and_stream():
    F, C, D = KIND_FLOW, KIND_COMPUTE, KIND_DELAY
    dag = _dag(
        kind=[D, C, C, F, D, D],
        src=[-1, -1, -1, 0, -1, -1],
        dst=[-1, -1, -1, 1, -1, -1],
        rank=[-1, 0, 0, -1, -1, -1],
        size=[0, 0, 0, 100_000, 0, 0],
        dur=[5 * US, 3 * US, 2 * US, 0, 0, 0],
        deps=[[], [0], [0], [1, 2], [], [3]],
    )
    res = run_packet(dag, star(3), NetworkSpec(cc="dcqcn"))
    s, f = res.node_start_ps, res.node_finish_ps
    assert f[0] == 5 * US
    # two computes on rank 0 run one after the other (FIFO in release order)
    assert s[1] == 5 * US and f[1] == 8 * US and s[2] == 8 * US and f[2] == 10 * US
    assert s[3] == 10 * US and f[3] > s[3]
    assert s[4] == 0 and f[4] == s[4]  # a zero delay: instant
    assert s[5] == f[3] and f[5] == s[5]  # released by the flow, instant
    assert (f >= 0).all()


def test_nvlink_fluid_max_min():
    # 4 GPUs in one server (hosts 0-3) + a switch; 2 flows from GPU 0, 1 flow 2->3
    topo0 = star(4)
    topo = Topology(
        **{
            **topo0.__dict__,
            "host_server": np.array([0, 0, 0, 0, -1], np.int32),
            "nvlink_rate_bps": 800_000_000_000,
        }
    )
    F = KIND_FLOW
    size = 1_000_000
    dag = _dag(
        kind=[F, F, F],
        src=[0, 0, 2],
        dst=[1, 2, 3],
        rank=[-1] * 3,
        size=[size] * 3,
        dur=[0] * 3,
        deps=[[], [], []],
    )
    res = run_packet(dag, topo, NetworkSpec(cc="hpcc"))
    f = res.node_finish_ps
    t_half = size * 8e12 / 400e9
    t_full = size * 8e12 / 800e9
    assert abs(f[0] - t_half) <= 2 and abs(f[1] - t_half) <= 2
    assert abs(f[2] - t_full) <= 2
    assert res.counters["data_packets_sent"] == 0


def test_nvlink_fluid_matches_the_flow_engine():
    # one max-min routine for both: random intra-server flows, some released later by delays,
    # finish at the same picosecond (within rounding) in packet mode and in flow mode
    from wormsim.netsim.flow.run import run_flow

    rng = np.random.default_rng(3)
    n_gpu, n_flows = 8, 24
    topo = Topology.from_links(
        n_gpu + 1, [n_gpu], [(i, n_gpu, 100e9, US) for i in range(n_gpu)],
        host_server=np.array([0] * n_gpu + [-1], np.int32), nvlink_rate_bps=2_400_000_000_000,
    )  # fmt: skip
    src = rng.integers(0, n_gpu, n_flows)
    dst = (src + rng.integers(1, n_gpu, n_flows)) % n_gpu
    kind = [KIND_DELAY] * n_flows + [KIND_FLOW] * n_flows
    dag = _dag(
        kind=kind,
        src=[-1] * n_flows + src.tolist(),
        dst=[-1] * n_flows + dst.tolist(),
        rank=[-1] * (2 * n_flows),
        size=[0] * n_flows + rng.integers(100_000, 5_000_000, n_flows).tolist(),
        dur=rng.integers(0, 20 * US, n_flows).tolist() + [0] * n_flows,
        deps=[[] for _ in range(n_flows)] + [[i] for i in range(n_flows)],
    )
    packet = run_packet(dag, topo, NetworkSpec(cc="hpcc")).node_finish_ps[n_flows:]
    flow = run_flow(dag, topo, NetworkSpec(cc="hpcc")).node_finish_ps[n_flows:]
    assert (packet > 0).all() and np.abs(packet - flow).max() <= 2 * n_flows
