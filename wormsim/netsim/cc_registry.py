"""The congestion controls wormsim simulates, one row each: the single source of their names,
codes, header sizes and defaults.

Every list of congestion controls in the package is derived from :data:`REGISTRY`: the
``network.cc`` choices of the experiment file and the CLI (:data:`CC_NAMES`), HPCC ns-3's
``CC_MODE`` numbers in ``config.txt`` (:data:`BY_CODE`), the per-packet INT header bytes, the
per-cc defaults of :class:`~wormsim.netsim.network_config.NetworkSpec`, and the table in
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

from wormsim.netsim.field_spec import DocBlock, MarkdownTable

__all__ = [
    "CongestionControl",
    "CC_DCQCN",
    "CC_HPCC",
    "CC_TIMELY",
    "CC_DCTCP",
    "REGISTRY",
    "CC_NAMES",
    "BY_NAME",
    "BY_CODE",
    "markdown",
    "TABLE",
    "DOC",
]

# The kernel's codes (``P.cc``): HPCC ns-3's ``CC_MODE`` numbers.
CC_DCQCN = 1
CC_HPCC = 3
CC_TIMELY = 7
CC_DCTCP = 8

_G100, _G400 = 100_000_000_000, 400_000_000_000


@dataclass(frozen=True)
class CongestionControl:
    """One congestion control.

    Attributes
    ----------
    name : the ``network.cc`` value (experiment files, CLI, run summaries).
    code : HPCC ns-3's ``CC_MODE`` number, also the packet kernel's ``P.cc``.
    ns3_name : the name HPCC ns-3's ``run.py --cc`` and the ns-3 reference folders use.
    title : how it is named in prose.
    reference : the paper it implements.
    signal : what the sender reacts to.
    int_header_bytes : bytes of in-band telemetry or timestamp the sender's data packets and
        their ACKs carry (ns-3's ``IntHeader`` size for this mode).
    kernel : the packet kernel's module of its reactions.
    defaults : :class:`~wormsim.netsim.network_config.NetworkSpec` fields that default to a
        value of this congestion control (a field left unset takes it).
    """

    name: str
    code: int
    ns3_name: str
    title: str
    reference: str
    signal: str
    int_header_bytes: int
    kernel: str
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))


def _ecn(kmin_kb: int, kmax_kb: int, pmax: float) -> dict[str, dict[int, float]]:
    """RED-like ECN thresholds at 100 Gbit/s, scaled by four at 400 Gbit/s."""
    return {
        "kmin_kb": {_G100: kmin_kb, _G400: 4 * kmin_kb},
        "kmax_kb": {_G100: kmax_kb, _G400: 4 * kmax_kb},
        "pmax": {_G100: pmax, _G400: pmax},
    }


_COMMON: dict[str, Any] = dict(min_rate_bps=1000e6, rp_timer_us=300.0)

REGISTRY: tuple[CongestionControl, ...] = (
    CongestionControl(
        "dcqcn", CC_DCQCN, "dcqcn", "DCQCN", "Zhu et al., SIGCOMM 2015",
        "ECN marks, returned as CNPs; rate timers", 0, "cc_dcqcn",
        dict(rate_ai_bps=20e6, rate_hai_bps=200e6, has_win=False, var_win=False,
             fast_react=False, int_multi=1, ack_high_prio=True, ewma_gain=0.00390625,
             **_COMMON, **_ecn(400, 1600, 0.2)),
    ),
    CongestionControl(
        "hpcc", CC_HPCC, "hp", "HPCC", "Li et al., SIGCOMM 2019",
        "per-hop INT: queue, tx bytes, time, line rate", 42, "cc_hpcc",
        dict(rate_ai_bps=50e6, rate_hai_bps=50e6, has_win=True, var_win=True,
             fast_react=True, int_multi=4, ack_high_prio=False, ewma_gain=0.00390625,
             **_COMMON, **_ecn(400, 1600, 0.2)),
    ),
    CongestionControl(
        "timely", CC_TIMELY, "timely", "TIMELY", "Mittal et al., SIGCOMM 2015",
        "RTT and its gradient", 8, "cc_timely",
        dict(rate_ai_bps=100e6, rate_hai_bps=500e6, has_win=False, var_win=False,
             fast_react=False, int_multi=1, ack_high_prio=True, ewma_gain=0.00390625,
             **_COMMON, **_ecn(400, 1600, 0.2)),
    ),
    CongestionControl(
        "dctcp", CC_DCTCP, "dctcp", "DCTCP", "Alizadeh et al., SIGCOMM 2010",
        "fraction of ECN-marked packets per window", 0, "cc_dctcp",
        dict(rate_ai_bps=50e6, rate_hai_bps=50e6, has_win=True, var_win=True,
             fast_react=False, int_multi=1, ack_high_prio=False, ewma_gain=0.0625,
             dctcp_rate_ai_bps=615e6, **_COMMON, **_ecn(300, 300, 1.0)),
    ),
)  # fmt: skip
"""Every congestion control, in the order of :data:`CC_NAMES`."""

CC_NAMES: tuple[str, ...] = tuple(c.name for c in REGISTRY)
"""The ``network.cc`` values."""

BY_NAME: Mapping[str, CongestionControl] = MappingProxyType({c.name: c for c in REGISTRY})
BY_CODE: Mapping[int, CongestionControl] = MappingProxyType({c.code: c for c in REGISTRY})


def markdown() -> str:
    """The registry as the markdown table of ``docs/engine.md``."""
    rows = [
        "| `network.cc` | `P.cc` (ns-3 `CC_MODE`) | ns-3 `run.py --cc` | reacts to | INT bytes "
        "| kernel | implements |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in REGISTRY:
        rows.append(
            f"| `{c.name}` | {c.code} | `{c.ns3_name}` | {c.signal} | {c.int_header_bytes} "
            f"| `packet/{c.kernel}.py` | {c.title} ({c.reference}) |"
        )
    return "\n".join(rows) + "\n"


TABLE = MarkdownTable(markdown)
DOC = DocBlock("<!-- cc-registry:begin", "<!-- cc-registry:end -->")
"""The registry's table and its markers in ``docs/engine.md``."""


if __name__ == "__main__":  # print the table, or --update FILE
    DOC.cli(TABLE, None, "Print the congestion-control table of docs/engine.md.")
