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

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from wormsim.netsim.cc_registry import (
    CC_NAMES,
    MAX_RATE_BPS,
    MIN_RATE_BPS,
    NS3_MODES,
    REGISTRY,
    SETTINGS,
    CcSetting,
)
from wormsim.netsim.errors import NetsimInputError
from wormsim.units import BYTES_PER_KB

__all__ = [
    "NetworkSpec",
    "CC_MODES",
    "INT_HEADER_BYTES",
    "FRAME_HEADER_BYTES",
    "PFC_FRAME_BYTES",
    "ack_frame_bytes",
    "CC_DEFAULTS",
    "MAX_RATE_BPS",
    "parse_rate_bps",
    "check_rate_bps",
]

CcName = Literal[CC_NAMES]  # type: ignore[valid-type]
#: HPCC ``CC_MODE`` number -> our cc name (the congestion controls HPCC ns-3 has).
CC_MODES: dict[int, str] = {code: c.name for code, c in NS3_MODES.items()}
#: Per-packet in-band telemetry / timestamp header bytes each cc adds (ns-3's IntHeader sizes).
INT_HEADER_BYTES: dict[str, int] = {c.name: c.int_header_bytes for c in REGISTRY}
#: Header bytes of a data frame besides INT, as HPCC ns-3 sends them: its PPP header counts 14
#: bytes (``PppHeader::GetStaticSize``), + IPv4 20 + UDP 8 + the qbb sequence header 6.
FRAME_HEADER_BYTES = 48
#: Bytes of a PFC pause frame in HPCC ns-3 (``QbbNetDevice::SendPfc``: PPP 14 + IPv4 20 +
#: ``PauseHeader`` 9).
PFC_FRAME_BYTES = 43


def ack_frame_bytes(int_bytes: int) -> int:
    """Bytes of an ACK/NACK/CNP frame: PPP 14 + IPv4 20 + the qbb header (12 bytes + INT),
    padded to at least 26 bytes, as HPCC ns-3 sends it."""
    return 34 + max(12 + int_bytes, 26)


#: Per-cc defaults (:data:`wormsim.netsim.cc_registry.REGISTRY`).
CC_DEFAULTS: dict[str, dict[str, Any]] = {c.name: dict(c.defaults) for c in REGISTRY}


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
            f"{what} {value:,.0f} bps is out of range; it must be 1Kbps..1000Tbps (e.g. 100Gbps)"
        )
    return value


def _rate(**kw: Any) -> Any:
    return Field(ge=MIN_RATE_BPS, le=MAX_RATE_BPS, **kw)


def _timer(default: Any, description: str) -> Any:
    return Field(default, gt=0, le=_US_MAX, description=description)


class _NetworkFields(BaseModel):
    """The fields of :class:`NetworkSpec` shared by every congestion control."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False, allow_inf_nan=False)

    cc: CcName = Field("hpcc", description=f"Congestion control: {', '.join(CC_NAMES)}.")
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
    multi_rate: bool = Field(
        False, description="HPCC per-hop rates (MULTI_RATE); only false is supported."
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
                raise ValueError(f"link speed {rate} bps is out of range 1 kbit/s..1,000 Tbit/s")
            top = 1.0 if info.field_name == "pmax" else 1e9
            if not (math.isfinite(v) and 0 <= v <= top):
                raise ValueError(f"value {v} for {rate} bps must be in 0..{top:,.0f}")
        return value

    @model_validator(mode="after")
    def _fill_cc_defaults(self) -> _NetworkFields:
        for key, value in CC_DEFAULTS[self.cc].items():
            if getattr(self, key, None) is None:
                object.__setattr__(self, key, value)
        for c in REGISTRY:  # settings whose default depends on the congestion control
            for s in c.settings:
                if s.others is not None and getattr(self, s.field) is None:
                    object.__setattr__(self, s.field, s.default if self.cc == c.name else s.others)
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
        for c in REGISTRY:
            for low, high in c.ordered:
                if getattr(self, low) >= getattr(self, high):
                    raise ValueError(f"{low}: it must be below {high}")

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
        return (self.kmin_kb[r] * BYTES_PER_KB, self.kmax_kb[r] * BYTES_PER_KB, self.pmax[r])  # type: ignore

    @classmethod
    def from_hpcc_config(cls, path: str | Path, **overrides: Any) -> NetworkSpec:
        """Parse an HPCC ``config.txt`` (``KEY value`` per line); honours ``CC_MODE``.

        See :func:`~wormsim.netsim.formats.hpcc_config.read_hpcc_config` (this drops its stop time).

        Raises
        ------
        NetsimInputError
            Missing file, unknown CC_MODE or key, an unsupported setting, or a value that
            cannot be parsed or is out of range (names the file, line and key).
        """
        from wormsim.netsim.formats.hpcc_config import read_hpcc_config

        return read_hpcc_config(path, **overrides)[0]


def _setting_field(setting: CcSetting) -> tuple[type, Any]:
    """A congestion control's own setting as a pydantic field (type, ``Field``): ``None`` until
    validation when its default depends on the congestion control (``setting.others``)."""
    bounds = {
        k: getattr(setting, k) for k in ("gt", "ge", "lt", "le") if getattr(setting, k) is not None
    }
    kind = type(setting.default)
    if setting.others is not None:
        return kind | None, Field(None, description=f"{setting.meaning}.", **bounds)
    return kind, Field(setting.default, description=f"{setting.meaning}.", **bounds)


NetworkSpec = create_model(  # type: ignore[call-overload]
    "NetworkSpec",
    __base__=_NetworkFields,
    __module__=__name__,
    __doc__="""Network and CC parameters (HPCC ns-3 names, lower case, units in the name).

    Fields left ``None`` take the per-cc default of :data:`CC_DEFAULTS` (resolved at validation).
    Each congestion control's own settings (:data:`wormsim.netsim.cc_registry.SETTINGS`) follow
    the shared fields. Settings wormsim does not implement (static PFC thresholds, per-pair
    windows, HPCC multi-rate, HPCC without a window) are rejected with the reason.
    """,
    **{s.field: _setting_field(s) for s in SETTINGS},
)
