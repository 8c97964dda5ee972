"""Network and congestion-control configuration (:class:`NetworkSpec`).

Field names are the HPCC ns-3 ``config.txt`` keys in lower case, with units in the name
(``_bps``, ``_us``, ``_kb``, ``_bytes``). Defaults that depend on the congestion control are the
upstream ``run.py`` values for 100 Gbps (see ``tests/data/ns3/INDEX.md``): a field left unset
takes the default of the chosen ``cc``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from wormsim.netsim.errors import NetsimInputError

__all__ = ["NetworkSpec", "CC_MODES", "CC_DEFAULTS", "parse_rate_bps"]

CcName = Literal["dcqcn", "hpcc", "timely", "dctcp"]
#: HPCC ``CC_MODE`` number -> our cc name.
CC_MODES: dict[int, str] = {1: "dcqcn", 3: "hpcc", 7: "timely", 8: "dctcp"}

_ECN_100G = {
    "kmin_kb": {100_000_000_000: 400, 400_000_000_000: 1600},
    "kmax_kb": {100_000_000_000: 1600, 400_000_000_000: 6400},
    "pmax": {100_000_000_000: 0.2, 400_000_000_000: 0.2},
}

#: Per-cc defaults (upstream ``run.py`` for ``--bw 100``; hp with ``--hpai 50``).
CC_DEFAULTS: dict[str, dict[str, Any]] = {
    "hpcc": dict(
        rate_ai_bps=50e6,
        rate_hai_bps=50e6,
        min_rate_bps=1000e6,
        has_win=True,
        var_win=True,
        fast_react=True,
        int_multi=4,
        ack_high_prio=False,
        ewma_gain=0.00390625,
        rp_timer_us=300.0,
        **_ECN_100G,
    ),
    "dcqcn": dict(
        rate_ai_bps=20e6,
        rate_hai_bps=200e6,
        min_rate_bps=1000e6,
        has_win=False,
        var_win=False,
        fast_react=False,
        int_multi=1,
        ack_high_prio=True,
        ewma_gain=0.00390625,
        rp_timer_us=300.0,
        **_ECN_100G,
    ),
    "timely": dict(
        rate_ai_bps=100e6,
        rate_hai_bps=500e6,
        min_rate_bps=1000e6,
        has_win=False,
        var_win=False,
        fast_react=False,
        int_multi=1,
        ack_high_prio=True,
        ewma_gain=0.00390625,
        rp_timer_us=300.0,
        **_ECN_100G,
    ),
    "dctcp": dict(
        rate_ai_bps=50e6,
        rate_hai_bps=50e6,
        min_rate_bps=1000e6,
        has_win=True,
        var_win=True,
        fast_react=False,
        int_multi=1,
        ack_high_prio=False,
        ewma_gain=0.0625,
        rp_timer_us=300.0,
        dctcp_rate_ai_bps=615e6,
        kmin_kb={100_000_000_000: 300, 400_000_000_000: 1200},
        kmax_kb={100_000_000_000: 300, 400_000_000_000: 1200},
        pmax={100_000_000_000: 1.0, 400_000_000_000: 1.0},
    ),
}


def parse_rate_bps(text: str) -> float:
    """Parse an ns-3 data rate (``100Gbps``, ``50Mb/s``, ``1000000``) into bit/s."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kKmMgGtT]?)(b/s|bps|Bps|B/s)?\s*", text)
    if not m:
        raise NetsimInputError(f"cannot parse the data rate {text!r}; write e.g. 100Gbps or 50Mb/s")
    value = float(m.group(1))
    mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
    unit = m.group(3) or "bps"
    return value * mult * (8 if unit in ("Bps", "B/s") else 1)


