"""Network and congestion-control configuration (:class:`NetworkSpec`).

Field names are the HPCC ns-3 ``config.txt`` keys in lower case, with units in the name
(``_bps``, ``_us``, ``_kb``, ``_bytes``). Defaults that depend on the congestion control are the
upstream ``run.py`` values for 100 Gbps (see ``tests/data/ns3/INDEX.md``): a field left unset
takes the default of the chosen ``cc``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wormsim.inputs import read_text
from wormsim.netsim.errors import NetsimInputError

__all__ = [
    "NetworkSpec",
    "CC_MODES",
    "INT_HEADER_BYTES",
    "CC_DEFAULTS",
    "CC_KEYS",
    "MAX_RATE_BPS",
    "parse_rate_bps",
    "check_rate_bps",
    "read_hpcc_config",
]

CcName = Literal["dcqcn", "hpcc", "timely", "dctcp"]
#: HPCC ``CC_MODE`` number -> our cc name.
CC_MODES: dict[int, str] = {1: "dcqcn", 3: "hpcc", 7: "timely", 8: "dctcp"}
#: Per-packet in-band telemetry / timestamp header bytes each cc adds (ns-3's IntHeader sizes).
INT_HEADER_BYTES: dict[str, int] = {"dcqcn": 0, "hpcc": 42, "timely": 8, "dctcp": 0}

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


#: Accepted link and CC rates: 1 Kbit/s .. 1 Pbit/s.
MIN_RATE_BPS, MAX_RATE_BPS = 1e3, 1e15
_US_MAX = 1e6  # timer settings: at most 1 s
_INT_MAX = 2**31 - 1


def parse_rate_bps(text: str) -> float:
    """Parse an ns-3 data rate (``100Gbps``, ``50Mb/s``, ``1000000``) into bit/s."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kKmMgGtT]?)(b/s|bps|Bps|B/s)?\s*", text)
    if not m:
        raise NetsimInputError(f"cannot parse the data rate {text!r}; write e.g. 100Gbps or 50Mb/s")
    try:
        value = float(m.group(1))
    except ValueError:
        raise NetsimInputError(
            f"cannot parse the data rate {text!r}; write e.g. 100Gbps or 50Mb/s"
        ) from None
    mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
    unit = m.group(3) or "bps"
    return value * mult * (8 if unit in ("Bps", "B/s") else 1)


def check_rate_bps(value: float, what: str) -> float:
    """``value`` if it is a rate in ``MIN_RATE_BPS..MAX_RATE_BPS``, else a NetsimInputError."""
    if not (math.isfinite(value) and MIN_RATE_BPS <= value <= MAX_RATE_BPS):
        raise NetsimInputError(
            f"{what} {value:g} bps is out of range; it must be 1Kbps..1000Tbps (e.g. 100Gbps)"
        )
    return value


def _rate(**kw: Any) -> Any:
    return Field(ge=MIN_RATE_BPS, le=MAX_RATE_BPS, **kw)


def _timer(default: Any, description: str) -> Any:
    return Field(default, gt=0, le=_US_MAX, description=description)


