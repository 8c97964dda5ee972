"""SimAI's shipped SimAI.conf as a network config (wormsim.netsim.formats.simai_config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.formats.hpcc_config import read_hpcc_config
from wormsim.netsim.formats.simai_config import read_simai_config

CONF = Path(__file__).resolve().parents[1] / "data" / "simai" / "SimAI.conf"


def _values(path: Path) -> dict[str, list[str]]:
    out = {}
    for line in path.read_text().splitlines():
        if line.split():
            out[line.split()[0]] = line.split()[1:]
    return out


def test_simais_shipped_conf_loads_with_its_values():
    raw = _values(CONF)
    conf = read_simai_config(CONF)
    net = conf.network
    assert net.cc == "dcqcn" and raw["CC_MODE"] == ["1"]
    assert net.payload_size_bytes == int(raw["PACKET_PAYLOAD_SIZE"][0])
    assert net.buffer_size_mb == float(raw["BUFFER_SIZE"][0])
    assert net.rp_timer_us == float(raw["RP_TIMER"][0])
    assert net.min_rate_bps == 100e6 and raw["MIN_RATE"] == ["100Mb/s"]
    kmax = raw["KMAX_MAP"]
    assert net.kmax_kb == {int(kmax[1 + 2 * i]): float(kmax[2 + 2 * i]) for i in range(6)}
    # SimAI reads GLOBAL_T and then sets it to 1 (common.h); the file says 0
    assert raw["GLOBAL_T"] == ["0"] and net.global_t is True
    # RATE_MON_FILE every QP_MON_INTERVAL µs, QLEN_MON_FILE every QLEN_MON_INTERVAL µs: the
    # shorter period samples both
    want = min(int(raw["QP_MON_INTERVAL"][0]), int(raw["QLEN_MON_INTERVAL"][0])) * 1000
    assert conf.monitor_period_ns == want == 100_000


def test_the_same_file_is_refused_as_an_hpcc_scenario_config():
    with pytest.raises(NetsimInputError, match="SIMULATOR_STOP_TIME|GLOBAL_T|unknown key"):
        read_hpcc_config(CONF)


def test_no_monitor_file_no_samples(tmp_path: Path):
    p = tmp_path / "SimAI.conf"
    p.write_text("CC_MODE 3\nQP_MON_INTERVAL 5\n")
    assert read_simai_config(p).monitor_period_ns == 0
    p.write_text("CC_MODE 3\nRATE_MON_FILE /x\nQP_MON_INTERVAL 5\n")
    assert read_simai_config(p).monitor_period_ns == 5000


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("PAUSE_TIME 5", r"SimAI.conf:2 \(PAUSE_TIME\): PAUSE_TIME is not supported: timed PFC"),
        ("NVLS_ENABLE 1", r":2 \(NVLS_ENABLE\): unknown key NVLS_ENABLE; SimAI.conf keys"),
        ("QP_MON_INTERVAL -1", r":2 \(QP_MON_INTERVAL\): expected a whole number >= 0"),
        ("GLOBAL_T 2", r":2 \(GLOBAL_T\): cannot use the value '2'"),
        ("SIMULATOR_STOP_TIME 0", r":2 \(SIMULATOR_STOP_TIME\): the stop time must be > 0"),
    ],
)
def test_bad_keys_name_file_line_and_key(tmp_path: Path, line: str, match: str):
    p = tmp_path / "SimAI.conf"
    p.write_text(f"CC_MODE 1\n{line}\n")
    with pytest.raises(NetsimInputError, match=match):
        read_simai_config(p)


#: Every key SimAI's ns-3 front end reads (``ReadConf`` in
#: ``astra-sim-alibabacloud/astra-sim/network_frontend/ns3/common.h``, SimAI cef83f9d), in its
#: order, with a value of the kind it reads.
SIMAI_KEYS = {
    "ENABLE_QCN": "1", "USE_DYNAMIC_PFC_THRESHOLD": "1", "CLAMP_TARGET_RATE": "0",
    "PAUSE_TIME": "5", "DATA_RATE": "100Gbps", "LINK_DELAY": "0.001ms",
    "PACKET_PAYLOAD_SIZE": "1000", "L2_CHUNK_SIZE": "4000", "L2_ACK_INTERVAL": "1",
    "L2_BACK_TO_ZERO": "0", "FLOW_FILE": "f", "TRACE_FILE": "t", "TRACE_OUTPUT_FILE": "o",
    "SIMULATOR_STOP_TIME": "3.01", "ALPHA_RESUME_INTERVAL": "1", "RP_TIMER": "900",
    "EWMA_GAIN": "0.00390625", "FAST_RECOVERY_TIMES": "1", "RATE_AI": "50Mb/s",
    "RATE_HAI": "100Mb/s", "ERROR_RATE_PER_LINK": "0", "CC_MODE": "1",
    "RATE_DECREASE_INTERVAL": "4", "MIN_RATE": "100Mb/s", "FCT_OUTPUT_FILE": "f", "HAS_WIN": "1",
    "GLOBAL_T": "0", "MI_THRESH": "0", "VAR_WIN": "1", "FAST_REACT": "1", "U_TARGET": "0.95",
    "INT_MULTI": "1", "RATE_BOUND": "1", "ACK_HIGH_PRIO": "0", "DCTCP_RATE_AI": "1000Mb/s",
    "NIC_TOTAL_PAUSE_TIME": "0", "PFC_OUTPUT_FILE": "p", "LINK_DOWN": "0 0 0",
    "ENABLE_TRACE": "1", "KMAX_MAP": "1 100000000000 1600", "KMIN_MAP": "1 100000000000 400",
    "PMAX_MAP": "1 100000000000 0.2", "BUFFER_SIZE": "32", "QLEN_MON_FILE": "q",
    "BW_MON_FILE": "b", "RATE_MON_FILE": "r", "CNP_MON_FILE": "c", "MON_START": "0",
    "MON_END": "20000", "QP_MON_INTERVAL": "100", "BW_MON_INTERVAL": "10000",
    "QLEN_MON_INTERVAL": "10000", "MULTI_RATE": "0", "SAMPLE_FEEDBACK": "0",
    "PINT_LOG_BASE": "1.05", "PINT_PROB": "1.0",
}  # fmt: skip


@pytest.mark.parametrize("key", list(SIMAI_KEYS))
def test_every_key_simai_reads_is_implemented_accepted_or_refused_with_a_reason(
    tmp_path: Path, key: str
):
    p = tmp_path / "SimAI.conf"
    p.write_text(("" if key == "CC_MODE" else "CC_MODE 1\n") + f"{key} {SIMAI_KEYS[key]}\n")
    if key in ("PAUSE_TIME", "NIC_TOTAL_PAUSE_TIME"):
        with pytest.raises(NetsimInputError, match=rf"\({key}\): {key} is not supported: timed"):
            read_simai_config(p)
    else:
        read_simai_config(p)
