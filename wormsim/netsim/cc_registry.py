"""The congestion controls wormsim simulates, one row each: the single source of their names,
codes, header sizes, defaults, settings and kernel state.

Every list of congestion controls in the package is derived from :data:`REGISTRY`: the
``network.cc`` choices of the experiment file and the CLI (:data:`CC_NAMES`), HPCC ns-3's
``CC_MODE`` numbers in ``config.txt`` (:data:`BY_CODE`), the per-packet INT header bytes, the
per-cc defaults of :class:`~wormsim.netsim.network_config.NetworkSpec`, each congestion
control's own settings (:class:`CcSetting`: the ``NetworkSpec`` field and the kernel scalar it
becomes), its rows of the packet kernel's state table, and the table in
``docs/engine.md`` (:func:`markdown`; ``python -m wormsim.netsim.cc_registry --update
docs/engine.md`` rewrites it). The packet kernel selects a congestion control by comparing
``P.cc`` with the named codes below (``CC_HPCC`` ...); numba reads them as compile-time
constants. No other module writes a code number or a list of the names (a test checks it).

The defaults are the upstream HPCC ns-3 ``run.py`` values for ``--bw 100`` (HPCC with
``--hpai 50``), the settings the ns-3 reference data in ``tests/data/ns3/`` was made with; ECN
thresholds are given per line rate (bit/s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from wormsim.netsim.common.field_spec import DocBlock, MarkdownTable
from wormsim.units import NS_PER_US_F, PS_PER_US_F

__all__ = [
    "CongestionControl",
    "CcSetting",
    "StateRow",
    "HOOKS",
    "MIN_RATE_BPS",
    "MAX_RATE_BPS",
    "CC_DCQCN",
    "CC_HPCC",
    "CC_TIMELY",
    "CC_DCTCP",
    "CC_SWIFT",
    "REGISTRY",
    "CC_NAMES",
    "BY_NAME",
    "BY_CODE",
    "NS3_MODES",
    "SETTINGS",
    "STATE",
    "markdown",
    "TABLE",
    "DOC",
]

# The kernel's codes (``P.cc``): HPCC ns-3's ``CC_MODE`` numbers, and from 100 wormsim's own
# for the congestion controls HPCC ns-3 does not have.
CC_DCQCN = 1
CC_HPCC = 3
CC_TIMELY = 7
CC_DCTCP = 8
CC_SWIFT = 101

_G100, _G400 = 100_000_000_000, 400_000_000_000

#: Accepted link and CC rates: 1 Kbit/s .. 1 Pbit/s (``network_config`` bounds rates by them).
MIN_RATE_BPS, MAX_RATE_BPS = 1e3, 1e15

HOOKS: tuple[str, ...] = (
    "on_start",
    "on_ack",
    "on_finish",
    "on_timer",
    "shift",
    "resume",
    "rate",
    "adopt",
    "copy",
    "save",
    "restore",
)
"""The hooks every congestion control's kernel module (``packet/cc_<name>.py``) exports, as
``<name>_<hook>`` (a control with nothing to do in one defines it as a no-op);
``packet/cc_link.py`` compiles the run's control's and ``packet/cc.py`` calls them through their
addresses (``P.cc_fn_<hook>``; their numba types are ``packet.cc.HOOK_TYPES``). Their
signatures:

- ``on_start(S, P, q, rate)``: QP ``q`` starts sending at ``rate`` (bit/s, its line rate).
- ``on_ack(S, P, q, p, now)``: ACK, NACK or CNP-carrying ACK ``p`` of unfinished QP ``q``
  reached its sender (the control counts the CNPs it reacts to in ``C_CNP``).
- ``on_finish(S, P, q)``: QP ``q`` finished (its timers stop).
- ``on_timer(S, P, sub, arg, now)``: one of its timers is due: the event ``EV_CC`` with its own
  sub-code ``sub`` and ``arg`` (what it packed when it scheduled the timer).