class NetworkSpec(BaseModel):
    """Network and CC parameters (HPCC ns-3 names, lower case, units in the name).

    Fields left ``None`` take the per-cc default of :data:`CC_DEFAULTS` (resolved at validation).
    Settings wormsim does not implement (static PFC thresholds, per-pair windows, HPCC multi-rate,
    HPCC without a window) are rejected with the reason.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=False, allow_inf_nan=False)

    cc: CcName = Field("hpcc", description="Congestion control: dcqcn, hpcc, timely or dctcp.")
    payload_size_bytes: int = Field(
        1000, gt=0, le=65536, description="Payload bytes per packet (PACKET_PAYLOAD_SIZE)."
    )
    buffer_size_mb: float = Field(
        32.0, gt=0, le=1e6, description="Shared buffer per switch, MiB (BUFFER_SIZE)."
    )
    kmin_kb: dict[int, float] | None = Field(
        None, description="ECN marking threshold Kmin per link speed {bps: KB} (KMIN_MAP)."
    )
    kmax_kb: dict[int, float] | None = Field(
        None, description="ECN marking threshold Kmax per link speed {bps: KB} (KMAX_MAP)."
    )
    pmax: dict[int, float] | None = Field(
        None, description="ECN marking probability at Kmax per link speed {bps: 0..1} (PMAX_MAP)."
    )
    enable_qcn: bool = Field(True, description="ECN marking at switches (ENABLE_QCN).")
    pfc_enabled: bool = Field(True, description="PFC pause frames (off: full buffers drop).")
    use_dynamic_pfc_threshold: bool = Field(
        True,
        description="Dynamic PFC thresholds (USE_DYNAMIC_PFC_THRESHOLD); only true is supported.",
    )
    rate_ai_bps: float | None = _rate(
        default=None, description="Additive increase step, bit/s (RATE_AI)."
    )
    rate_hai_bps: float | None = _rate(
        default=None, description="Hyper additive increase step, bit/s (RATE_HAI)."
    )
    min_rate_bps: float | None = _rate(
        default=None, description="Lowest sending rate, bit/s (MIN_RATE)."
    )
    ewma_gain: float | None = Field(
        None, gt=0, le=1, description="DCQCN alpha / DCTCP gain g (EWMA_GAIN)."
    )
    rp_timer_us: float | None = Field(
        None, gt=0, le=_US_MAX, description="DCQCN rate-increase timer, µs (RP_TIMER)."
    )
    alpha_resume_interval_us: float = _timer(
        1.0, "DCQCN alpha update interval, µs (ALPHA_RESUME_INTERVAL)."
    )
    rate_decrease_interval_us: float = _timer(
        4.0, "DCQCN minimum interval between rate decreases, µs (RATE_DECREASE_INTERVAL)."
    )
    fast_recovery_times: int = Field(
        1, ge=0, le=_INT_MAX, description="DCQCN fast-recovery stages (FAST_RECOVERY_TIMES)."
    )
    clamp_target_rate: bool = Field(
        False, description="DCQCN clamps the target rate on every CNP (CLAMP_TARGET_RATE)."
    )
    rate_on_first_cnp: float = Field(
        1.0, gt=0, le=1, description="Fraction of the line rate kept on the first CNP."
    )
    u_target: float = Field(0.95, gt=0, le=1, description="HPCC target utilisation (U_TARGET).")
    fast_react: bool | None = Field(
        None, description="HPCC reacts on every ACK, not once per RTT (FAST_REACT)."
    )
    mi_thresh: int = Field(
        0, ge=0, le=_INT_MAX, description="HPCC additive-increase stages (MI_THRESH)."
    )
    int_multi: int | None = Field(
        None, ge=1, le=1 << 16, description="HPCC INT counter unit multiplier (INT_MULTI)."
    )
    multi_rate: bool = Field(
        False, description="HPCC per-hop rates (MULTI_RATE); only false is supported."
    )
    dctcp_rate_ai_bps: float | None = _rate(
        default=None, description="DCTCP additive increase, bit/s (DCTCP_RATE_AI)."
    )
    has_win: bool | None = Field(
        None, description="Window-limited senders, window = largest BDP (HAS_WIN)."
    )
    var_win: bool | None = Field(
        None, description="The window scales with the sending rate (VAR_WIN)."
    )
    global_t: bool = Field(
        True,
        description="One window and base RTT for all flows (GLOBAL_T); only true is supported.",
    )
    l2_ack_interval: int = Field(
        1, ge=1, le=_INT_MAX, description="Packets per ACK (L2_ACK_INTERVAL)."
    )
    l2_chunk_size_bytes: int = Field(
        4000, ge=0, le=1 << 40, description="Bytes a QP sends per turn (L2_CHUNK_SIZE)."
    )
    nack_interval_us: float = _timer(500.0, "Least time between two NACKs of a QP, µs.")
    ack_high_prio: bool | None = Field(
        None, description="ACKs leave the NIC in the highest-priority queue (ACK_HIGH_PRIO)."
    )
    #: Strict priority for ACK/NACK in switch queues. HPCC's ``third.cc`` never sets
    #: ``SwitchNode::AckHighPrio`` (default 0): ``ACK_HIGH_PRIO`` only moves the NIC's ACK queue to
    #: class 0 (``RdmaEgressQueue::ack_q_idx``, never paused), and switches queue ACKs with data.
    switch_ack_high_prio: bool = Field(
        False, description="Switches serve ACK/NACK with strict priority (ns-3: false)."
    )
    rate_bound: bool = Field(True, description="Pace each QP at its CC rate (RATE_BOUND).")
    timely_alpha: float = Field(0.875, gt=0, le=1, description="TIMELY RTT EWMA weight.")
    timely_beta: float = Field(0.8, gt=0, le=1, description="TIMELY multiplicative decrease.")
    timely_t_low_ns: int = Field(
        50_000, gt=0, le=10**9, description="TIMELY low RTT threshold, ns."
    )
    timely_t_high_ns: int = Field(
        500_000, gt=0, le=10**9, description="TIMELY high RTT threshold, ns."
    )
    timely_min_rtt_ns: int = Field(20_000, gt=0, le=10**9, description="TIMELY minimum RTT, ns.")
    #: ns-3.17 truncates every serialization / pacing time to a whole ns; keep for cross-checks.
    ns3_truncate_tx_ns: bool = Field(
        True, description="Truncate serialisation and pacing times to whole ns, as ns-3.17."
    )
    #: MMU per-port reserve and resume offset (ns-3 SwitchMmu constants).
    reserve_bytes: int = Field(
        4096, ge=0, le=1 << 40, description="Switch MMU reserve per port and queue, bytes."
    )
    resume_offset_bytes: int = Field(
        3072, ge=0, le=1 << 40, description="PFC resume offset below the pause threshold, bytes."
    )
    #: Seed of the in-kernel RNG (RED marking).
    seed: int = Field(0, ge=0, le=2**63 - 1, description="Seed of the RED/ECN marking RNG.")

    @field_validator("kmin_kb", "kmax_kb", "pmax")
    @classmethod
    def _ecn_map(cls, value: dict[int, float] | None, info: Any) -> dict[int, float] | None:
        if value is None:
            return value
        for rate, v in value.items():
            if not MIN_RATE_BPS <= rate <= MAX_RATE_BPS:
                raise ValueError(f"link speed {rate} bps is out of range 1e3..1e15")
            top = 1.0 if info.field_name == "pmax" else 1e9
            if not (math.isfinite(v) and 0 <= v <= top):
                raise ValueError(f"value {v} for {rate} bps must be in 0..{top:g}")
        return value

    @model_validator(mode="after")
    def _fill_cc_defaults(self) -> NetworkSpec:
        for key, value in CC_DEFAULTS[self.cc].items():
            if getattr(self, key, None) is None:
                object.__setattr__(self, key, value)
        if self.dctcp_rate_ai_bps is None:
            object.__setattr__(self, "dctcp_rate_ai_bps", 1000e6)
        self._check_supported()
        return self

    def _check_supported(self) -> None:
        """Refuse settings the engines do not implement (never accept and ignore them)."""
        if not self.use_dynamic_pfc_threshold:
            raise ValueError(
                "use_dynamic_pfc_threshold: static PFC thresholds are not implemented; the "
                "switches use HPCC's dynamic thresholds, set it to true (1)"
            )
        if not self.global_t:
            raise ValueError(
                "global_t: per-pair windows and base RTTs (GLOBAL_T 0) are not implemented; "
                "every flow uses the largest BDP and RTT of the topology, set it to true (1)"
            )
        if self.multi_rate:
            raise ValueError(
                "multi_rate: HPCC's per-hop multi-rate mode (MULTI_RATE 1) is not implemented; "
                "set it to false (0)"
            )
        if self.cc == "hpcc" and not self.has_win:
            raise ValueError(
                "has_win: HPCC needs a window (HAS_WIN 1): its utilisation divides the queue "
                "length by the window, which is 0 without one"
            )
        for rate in set(self.kmin_kb or {}) & set(self.kmax_kb or {}):
            if self.kmin_kb[rate] > self.kmax_kb[rate]:  # type: ignore[index]
                raise ValueError(
                    f"kmin_kb: Kmin {self.kmin_kb[rate]:g} KB exceeds Kmax "  # type: ignore[index]
                    f"{self.kmax_kb[rate]:g} KB at {rate} bps; Kmin must be <= Kmax"  # type: ignore[index]
                )
        if self.timely_t_low_ns >= self.timely_t_high_ns:
            raise ValueError("timely_t_low_ns: it must be below timely_t_high_ns")

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

        See :func:`read_hpcc_config` (this drops its stop time).

        Raises
        ------
        NetsimInputError
            Missing file, unknown CC_MODE or key, an unsupported setting, or a value that
            cannot be parsed or is out of range (names the file, line and key).
        """
        return read_hpcc_config(path, **overrides)[0]


