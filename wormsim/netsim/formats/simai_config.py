"""SimAI's ``SimAI.conf`` (``astra-sim-alibabacloud/inputs/config/``) as a network config.

SimAI's ns-3 front end (``network_frontend/ns3/common.h``, ``ReadConf``) reads HPCC's
``config.txt`` keys plus its monitors, so the file goes through the HPCC reader
(:func:`~wormsim.netsim.formats.hpcc_config.read_config`) with these additions:

- ``SIMULATOR_STOP_TIME`` has no effect: a training run ends when its iteration does (SimAI sets
  the variable and never reads it; the shipped file says 4e13 s).
- Monitors: ``QLEN_MON_FILE`` (every ``QLEN_MON_INTERVAL`` µs) and ``RATE_MON_FILE`` (every
  ``QP_MON_INTERVAL`` µs) map to wormsim's queue and rate samples (``queue_samples.parquet``,
  ``rate_samples.parquet``, packet mode), sampled at the shorter of the two periods named;
  ``BW_MON_FILE`` has its counterpart in ``ports.parquet`` (bytes per port, not a time series);
  ``CNP_MON_FILE`` has none (ECN marks are counted per port in ``ports.parquet``). ``MON_START``
  and ``MON_END`` are accepted: wormsim samples the whole run.
- ``GLOBAL_T`` is always 1, whatever the file says, as in SimAI (``ReadConf`` reads the value
  and then sets ``global_t = 1``): one window and base RTT for all flows.
- ``PAUSE_TIME`` and ``NIC_TOTAL_PAUSE_TIME`` are refused: wormsim's PFC pauses a queue until it
  falls below the resume threshold, not for a set time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wormsim.netsim.formats.hpcc_config import Dialect, read_config
from wormsim.netsim.network_config import NetworkSpec
from wormsim.units import NS_PER_US

__all__ = ["SimaiConfig", "read_simai_config", "SIMAI"]

_MONITOR_FILES = {
    "QLEN_MON_FILE": "switch queue lengths: queue_samples.parquet (packet mode)",
    "RATE_MON_FILE": "QP rates: rate_samples.parquet (packet mode)",
    "BW_MON_FILE": "port bandwidth: ports.parquet has the bytes of every port",
    "CNP_MON_FILE": "CNPs per QP: not sampled; ports.parquet counts ECN marks per port",
}
_MONITOR_INTS = ("QP_MON_INTERVAL", "QLEN_MON_INTERVAL", "BW_MON_INTERVAL", "MON_START", "MON_END")

#: SimAI.conf: HPCC's keys, SimAI's monitors, and a stop time with no effect.
SIMAI = Dialect(
    "SimAI.conf",
    stop_time=False,
    no_effect={
        **_MONITOR_FILES,
        "SIMULATOR_STOP_TIME": "a training run ends when the iteration does (SimAI never reads it)",
    },
    ints=frozenset(_MONITOR_INTS),
    forced={"GLOBAL_T": ("global_t", True)},
    refused=dict.fromkeys(
        ("PAUSE_TIME", "NIC_TOTAL_PAUSE_TIME"),
        "timed PFC pauses are not modelled: a paused queue resumes when the receiver's queue "
        "falls below the resume threshold; remove the line",
    ),
)


@dataclass(frozen=True)
class SimaiConfig:
    """A ``SimAI.conf``, read.

    Attributes
    ----------
    network : NetworkSpec
    monitor_period_ns : int
        Period of the queue and rate samples its monitor files ask for (0: none).
    """

    network: NetworkSpec
    monitor_period_ns: int


def _monitor_period_ns(run: dict[str, Any], named: set[str]) -> int:
    periods = []
    if "QLEN_MON_FILE" in named:
        periods.append(run.get("QLEN_MON_INTERVAL", 10000))
    if "RATE_MON_FILE" in named:
        periods.append(run.get("QP_MON_INTERVAL", 100))
    return NS_PER_US * max(1, min(periods)) if periods else 0


def read_simai_config(path: str | Path, **overrides: Any) -> SimaiConfig:
    """Parse a ``SimAI.conf``; ``overrides`` are NetworkSpec fields.

    Raises
    ------
    NetsimInputError
        Naming the file, the line, the key, the value and the fix.
    """
    net, run = read_config(path, SIMAI, **overrides)
    return SimaiConfig(net, _monitor_period_ns(run, run["keys"]))