- ``shift(S, P, q, dns)``: a skip moved QP ``q`` ``dns`` ns through time.
- ``resume(S, P, q)``: a flow skip of ``q`` ended: the sender starts its signal history again.
- ``rate(S, P, q)``: the rate (bit/s) it means to send at (Wormhole's steadiness samples it).
- ``adopt(S, P, q, rate, now)``: put the sender at ``rate`` (already clamped), changing the
  sending rate (``nic.change_rate``) where its rule says.
- ``copy(S, P, src, q, now)``: give ``q`` the state of ``src`` that follows the path's
  congestion (the sending rate is already copied).
- ``save(S, P, q, out)`` / ``restore(S, P, q, rate, state, now)``: the values a memo entry keeps
  besides the sending rate, and putting them back at the (clamped) sending rate ``rate``.
"""

StateRow = tuple[str, type, str, str, Any, str]
"""A row of the packet kernel's state table (``packet/fields.py``): name, dtype, dimensions
(space-separated), unit, initial value, meaning."""


@dataclass(frozen=True)
class CcSetting:
    """A setting only one congestion control reads: a field of
    :class:`~wormsim.netsim.network_config.NetworkSpec` (``network.<field>`` in an experiment
    file) and the kernel parameter (``P.<kernel>``) it becomes.

    Attributes
    ----------
    field : the ``NetworkSpec`` field, its unit in its name (``_us``, ``_ns``, ``_bps``).
    kernel : the ``state.Params`` field, in kernel units (``unit``).
    unit : the kernel value's unit (a key of ``packet.fields.UNITS``).
    default : the field's default; its type (bool, int, float) is the field's type.
    meaning : one line, for the field's description and the docs.
    gt, ge, lt, le : bounds of the field's value (``None`` = no bound).
    scale : kernel value = field value × ``scale`` (e.g. 1e6 for µs to ps).
    kernel_type : the kernel value's type (``None``: the default's).
    others : the field's default under the other congestion controls, when it differs from
        ``default`` (its own); the field is then ``None`` until the spec is validated, and
        takes ``default`` or ``others`` by ``network.cc`` (``None``: one default for all).
    """

    field: str
    kernel: str
    unit: str
    default: bool | int | float
    meaning: str
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    scale: float = 1.0
    kernel_type: type | None = None
    others: bool | int | float | None = None

    def kernel_value(self, value: bool | int | float) -> bool | int | float:
        """The kernel parameter for the field's ``value``."""
        kind = self.kernel_type or type(self.default)
        return kind(value) if kind is bool else kind(value * self.scale)


@dataclass(frozen=True)
class CongestionControl:
    """One congestion control.

    Attributes
    ----------
    name : the ``network.cc`` value (experiment files, CLI, run summaries).
    code : the packet kernel's ``P.cc``: HPCC ns-3's ``CC_MODE`` number for a congestion
        control ns-3 has, else a number ns-3 does not use.
    ns3_name : the name HPCC ns-3's ``run.py --cc`` and the ns-3 reference folders use
        (``None``: HPCC ns-3 does not have it, and no ``config.txt`` selects it).
    title : how it is named in prose.
    reference : the paper it implements.
    signal : what the sender reacts to.
    int_header_bytes : bytes of in-band telemetry or timestamp the sender's data packets and
        their ACKs carry (ns-3's ``IntHeader`` size for this mode).
    kernel : the packet kernel's module of its reactions.
    defaults : :class:`~wormsim.netsim.network_config.NetworkSpec` fields shared by several
        congestion controls that default to a value of this one (a field left unset takes it).
    settings : the settings only this congestion control reads.
    state : its rows of the kernel's state table (only ``packet/cc.py`` and its own module
        read or write them).
    wormhole_ports : Wormhole's partition rule under ``partition_ports: auto``: ``"data"`` for
        senders that react to marks or telemetry (the ACKs' load enters as a fluid phantom),
        ``"data_and_ack"`` for senders clocked or timed by their ACKs' arrival, which a fluid
        phantom does not keep.
    int_stamp : switches stamp in-band telemetry (queue, tx bytes, time) on its data packets
        (``P.int_stamp``).
    delay_based : the sender reacts to queueing delay, which a flow skip (the skipped flow's
        load carried as a fluid that queues nothing) does not produce: ``skip_unit: flow`` is
        refused.
    timer_settings : ``NetworkSpec`` fields (µs) of its rate timers: Wormhole's steadiness
        window spans two of the longest, or a plateau between two timer steps looks steady.
    memo_replay : memo hits replay recorded transients (``False``: only when
        ``sim.wormhole.memo_replay_dcqcn`` says so).
    ordered : pairs of its settings ``(low, high)`` whose values must satisfy low < high.
    """

    name: str
    code: int
    ns3_name: str | None
    title: str
    reference: str
    signal: str
    int_header_bytes: int
    kernel: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    settings: tuple[CcSetting, ...] = ()
    state: tuple[StateRow, ...] = ()
    wormhole_ports: str = "data"
    int_stamp: bool = False
    delay_based: bool = False
    timer_settings: tuple[str, ...] = ()
    memo_replay: bool = True
    ordered: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))