def _bool(v: str) -> bool:
    if v not in ("0", "1"):
        raise ValueError("expected 0 or 1")
    return v == "1"


def _float(v: str) -> float:
    x = float(v)
    if not math.isfinite(x):
        raise ValueError("expected a finite number")
    return x


def _rate_arg(v: str) -> float:
    return check_rate_bps(parse_rate_bps(v), "the rate")


#: ``config.txt`` keys wormsim implements: key -> (NetworkSpec field, converter).
_KEYS: dict[str, tuple[str, Any]] = {
    "ENABLE_QCN": ("enable_qcn", _bool),
    "USE_DYNAMIC_PFC_THRESHOLD": ("use_dynamic_pfc_threshold", _bool),
    "PACKET_PAYLOAD_SIZE": ("payload_size_bytes", int),
    "BUFFER_SIZE": ("buffer_size_mb", _float),
    "ALPHA_RESUME_INTERVAL": ("alpha_resume_interval_us", _float),
    "RATE_DECREASE_INTERVAL": ("rate_decrease_interval_us", _float),
    "CLAMP_TARGET_RATE": ("clamp_target_rate", _bool),
    "RP_TIMER": ("rp_timer_us", _float),
    "EWMA_GAIN": ("ewma_gain", _float),
    "FAST_RECOVERY_TIMES": ("fast_recovery_times", int),
    "RATE_AI": ("rate_ai_bps", _rate_arg),
    "RATE_HAI": ("rate_hai_bps", _rate_arg),
    "MIN_RATE": ("min_rate_bps", _rate_arg),
    "DCTCP_RATE_AI": ("dctcp_rate_ai_bps", _rate_arg),
    "L2_CHUNK_SIZE": ("l2_chunk_size_bytes", int),
    "L2_ACK_INTERVAL": ("l2_ack_interval", int),
    "HAS_WIN": ("has_win", _bool),
    "GLOBAL_T": ("global_t", _bool),
    "VAR_WIN": ("var_win", _bool),
    "FAST_REACT": ("fast_react", _bool),
    "U_TARGET": ("u_target", _float),
    "MI_THRESH": ("mi_thresh", int),
    "INT_MULTI": ("int_multi", int),
    "MULTI_RATE": ("multi_rate", _bool),
    "RATE_BOUND": ("rate_bound", _bool),
    "ACK_HIGH_PRIO": ("ack_high_prio", _bool),
}
_MAPS = {"KMAX_MAP": "kmax_kb", "KMIN_MAP": "kmin_kb", "PMAX_MAP": "pmax"}
_FIELD_KEY = {field: key for key, (field, _) in _KEYS.items()} | {f: k for k, f in _MAPS.items()}