class NetworkSpec(BaseModel):
    """Network and CC parameters (HPCC ns-3 names, lower case, units in the name).

    Fields left ``None`` take the per-cc default of :data:`CC_DEFAULTS` (resolved at validation).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    cc: CcName = "hpcc"
    payload_size_bytes: int = Field(1000, gt=0)
    buffer_size_mb: float = Field(32.0, gt=0)
    kmin_kb: dict[int, float] | None = None
    kmax_kb: dict[int, float] | None = None
    pmax: dict[int, float] | None = None
    enable_qcn: bool = True
    pfc_enabled: bool = True
    use_dynamic_pfc_threshold: bool = True
    rate_ai_bps: float | None = None
    rate_hai_bps: float | None = None
    min_rate_bps: float | None = None
    ewma_gain: float | None = None
    rp_timer_us: float | None = None
    alpha_resume_interval_us: float = 1.0
    rate_decrease_interval_us: float = 4.0
    fast_recovery_times: int = 1
    clamp_target_rate: bool = False
    rate_on_first_cnp: float = 1.0
    u_target: float = 0.95
    fast_react: bool | None = None
    mi_thresh: int = 0
    int_multi: int | None = None
    multi_rate: bool = False
    dctcp_rate_ai_bps: float | None = None
    has_win: bool | None = None
    var_win: bool | None = None
    global_t: bool = True
    l2_ack_interval: int = Field(1, ge=1)
    l2_chunk_size_bytes: int = 4000
    nack_interval_us: float = 500.0
    ack_high_prio: bool | None = None
    #: Strict priority for ACK/NACK in switch queues. HPCC's ``third.cc`` never sets
    #: ``SwitchNode::AckHighPrio`` (default 0): ``ACK_HIGH_PRIO`` only moves the NIC's ACK queue to
    #: class 0 (``RdmaEgressQueue::ack_q_idx``, never paused), and switches queue ACKs with data.
    switch_ack_high_prio: bool = False
    rate_bound: bool = True
    timely_alpha: float = 0.875
    timely_beta: float = 0.8
    timely_t_low_ns: int = 50_000
    timely_t_high_ns: int = 500_000
    timely_min_rtt_ns: int = 20_000
    #: ns-3.17 truncates every serialization / pacing time to a whole ns; keep for cross-checks.
    ns3_truncate_tx_ns: bool = True
    #: MMU per-port reserve and resume offset (ns-3 SwitchMmu constants).
    reserve_bytes: int = 4096
    resume_offset_bytes: int = 3072
    #: Seed of the in-kernel RNG (RED marking).
    seed: int = 0

    @model_validator(mode="after")
    def _fill_cc_defaults(self) -> NetworkSpec:
        for key, value in CC_DEFAULTS[self.cc].items():
            if getattr(self, key, None) is None:
                object.__setattr__(self, key, value)
        if self.dctcp_rate_ai_bps is None:
            object.__setattr__(self, "dctcp_rate_ai_bps", 1000e6)
        return self

    # ------------------------------------------------------------------ helpers
    def ecn_for_rate(self, rate_bps: int) -> tuple[float, float, float]:
        """(kmin bytes, kmax bytes, pmax) for a link speed; a missing speed is an error."""
        r = int(rate_bps)
        for name, table in (
            ("KMIN_MAP", self.kmin_kb),
            ("KMAX_MAP", self.kmax_kb),
            ("PMAX_MAP", self.pmax),
        ):
            if r not in table:  # type: ignore[operator]
                raise NetsimInputError(
                    f"{name} has no entry for link speed {r} bps; add '{r} <value>' to it "
                    "(every link speed of the topology must be listed)"
                )
        return (self.kmin_kb[r] * 1000, self.kmax_kb[r] * 1000, self.pmax[r])  # type: ignore

    @classmethod
    def from_hpcc_config(cls, path: str | Path, **overrides: Any) -> NetworkSpec:
        """Parse an HPCC ``config.txt`` (``KEY value`` per line); honours ``CC_MODE``.

        Raises
        ------
        NetsimInputError
            Missing file, unknown CC_MODE, or a value that cannot be parsed (names key and line).
        """
        p = Path(path)
        if not p.is_file():
            raise NetsimInputError(f"config file {p} does not exist; pass an HPCC config.txt")
        values: dict[str, Any] = {}
        lines = p.read_text().splitlines()
        cc_name = None
        for lineno, raw in enumerate(lines, 1):
            parts = raw.split()
            if not parts or parts[0].startswith("#"):
                continue
            key, args = parts[0].upper(), parts[1:]
            where = f"{p}:{lineno} ({key})"
            try:
                if key == "CC_MODE":
                    mode = int(args[0])
                    if mode not in CC_MODES:
                        raise NetsimInputError(
                            f"{where}: CC_MODE {mode} is not supported; use 1 (DCQCN), 3 (HPCC), "
                            "7 (TIMELY) or 8 (DCTCP)"
                        )
                    cc_name = CC_MODES[mode]
                elif key in _MAPS:
                    n = int(args[0])
                    if len(args) != 1 + 2 * n:
                        raise NetsimInputError(
                            f"{where}: expected {n} pairs '<bps> <value>' after the count"
                        )
                    values[_MAPS[key]] = {
                        int(float(args[1 + 2 * i])): float(args[2 + 2 * i]) for i in range(n)
                    }
                elif key in _KEYS:
                    field, conv = _KEYS[key]
                    values[field] = conv(args[0])
            except NetsimInputError:
                raise
            except (IndexError, ValueError) as exc:
                raise NetsimInputError(
                    f"{where}: cannot parse value {' '.join(args)!r}: {exc}; "
                    "see the HPCC config.txt format"
                ) from None
        if cc_name is None:
            raise NetsimInputError(f"{p}: no CC_MODE line; add e.g. 'CC_MODE 3' for HPCC")
        values["cc"] = cc_name
        values.update(overrides)
        return cls(**values)


def _bool(v: str) -> bool:
    return bool(int(float(v)))


_KEYS: dict[str, tuple[str, Any]] = {
    "ENABLE_QCN": ("enable_qcn", _bool),
    "USE_DYNAMIC_PFC_THRESHOLD": ("use_dynamic_pfc_threshold", _bool),
    "PACKET_PAYLOAD_SIZE": ("payload_size_bytes", int),
    "BUFFER_SIZE": ("buffer_size_mb", float),
    "ALPHA_RESUME_INTERVAL": ("alpha_resume_interval_us", float),
    "RATE_DECREASE_INTERVAL": ("rate_decrease_interval_us", float),
    "CLAMP_TARGET_RATE": ("clamp_target_rate", _bool),
    "RP_TIMER": ("rp_timer_us", float),
    "EWMA_GAIN": ("ewma_gain", float),
    "FAST_RECOVERY_TIMES": ("fast_recovery_times", int),
    "RATE_AI": ("rate_ai_bps", parse_rate_bps),
    "RATE_HAI": ("rate_hai_bps", parse_rate_bps),
    "MIN_RATE": ("min_rate_bps", parse_rate_bps),
    "DCTCP_RATE_AI": ("dctcp_rate_ai_bps", parse_rate_bps),
    "L2_CHUNK_SIZE": ("l2_chunk_size_bytes", int),
    "L2_ACK_INTERVAL": ("l2_ack_interval", int),
    "HAS_WIN": ("has_win", _bool),
    "GLOBAL_T": ("global_t", _bool),
    "VAR_WIN": ("var_win", _bool),
    "FAST_REACT": ("fast_react", _bool),
    "U_TARGET": ("u_target", float),
    "MI_THRESH": ("mi_thresh", int),
    "INT_MULTI": ("int_multi", int),
    "MULTI_RATE": ("multi_rate", _bool),
    "RATE_BOUND": ("rate_bound", _bool),
    "ACK_HIGH_PRIO": ("ack_high_prio", _bool),
}
_MAPS = {"KMAX_MAP": "kmax_kb", "KMIN_MAP": "kmin_kb", "PMAX_MAP": "pmax"}