def _ecn(kmin_kb: int, kmax_kb: int, pmax: float) -> dict[str, dict[int, float]]:
    """RED-like ECN thresholds at 100 Gbit/s, scaled by four at 400 Gbit/s."""
    return {
        "kmin_kb": {_G100: kmin_kb, _G400: 4 * kmin_kb},
        "kmax_kb": {_G100: kmax_kb, _G400: 4 * kmax_kb},
        "pmax": {_G100: pmax, _G400: pmax},
    }


_COMMON: dict[str, Any] = dict(min_rate_bps=1000e6)
_US_MAX = 1e6  # timer settings: at most 1 s
_INT_MAX = 2**31 - 1
i8, i64, f8 = np.int8, np.int64, np.float64

# fmt: off
REGISTRY: tuple[CongestionControl, ...] = (
    CongestionControl(
        "dcqcn", CC_DCQCN, "dcqcn", "DCQCN", "Zhu et al., SIGCOMM 2015",
        "ECN marks, returned as CNPs; rate timers", 0, "cc_dcqcn",
        dict(rate_ai_bps=20e6, rate_hai_bps=200e6, has_win=False, var_win=False,
             ack_high_prio=True, ewma_gain=0.00390625,
             **_COMMON, **_ecn(400, 1600, 0.2)),
        settings=(
            CcSetting("rp_timer_us", "rp_ps", "ps", 300.0,
                      "DCQCN rate-increase timer (RP_TIMER)",
                      gt=0, le=_US_MAX, scale=PS_PER_US_F, kernel_type=int),
            CcSetting("alpha_resume_interval_us", "alpha_ps", "ps", 1.0,
                      "DCQCN alpha update interval (ALPHA_RESUME_INTERVAL)",
                      gt=0, le=_US_MAX, scale=PS_PER_US_F, kernel_type=int),
            CcSetting("rate_decrease_interval_us", "dec_ps", "ps", 4.0,
                      "DCQCN minimum interval between rate decreases "
                      "(RATE_DECREASE_INTERVAL)", gt=0, le=_US_MAX, scale=PS_PER_US_F,
                      kernel_type=int),
            CcSetting("fast_recovery_times", "frt", "count", 1,
                      "DCQCN fast-recovery stages (FAST_RECOVERY_TIMES)", ge=0, le=_INT_MAX),
            CcSetting("clamp_target_rate", "clamp", "flag", False,
                      "DCQCN clamps the target rate on every CNP (CLAMP_TARGET_RATE)"),
            CcSetting("rate_on_first_cnp", "first_cnp_frac", "ratio", 1.0,
                      "Fraction of the line rate DCQCN keeps on the first CNP", gt=0, le=1),
        ),
        state=(
            ("m_alpha", f8, "qp", "ratio", 1.0, "DCQCN alpha"),
            ("m_alpha_cnp", i8, "qp", "flag", 0, "DCQCN: a CNP since the last alpha tick"),
            ("m_dec_cnp", i8, "qp", "flag", 0, "DCQCN: a CNP since the last decrease tick"),
            ("m_first", i8, "qp", "flag", 1, "DCQCN: no CNP seen yet"),
            ("m_stage", i64, "qp", "count", 0, "DCQCN rate-increase stage"),
            ("m_target_bps", f8, "qp", "bit/s", 0, "DCQCN target rate"),
            ("g_alpha", i64, "qp", "count", 0, "DCQCN alpha timer generation"),
            ("g_dec", i64, "qp", "count", 0, "DCQCN decrease timer generation"),
            ("g_rp", i64, "qp", "count", 0, "DCQCN rate-increase timer generation"),
        ),
        timer_settings=("rp_timer_us", "alpha_resume_interval_us", "rate_decrease_interval_us"),
        memo_replay=False,
    ),
    CongestionControl(
        "hpcc", CC_HPCC, "hp", "HPCC", "Li et al., SIGCOMM 2019",
        "per-hop INT: queue, tx bytes, time, line rate", 42, "cc_hpcc",
        dict(rate_ai_bps=50e6, rate_hai_bps=50e6, has_win=True, var_win=True,
             ack_high_prio=False, ewma_gain=0.00390625, **_COMMON, **_ecn(400, 1600, 0.2)),
        settings=(
            CcSetting("fast_react", "fast_react", "flag", True,
                      "HPCC reacts on every ACK, not once per RTT (FAST_REACT)", others=False),
            CcSetting("int_multi", "int_multi", "count", 4,
                      "HPCC INT counter unit multiplier (INT_MULTI)", ge=1, le=1 << 16,
                      others=1),
            CcSetting("u_target", "u_target", "ratio", 0.95,
                      "HPCC target utilisation (U_TARGET)", gt=0, le=1),
            CcSetting("mi_thresh", "mi_thresh", "count", 0,
                      "HPCC additive-increase stages (MI_THRESH)", ge=0, le=_INT_MAX),
        ),
        state=(
            ("h_last_seq", i64, "qp", "bytes", 0, "HPCC: `last_update_seq`"),
            ("h_cur_bps", f8, "qp", "bit/s", 0, "HPCC reference rate"),
            ("h_inc", i64, "qp", "count", 0, "HPCC additive-increase stage"),
            ("h_u", f8, "qp", "ratio", 1.0, "HPCC smoothed utilisation U"),
            ("h_t_ns", i64, "qp hop", "ns mod 2²⁴", 0, "HPCC: last INT time per hop"),
            ("h_b", i64, "qp hop", "128·int_multi B", 0, "HPCC: last INT tx bytes per hop"),
            ("h_q", i64, "qp hop", "80·int_multi B", 0, "HPCC: last INT queue length per hop"),
        ),
        int_stamp=True,
    ),
    CongestionControl(
        "timely", CC_TIMELY, "timely", "TIMELY", "Mittal et al., SIGCOMM 2015",
        "RTT and its gradient", 8, "cc_timely",
        dict(rate_ai_bps=100e6, rate_hai_bps=500e6, has_win=False, var_win=False,
             ack_high_prio=True, ewma_gain=0.00390625,
             **_COMMON, **_ecn(400, 1600, 0.2)),
        settings=(
            CcSetting("timely_alpha", "t_alpha", "ratio", 0.875,
                      "TIMELY RTT EWMA weight", gt=0, le=1),
            CcSetting("timely_beta", "t_beta", "ratio", 0.8,
                      "TIMELY multiplicative decrease", gt=0, le=1),
            CcSetting("timely_t_low_ns", "t_low_ns", "ns", 50_000,
                      "TIMELY: below this RTT, increase", gt=0, le=1e9),
            CcSetting("timely_t_high_ns", "t_high_ns", "ns", 500_000,
                      "TIMELY: above this RTT, decrease", gt=0, le=1e9),
            CcSetting("timely_min_rtt_ns", "t_minrtt_ns", "ns", 20_000,
                      "TIMELY: the RTT the gradient is normalised by", gt=0, le=1e9),
        ),
        state=(
            ("t_last_seq", i64, "qp", "bytes", 0, "TIMELY: `last_update_seq`"),
            ("t_inc", i64, "qp", "count", 0, "TIMELY: increases in a row"),
            ("t_last_rtt_ns", i64, "qp", "ns", 0, "TIMELY: last RTT"),
            ("t_rtt_diff_ns", f8, "qp", "ns", 0, "TIMELY: smoothed RTT difference"),
            ("t_cur_bps", f8, "qp", "bit/s", 0, "TIMELY rate"),
        ),
        wormhole_ports="data_and_ack",
        delay_based=True,
        ordered=(("timely_t_low_ns", "timely_t_high_ns"),),
    ),
    CongestionControl(
        "dctcp", CC_DCTCP, "dctcp", "DCTCP", "Alizadeh et al., SIGCOMM 2010",
        "fraction of ECN-marked packets per window", 0, "cc_dctcp",
        dict(rate_ai_bps=50e6, rate_hai_bps=50e6, has_win=True, var_win=True,
             ack_high_prio=False, ewma_gain=0.0625, **_COMMON, **_ecn(300, 300, 1.0)),
        settings=(
            CcSetting("dctcp_rate_ai_bps", "dctcp_rai_bps", "bit/s", 615e6,
                      "DCTCP additive increase (DCTCP_RATE_AI)",
                      ge=MIN_RATE_BPS, le=MAX_RATE_BPS, others=1000e6),
        ),
        state=(
            ("d_last_seq", i64, "qp", "bytes", 0, "DCTCP: end of the current window of data"),
            ("d_ca", i64, "qp", "flag", 0, "DCTCP: in a congestion-avoidance episode"),
            ("d_high", i64, "qp", "bytes", 0, "DCTCP: the episode ends past this byte"),
            ("d_alpha", f8, "qp", "ratio", 1.0, "DCTCP alpha"),
            ("d_ecn", i64, "qp", "count", 0, "DCTCP: CNP-flagged ACKs in the window"),
            ("d_batch", i64, "qp", "count", 0, "DCTCP: packets in the window"),
        ),
        wormhole_ports="data_and_ack",
    ),
    CongestionControl(
        # htsim's Swift (Broadcom/csg-htsim sim/swift.cpp) is the reference implementation the
        # defaults come from: tests/data/htsim/README.md
        "swift", CC_SWIFT, None, "Swift", "Kumar et al., SIGCOMM 2020",
        "delay (send-time stamps echoed by ACKs) against a target scaled by hops and window", 0,
        "cc_swift",
        dict(rate_ai_bps=50e6, rate_hai_bps=50e6, has_win=True, var_win=False,
             ack_high_prio=False, ewma_gain=0.00390625,
             **_COMMON, **_ecn(400, 1600, 0.2)),
        settings=(
            CcSetting("swift_base_target_us", "s_base_ns", "ns", 20.0,
                      "Swift base target delay", gt=0, le=_US_MAX, scale=NS_PER_US_F),
            CcSetting("swift_hop_scale_us", "s_hop_ns", "ns", 20.0 / 6.55,
                      "Swift target added per switch of the path (0: no hop scaling)",
                      ge=0, le=_US_MAX, scale=NS_PER_US_F),
            CcSetting("swift_fs_range_us", "s_fs_range_ns", "ns", 100.0,
                      "Swift flow scaling: the target added at the smallest window (0: off)",
                      ge=0, le=_US_MAX, scale=NS_PER_US_F),
            CcSetting("swift_fs_min_cwnd", "s_fs_min", "count", 0.1,
                      "Swift flow scaling: the window (packets) that gets the whole range",
                      gt=0, le=1e6),
            CcSetting("swift_fs_max_cwnd", "s_fs_max", "count", 100.0,
                      "Swift flow scaling: the window (packets) from which it adds nothing",
                      gt=0, le=1e6),
            CcSetting("swift_ai", "s_ai", "count", 1.0,
                      "Swift additive increase, packets per round trip", gt=0, le=1e6),
            CcSetting("swift_beta", "s_beta", "ratio", 0.8,
                      "Swift multiplicative decrease per unit of relative excess delay",
                      gt=0, le=1),
            CcSetting("swift_max_mdf", "s_max_mdf", "ratio", 0.5,
                      "Swift's largest decrease per round trip (also its cut on a loss)",
                      gt=0, lt=1),
            CcSetting("swift_init_cwnd", "s_init_cwnd", "count", 15.0,
                      "Swift initial window, packets", gt=0, le=1e6),
            CcSetting("swift_min_cwnd", "s_min_cwnd", "count", 0.01,
                      "Swift least window, packets (below 1 it paces)", gt=0, le=1e6),
            CcSetting("swift_max_cwnd", "s_max_cwnd", "count", 1000.0,
                      "Swift largest window, packets", gt=0, le=1e6),
        ),
        state=(
            ("s_cwnd", f8, "qp", "count", 0.0, "Swift: congestion window, packets"),
            ("s_tgt_ns", f8, "qp", "ns", 0.0,
             "Swift: base target of its path (base + hops × hop scaling)"),
            ("s_srtt_ns", f8, "qp", "ns", 0.0, "Swift: smoothed RTT (0 = no sample yet)"),
            ("s_t_dec_ps", i64, "qp", "ps", -1, "Swift: its last decrease (-1 = none)"),
            ("s_una", i64, "qp", "bytes", 0, "Swift: bytes acknowledged at its last ACK"),
        ),
        wormhole_ports="data_and_ack",
        delay_based=True,
        ordered=(("swift_fs_min_cwnd", "swift_fs_max_cwnd"), ("swift_min_cwnd", "swift_max_cwnd")),
    ),
)
# fmt: on
"""Every congestion control, in the order of :data:`CC_NAMES`."""