#: Keys written by HPCC's ``run.py`` per congestion control: with ``--cc`` naming another cc than
#: the file's CC_MODE they were written for the wrong cc and take the defaults of the chosen one.
CC_KEYS = frozenset(
    _FIELD_KEY[f] for f in {*CC_DEFAULTS["hpcc"], *CC_DEFAULTS["dctcp"]} if f in _FIELD_KEY
)

#: Keys that only accept the value wormsim implements: key -> (value, what the others ask for).
_ONLY: dict[str, tuple[float, str]] = {
    "L2_BACK_TO_ZERO": (
        0,
        "go-back-to-zero retransmission is not implemented (a NACK resends from the lost "
        "packet, go-back-N)",
    ),
    "ERROR_RATE_PER_LINK": (0, "packet loss on links is not modelled"),
    "SAMPLE_FEEDBACK": (0, "HPCC's sampled INT feedback is not implemented"),
    "LINK_DOWN": (0, "link failures are not modelled (the first value, the time, must be 0)"),
}

#: Keys with no effect on the simulation, and why they are accepted.
_NO_EFFECT: dict[str, str] = {
    **dict.fromkeys(
        ("TOPOLOGY_FILE", "FLOW_FILE", "TRACE_FILE"), "inputs come from --topology and --flows"
    ),
    **dict.fromkeys(
        (
            "TRACE_OUTPUT_FILE",
            "FCT_OUTPUT_FILE",
            "PFC_OUTPUT_FILE",
            "QLEN_MON_FILE",
            "QLEN_MON_START",
            "QLEN_MON_END",
            "ENABLE_TRACE",
        ),
        "ns-3 log files; wormsim writes fct.txt, flows.parquet and summary.json into -o",
    ),
    **dict.fromkeys(
        ("DATA_RATE", "LINK_DELAY"),
        "unused by HPCC ns-3 too: each link's rate and delay come from topology.txt",
    ),
    **dict.fromkeys(("PINT_LOG_BASE", "PINT_PROB"), "used only by CC_MODE 10 (HPCC-PINT)"),
}

