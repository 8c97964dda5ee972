"""What a Wormhole run does, resolved once: :class:`WormholePlan`, built by :func:`plan_wormhole`.

The knobs of :class:`~wormsim.netsim.wormhole.spec.WormholeSpec` meet the run's congestion
control here, once: its registry row (:mod:`~wormsim.netsim.cc_registry`) says which ports couple
flows under ``partition_ports: auto``, whether memo hits replay, and which rate timers the
steadiness window must span. The packet engine's driver, the memo bridge and its namespace read
the plan, never the spec, and ``summary.json`` records it (``wormhole_plan``, :meth:`summary`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wormsim.netsim.cc_registry import BY_NAME
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.wormhole.fields import WH_PARAMS
from wormsim.netsim.packet.wormhole.handlers import WH_HANDLER_FIELDS
from wormsim.netsim.wormhole.spec import MemoMode, WormholeSpec
from wormsim.units import PS_PER_NS, PS_PER_US_F

__all__ = ["WormholePlan", "plan_wormhole", "PortRule"]

PortRule = Literal["data", "data_and_ack"]
"""The ports that couple flows into one partition: their data routes', or data and ACK routes'."""

KernelScalar = int | float | bool


@dataclass(frozen=True)
class WormholePlan:
    """Every choice a Wormhole run makes from its spec and its congestion control.

    Attributes
    ----------
    cc : str
        The congestion control (``network.cc``).
    partition_ports : {"data", "data_and_ack"}
        The partition rule used (``auto`` resolved by the CC's ``wormhole_ports``).
    partition_ports_setting : {"auto", "data", "data_and_ack"}
        The rule as configured.
    skip_unit : {"partition", "flow"}
        What a fast-forward skips.
    steadiness : {"range", "blocks"}
        The steadiness test of a flow's window.
    memo_mode : {"readwrite", "read", "off"}
        Memoization as run: ``off`` when switched off or under flow skips, which do not memoize.
    memo_path : str or None
        The memo store file configured (see :class:`~wormsim.memo.MemoStore`).
    memo_replay : bool
        Memo hits replay their transient (the CC's ``memo_replay``, or ``memo_replay_dcqcn``).
    share_transients : bool
        Partitions formed alike at one tick are parked behind a leader (needs memo lookups and
        replay).
    sample_period_ps : int
        Period of the rate sampler.
    rate_timers : tuple of str
        ``NetworkSpec`` fields (µs) of the CC's rate timers.
    timer_span_ps : int
        What the steadiness window must span: two of the longest of those periods (0: none), or
        a plateau between two timer steps looks steady.
    window_samples : int
        Samples in the steadiness window: the configured ``window``, stretched to cover
        ``timer_span_ps``.
    patience_samples : int
        Samples after which an unsettled partition is tested on block means (0: off; partition
        skips only).
    theta, patience_windows : float
        The configured knobs the memo namespace keys (see
        :func:`~wormsim.netsim.wormhole.namespace.memo_namespace`).
    kernel : tuple of (str, scalar)
        The Wormhole kernel scalars, in the order of
        :data:`~wormsim.netsim.packet.wormhole.fields.WH_PARAMS` (see :meth:`kernel_params`).
    """

    cc: str
    partition_ports: PortRule
    partition_ports_setting: str
    skip_unit: Literal["partition", "flow"]
    steadiness: Literal["range", "blocks"]
    memo_mode: MemoMode
    memo_path: str | None
    memo_replay: bool
    share_transients: bool
    sample_period_ps: int
    rate_timers: tuple[str, ...]
    timer_span_ps: int
    window_samples: int
    patience_samples: int
    theta: float
    patience_windows: float
    kernel: tuple[tuple[str, KernelScalar], ...]

    @property
    def data_ports_only(self) -> bool:
        """Partitions (and memo keys) over data ports only."""
        return self.partition_ports == "data"

    @property
    def memo_on(self) -> bool:
        """Memo lookups and inserts happen (the run has a memo bridge)."""
        return self.memo_mode != "off"

    def kernel_params(self) -> dict[str, KernelScalar]:
        """Wormhole's scalars of :class:`~wormsim.netsim.packet.state.WhParams`, by name."""
        return dict(self.kernel)

    def summary(self) -> dict[str, object]:
        """The plan for ``summary.json``: names as in the experiment, units in the keys."""
        return {
            "cc": self.cc,
            "partition_ports": self.partition_ports,
            "partition_ports_setting": self.partition_ports_setting,
            "skip_unit": self.skip_unit,
            "steadiness": self.steadiness,
            "memo_mode": self.memo_mode,
            "memo_replay": self.memo_replay,
            "share_transients": self.share_transients,
            "sample_period_ps": self.sample_period_ps,
            "rate_timers": list(self.rate_timers),
            "timer_span_ps": self.timer_span_ps,
            "window_samples": self.window_samples,
            "patience_samples": self.patience_samples,
            "kernel_params": self.kernel_params(),
        }


def _ports(spec: WormholeSpec, cc: str) -> PortRule:
    """The partition rule ``spec`` means under ``cc``: with ``auto``, the CC's ``wormhole_ports``:
    data ports under the rate-based controls that react to marks or telemetry (HPCC, DCQCN),
    data and ACK ports under those clocked or timed by ACKs (DCTCP, TIMELY), whose senders react
    to when each ACK arrives, which a fluid phantom ACK load does not keep (DCTCP on the k=4
    fat-tree permutation with data ports: one flow 19 % off ns-3)."""
    if spec.partition_ports != "auto":
        return spec.partition_ports
    return BY_NAME[cc].wormhole_ports  # type: ignore[return-value]


def plan_wormhole(spec: WormholeSpec, net: NetworkSpec) -> WormholePlan:
    """Resolve ``spec`` under ``net``'s congestion control into the run's plan.

    Raises
    ------
    NetsimInputError
        A setting that does not hold under the congestion control
        (:meth:`~wormsim.netsim.wormhole.spec.WormholeSpec.check_cc`).
    """
    try:
        spec.check_cc(net.cc)
    except ValueError as exc:
        raise NetsimInputError(str(exc)) from None
    row = BY_NAME[net.cc]
    ports = _ports(spec, net.cc)
    partition = spec.skip_unit == "partition"
    memo_mode: MemoMode = spec.effective_memo_mode if partition else "off"
    replay = row.memo_replay or spec.memo_replay_dcqcn
    wh_ps = int(spec.sample_period_ns) * PS_PER_NS
    # a congestion control that changes rates on timers (DCQCN: rate increase every RP_TIMER,
    # alpha update, decrease): its steadiness window must span two of its longest timer
    # periods, or a plateau between two timer steps (or the min-rate floor after an incast)
    # looks steady
    timers_us = [getattr(net, f) for f in row.timer_settings]
    span_ps = 2 * int(max(timers_us) * PS_PER_US_F) if timers_us else 0
    window = max(int(spec.window), -(-span_ps // wh_ps))
    patience = (
        int(round((1.0 + spec.patience_windows) * window))
        if spec.patience_windows > 0 and partition  # its fairness gate needs the partition
        else 0
    )
    kernel: dict[str, KernelScalar] = dict(
        wh_ps=wh_ps,
        wh_ff=bool(spec.fast_forward),
        wh_window=window,
        wh_theta=float(spec.theta),
        wh_blocks=4 if spec.steadiness == "blocks" else 0,
        wh_patience=patience,
        wh_osc_trend=float(spec.oscillation_max_trend),
        wh_min_skip_ps=float(spec.min_skip_periods * wh_ps),
        wh_span_ps=int(spec.window) * wh_ps,
        wh_memo_on=bool(memo_mode != "off"),
        wh_margin_rtts=float(spec.tail_rtts),
        wh_margin_span=float(spec.tail_windows),
        wh_signal=("delivered", "cc_rate", "both").index(spec.signal),
        wh_gap=float(spec.max_rate_gap),
        wh_data_only=int(partition and ports == "data"),
        wh_partial=int(spec.partial_replay),
        wh_trend=float(spec.max_trend),
        wh_flow=bool(spec.skip_unit == "flow"),
    )
    if set(kernel) | set(WH_HANDLER_FIELDS) != {p.name for p in WH_PARAMS}:  # addresses: run.py
        raise AssertionError(f"Wormhole's kernel scalars are {sorted(kernel)}, WH_PARAMS differs")
    return WormholePlan(
        cc=net.cc,
        partition_ports=ports,
        partition_ports_setting=spec.partition_ports,
        skip_unit=spec.skip_unit,
        steadiness=spec.steadiness,
        memo_mode=memo_mode,
        memo_path=spec.memo_path,
        memo_replay=replay,
        share_transients=memo_mode != "off" and replay and spec.share_transients,
        sample_period_ps=wh_ps,
        rate_timers=tuple(row.timer_settings),
        timer_span_ps=span_ps,
        window_samples=window,
        patience_samples=patience,
        theta=spec.theta,
        patience_windows=spec.patience_windows,
        kernel=tuple((p.name, kernel[p.name]) for p in WH_PARAMS if p.name in kernel),
    )
