"""HPCC ns-3 ``config.txt`` files read into a :class:`~wormsim.netsim.network_config.NetworkSpec`.

One ``KEY value`` per line, as the HPCC simulator's ``third.cc`` reads them; ``CC_MODE`` picks the
congestion control, its per-cc keys (:data:`CC_KEYS`) take the chosen cc's defaults when absent,
keys that only have one supported value are checked, keys with no effect on this engine are
accepted and named, anything else is refused with the file, line and key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wormsim.inputs import read_text
from wormsim.netsim.cc_registry import NS3_MODES, SETTINGS
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.network_config import (
    CC_DEFAULTS,
    CC_MODES,
    NetworkSpec,
    check_rate_bps,
    parse_rate_bps,
)
from wormsim.units import PS_PER_S_F

__all__ = ["read_hpcc_config", "read_config", "Dialect", "HPCC", "CC_KEYS", "NO_EFFECT"]


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
#: They are the shared fields with per-cc defaults, the controls' own settings whose default
#: depends on the cc (``CcSetting.others``: DCTCP_RATE_AI, FAST_REACT, INT_MULTI), and RP_TIMER,
#: which ``run.py`` writes for every cc.
CC_KEYS = frozenset(
    _FIELD_KEY[f]
    for f in {
        *CC_DEFAULTS["hpcc"],
        *CC_DEFAULTS["dctcp"],
        *(s.field for s in SETTINGS if s.others is not None),
        "rp_timer_us",
    }
    if f in _FIELD_KEY
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
NO_EFFECT: dict[str, str] = {
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

_ALL_KEYS = sorted({*_KEYS, *_MAPS, *_ONLY, *NO_EFFECT, "CC_MODE", "SIMULATOR_STOP_TIME"})


@dataclass(frozen=True)
class Dialect:
    """What a configuration format adds to the HPCC ``config.txt`` keys.

    Attributes
    ----------
    name : str
        The format, for messages (``HPCC ns-3 config.txt``).
    stop_time : bool
        ``SIMULATOR_STOP_TIME`` stops the run (scenarios); False: accepted with no effect.
    no_effect : dict
        Further keys with no effect, and why.
    ints : frozenset
        Further keys with one whole number >= 0, returned in ``run`` (e.g. monitor intervals).
    refused : dict
        Further keys refused whatever their value, and why.
    forced : dict
        Keys whose value the format's simulator replaces after reading it: key -> NetworkSpec
        field and the value it gets.
    """

    name: str
    stop_time: bool = True
    no_effect: dict[str, str] = field(default_factory=dict)
    ints: frozenset[str] = frozenset()
    refused: dict[str, str] = field(default_factory=dict)
    forced: dict[str, tuple[str, Any]] = field(default_factory=dict)


#: HPCC ns-3's ``config.txt``, as ``netsim run --config`` reads it for a scenario.
HPCC = Dialect("HPCC ns-3 config.txt")


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
    where: str,
    key: str,
    args: list[str],
    values: dict[str, Any],
    run: dict[str, Any],
    dialect: Dialect,
) -> None:
    """Store one ``KEY args`` line into ``values`` (NetworkSpec fields) or ``run``."""
    if key in dialect.forced:
        _, conv = _KEYS[key]
        conv(args[0])  # still a valid value
        values.__setitem__(*dialect.forced[key])
        return
    if key in dialect.refused:
        raise NetsimInputError(f"{where}: {key} is not supported: {dialect.refused[key]}")
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
                f"{where}: CC_MODE {mode} is not supported; use "
                + ", ".join(f"{c.code} ({c.title})" for c in NS3_MODES.values())
            )
        run["cc"] = CC_MODES[mode]
    elif key == "SIMULATOR_STOP_TIME":
        stop = _float(args[0])
        if not dialect.stop_time:
            if stop <= 0:
                raise NetsimInputError(f"{where}: the stop time must be > 0 seconds")
            return
        if not 0 < stop <= 1e6:
            raise NetsimInputError(f"{where}: the stop time must be 0 < seconds <= 1e6")
        run["stop_ps"] = int(round(stop * PS_PER_S_F))
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
    elif key in dialect.ints:
        if int(args[0]) < 0:
            raise NetsimInputError(f"{where}: expected a whole number >= 0, not {args[0]!r}")
        run[key] = int(args[0])
    elif key not in NO_EFFECT and key not in dialect.no_effect:
        known = sorted({*_ALL_KEYS, *dialect.no_effect, *dialect.ints})
        raise NetsimInputError(
            f"{where}: unknown key {key}; {dialect.name} keys wormsim reads: {', '.join(known)}"
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
    net, run = read_config(path, HPCC, **overrides)
    return net, run.get("stop_ps")


def read_config(
    path: str | Path, dialect: Dialect, **overrides: Any
) -> tuple[NetworkSpec, dict[str, Any]]:
    """Parse a ``KEY value`` configuration file of ``dialect`` (see :func:`read_hpcc_config`).

    Returns
    -------
    net : NetworkSpec
    run : dict
        ``cc``, ``stop_ps`` (with ``dialect.stop_time``), the dialect's ``ints`` that were set,
        and ``keys``, every key the file sets.
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
            _parse_line(where, key, args, values, run, dialect)
        except NetsimInputError:
            raise
        except (IndexError, ValueError, OverflowError) as exc:
            raise NetsimInputError(
                f"{where}: cannot use the value {' '.join(args)!r}: {exc}; "
                f"see the {dialect.name} format"
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
    run["keys"] = set(seen)
    return net, run