_ALL_KEYS = sorted({*_KEYS, *_MAPS, *_ONLY, *_NO_EFFECT, "CC_MODE", "SIMULATOR_STOP_TIME"})


def _parse_map(where: str, args: list[str]) -> dict[int, float]:
    n = int(args[0])
    if n < 0 or len(args) != 1 + 2 * n:
        raise NetsimInputError(f"{where}: expected {n} pairs '<bps> <value>' after the count")
    out = {}
    for i in range(n):
        rate = _float(args[1 + 2 * i])
        if rate != int(rate):
            raise ValueError(f"link speed {args[1 + 2 * i]} is not a whole number of bps")
        out[int(rate)] = _float(args[2 + 2 * i])
    return out


def _parse_line(
    where: str, key: str, args: list[str], values: dict[str, Any], run: dict[str, Any]
) -> None:
    """Store one ``KEY args`` line into ``values`` (NetworkSpec fields) or ``run``."""
    if key in _MAPS:
        values[_MAPS[key]] = _parse_map(where, args)
        return
    if key == "LINK_DOWN":
        if len(args) != 3:
            raise NetsimInputError(f"{where}: expected '<time> <node a> <node b>'")
    elif len(args) != 1:
        raise NetsimInputError(f"{where}: expected one value, got {len(args)}: {' '.join(args)!r}")
    if key == "CC_MODE":
        mode = int(args[0])
        if mode not in CC_MODES:
            raise NetsimInputError(
                f"{where}: CC_MODE {mode} is not supported; use 1 (DCQCN), 3 (HPCC), "
                "7 (TIMELY) or 8 (DCTCP)"
            )
        run["cc"] = CC_MODES[mode]
    elif key == "SIMULATOR_STOP_TIME":
        stop = _float(args[0])
        if not 0 < stop <= 1e6:
            raise NetsimInputError(f"{where}: the stop time must be 0 < seconds <= 1e6")
        run["stop_ps"] = int(round(stop * 1e12))
    elif key in _KEYS:
        field, conv = _KEYS[key]
        try:
            values[field] = conv(args[0])
        except NetsimInputError as exc:
            raise NetsimInputError(f"{where}: {exc}") from None
    elif key in _ONLY:
        want, why = _ONLY[key]
        if _float(args[0]) != want:
            raise NetsimInputError(f"{where}: {' '.join(args)!r} is not supported: {why}")
    elif key not in _NO_EFFECT:
        raise NetsimInputError(
            f"{where}: unknown key {key}; HPCC ns-3 config.txt keys wormsim reads: "
            f"{', '.join(_ALL_KEYS)}"
        )