CC_NAMES: tuple[str, ...] = tuple(c.name for c in REGISTRY)
"""The ``network.cc`` values."""

BY_NAME: Mapping[str, CongestionControl] = MappingProxyType({c.name: c for c in REGISTRY})
BY_CODE: Mapping[int, CongestionControl] = MappingProxyType({c.code: c for c in REGISTRY})
NS3_MODES: Mapping[int, CongestionControl] = MappingProxyType(
    {c.code: c for c in REGISTRY if c.ns3_name is not None}
)
"""The congestion controls an HPCC ns-3 ``config.txt`` selects, by its ``CC_MODE``."""
SETTINGS: tuple[CcSetting, ...] = tuple(s for c in REGISTRY for s in c.settings)
"""Every congestion control's own settings, in registry order."""
STATE: tuple[StateRow, ...] = tuple(r for c in REGISTRY for r in c.state)
"""Every congestion control's state rows, in registry order."""


def markdown() -> str:
    """The registry as the markdown table of ``docs/engine.md``."""
    rows = [
        "| `network.cc` | `P.cc` (ns-3 `CC_MODE`) | ns-3 `run.py --cc` | reacts to | INT bytes "
        "| kernel | implements |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in REGISTRY:
        rows.append(
            f"| `{c.name}` | {c.code} | {f'`{c.ns3_name}`' if c.ns3_name else '—'} "
            f"| {c.signal} | {c.int_header_bytes} "
            f"| `packet/{c.kernel}.py` | {c.title} ({c.reference}) |"
        )
    return "\n".join(rows) + "\n"


TABLE = MarkdownTable(markdown)
DOC = DocBlock("<!-- cc-registry:begin", "<!-- cc-registry:end -->")
"""The registry's table and its markers in ``docs/engine.md``."""


if __name__ == "__main__":  # print the table, or --update FILE
    DOC.cli(TABLE, None, "Print the congestion-control table of docs/engine.md.")