def _validation_message(p: Path, exc: ValidationError, lines: dict[str, int]) -> str:
    msgs = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else ""
        msg = err["msg"].removeprefix("Value error, ")
        key = _FIELD_KEY.get(field)
        if key is None and ":" in msg:  # a model-level rule names its field first
            key = _FIELD_KEY.get(msg.split(":", 1)[0])
        where = f"{p}:{lines[key]} ({key})" if key in lines else str(p)
        if err["type"] != "value_error":
            msg = f"{err.get('input')!r} is not accepted: {msg}"
        msgs.append(f"{where}: {msg}")
    return "; ".join(msgs)


def read_hpcc_config(path: str | Path, **overrides: Any) -> tuple[NetworkSpec, int | None]:
    """Parse an HPCC ``config.txt``: the network settings and the stop time.

    Keys wormsim implements set :class:`NetworkSpec` fields; keys with no effect on the
    simulation (file names, logs) are accepted; settings wormsim does not implement, and unknown
    keys, are refused with the reason. ``overrides`` are NetworkSpec fields; an override ``cc``
    other than the file's ``CC_MODE`` drops the file's per-cc values (:data:`CC_KEYS`, written by
    ``run.py`` for the other cc) so that they take the chosen cc's upstream defaults.

    Returns
    -------
    net : NetworkSpec
    stop_ps : int or None
        ``SIMULATOR_STOP_TIME`` in ps: flows that finish later are not reported, as in ns-3.

    Raises
    ------
    NetsimInputError
        Naming the file, the line, the key, the value and the fix.
    """
    p = Path(path)
    text = read_text(p, "config", NetsimInputError, max_bytes=1 << 20)
    values: dict[str, Any] = {}
    run: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        parts = raw.split()
        if not parts or parts[0].startswith("#"):
            continue
        key, args = parts[0].upper(), parts[1:]
        where = f"{p}:{lineno} ({key})"
        if key in seen:
            raise NetsimInputError(f"{where}: {key} is set twice (also line {seen[key]}); keep one")
        seen[key] = lineno
        try:
            _parse_line(where, key, args, values, run)
        except NetsimInputError:
            raise
        except (IndexError, ValueError, OverflowError) as exc:
            raise NetsimInputError(
                f"{where}: cannot use the value {' '.join(args)!r}: {exc}; "
                "see the HPCC config.txt format"
            ) from None
    if "cc" not in run:
        raise NetsimInputError(f"{p}: no CC_MODE line; add e.g. 'CC_MODE 3' for HPCC")
    cc = overrides.get("cc", run["cc"])
    if cc != run["cc"]:
        values = {f: v for f, v in values.items() if _FIELD_KEY.get(f) not in CC_KEYS}
    values["cc"] = run["cc"]
    values.update(overrides)
    try:
        net = NetworkSpec(**values)
    except ValidationError as exc:
        raise NetsimInputError(_validation_message(p, exc, seen)) from None
    return net, run.get("stop_ps")
