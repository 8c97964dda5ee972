"""Wormhole's knobs: the ``sim.wormhole`` section of an experiment (:class:`WormholeSpec`).

What a run makes of them under its congestion control is its
:class:`~wormsim.netsim.wormhole.plan.WormholePlan`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from wormsim.netsim.cc_registry import BY_NAME

__all__ = ["WormholeSpec", "MemoMode"]

MemoMode = Literal["readwrite", "read", "off"]


class WormholeSpec(BaseModel):
    """Wormhole knobs (θ = 5 % from the paper, window and period measured).

    Defaults: the paper's l = 2000 samples at 1 µs is far longer than our flows; 5 µs × 20
    samples (a 100 µs window) of both the delivered and the CC rate, 2-RTT tails, measured on
    the full-size GPT-13B/128 HPCC iteration (``bench/results/wormhole_sensitivity.md``: 81×,
    0.03 % mean FCT error) and the tests of ``tests/netsim/test_wormhole.py`` and
    ``test_memo_bridge.py``. A 10-sample window is 2× faster on GPT-13B at the same error there,
    but turns a two-flow HPCC incast's 3 % FCT error into 17 % (its unfair rates look flat for
    50 µs), and with the delivered rate alone as signal it cost 1–2 % iteration time (queues
    of the flows' start still draining). DCQCN's window is stretched to two of its longest timer
    periods (:func:`~wormsim.netsim.wormhole.plan.plan_wormhole`).

    Attributes
    ----------
    theta : float
        Steady when (max - min) / mean of the last ``window`` rate samples is below this.
    window : int
        Rate samples in the steadiness window.
    sample_period_ns : int
        Period of the per-flow rate sampler, ns.
    fast_forward : bool
        Switch fast-forwarding on or off (with ``memo_mode="off"`` too: packet mode).
    memo_mode : {"readwrite", "read", "off"}
        Memoization: look up and store entries; only look up (the store is opened read-only and
        never written, so it may be a read-only file); or neither. A run sees the store as it
        was when it started plus the entries it learned itself
        (:mod:`wormsim.memo.session`), so its outputs depend only on its inputs and that
        snapshot, recorded as ``memo_fingerprint`` in ``summary.json``.
    memoize : bool
        Older switch, kept for compatibility: ``False`` means ``memo_mode="off"`` (and
        ``memo_mode="off"`` sets it ``False``); use ``memo_mode``.
    memo_path : str or None
        The SQLite memo store file. Precedence: this path, then the ``WORMSIM_MEMO_STORE``
        environment variable, then ``$XDG_CACHE_HOME/wormsim/memo.sqlite``
        (``~/.cache/wormsim/memo.sqlite``).
    min_skip_periods : int
        Fast-forward only if the skip is at least this many sample periods.
    steadiness : {"range", "blocks"}
        The steadiness test of each flow's window. ``range`` (default): (max - min) / mean <
        ``theta``. ``blocks``: the means of 4 consecutive blocks of the window within ``theta``
        of each other and (max - min) / mean < 2 ``theta``, which accepts a congestion control's
        stationary oscillation (HPCC's rate swings about ±5 % around a fair share on
        data-parallel rings) and still refuses a trend; it halves the events of the largest GPT
        runs but puts one flow of an HPCC incast 20 % off ns-3 when the scenarios share a memo
        store, so it is not the default (docs/wormhole.md).
    patience_windows : float
        A flow whose window has been full this many window spans since its partition formed
        without passing ``range`` is then tested on block means (as ``blocks``), with the
        delivered and the congestion-control rate each free of a trend beyond
        ``oscillation_max_trend``; and a partition holding such a flow is steady only when its
        flows deliver the same fraction of their max-min fair shares within 2 ``theta``
        (:mod:`wormsim.netsim.packet.wormhole.fairness`). HPCC's shares on a shared link drift
        towards fairness for milliseconds, slowly enough for each window to pass ``range``:
        skipped at the first steady window, three 100 MB flows sharing a NIC and a downlink were
        frozen 9 % off packet mode; with patience, within 0.6 %. Eight windows leave flows of a
        millisecond alone. Partition skips only; 0 = off.
    oscillation_max_trend : float
        The trend bound of patient flows (see ``max_trend``), on both rates.
    signal : {"delivered", "cc_rate", "both"}
        What the steadiness test watches: each flow's delivered rate (bytes acked per sample
        period), its congestion control's sending-rate variable, or both (each must pass).
        Fast-forward always credits the delivered rate (the mean of the window's newest half).
    max_rate_gap : float
        Steady also requires each flow's mean sending rate (its congestion control's rate, on
        the wire) to match its mean delivered rate within this fraction: a flow sending faster
        than it delivers is building a queue (0 = off). Applies to rate-based congestion
        controls only (no sending window: DCQCN, TIMELY, DCTCP).
    memo_replay_dcqcn : bool
        Replay memo hits under DCQCN (default). Entries keep DCQCN's state at the end of the
        transient (alpha, target rate, rate-increase stage) and a hit restores it: on
        GPT-13B/128 that brought replay's iteration-time error from 0.55 % (rate only) to
        0.05 %. False: hits are simulated and counted as ``memo_rejected``.
    partial_replay : bool
        Replay the fitting part of a stored transient instead of rejecting the hit.
    share_transients : bool
        Shadow partitions (default on): partitions that form at the same sampler tick with the
        same labelled Flow Conflict Graph and remaining bytes as an earlier one of that tick
        (the data-parallel rings of a pipeline stage, one per tensor-parallel rank) are parked
        and mirror it instead of being simulated (see :mod:`wormsim.netsim.packet.wormhole.shadow`).
        GPT-13B/128 HPCC, cold store: 13.3 M events instead of 29.0 M (99.46 % skipped) at
        0.055 % mean FCT and 0.013 % iteration-time error.
    partition_ports : {"auto", "data", "data_and_ack"}
        Which ports couple flows into one partition (see
        :mod:`wormsim.netsim.packet.wormhole.tunnel`).
        ``data``, as the paper's partitions: each flow of a data-parallel ring is its own
        partition, so ring steps recur as memo hits and shadows; other partitions' ACKs are
        tunnelled past a skipped partition's ports and skipped flows keep a phantom ACK load.
        ``data_and_ack`` also fuses flows that share only ACK ports. ``auto`` (default) is
        ``data`` under HPCC and DCQCN and ``data_and_ack`` under DCTCP and TIMELY, whose
        senders are clocked or timed by each ACK's arrival, which the fluid phantom ACK load
        does not keep (see :mod:`~wormsim.netsim.wormhole.plan`); ``summary.json`` records the
        rule used (``wormhole_plan.partition_ports``).
    skip_unit : {"partition", "flow"}
        What a fast-forward skips. ``partition`` (default, the paper's): a partition of flows
        that share ports, all at once, once every member is steady.
        ``flow``: each flow alone, once its own window is steady, while its neighbours run
        packet by packet around its rate, held on its data and ACK routes as a phantom load;
        a neighbour starting or finishing on one of its data ports rolls the skip back to
        that moment. For workloads without repeated contention patterns whose partitions
        change too often to settle as a whole (a random permutation on a fat-tree). No memo
        lookups or shadow partitions in this mode (see
        :mod:`wormsim.netsim.packet.wormhole.flowskip`);
        refused under TIMELY. The k=8 permutation under HPCC: 2.2× at the default detector,
        6.2× at ``window=10, theta=0.1`` (0.09 % mean FCT error, up to 26 % on one flow; the
        ns-3 scenarios then miss their bounds, docs/wormhole.md).
    tail_rtts, tail_windows : float
        Each skip lands early enough that every flow of the partition still has
        max(``tail_rtts`` × its base RTT, ``tail_windows`` × the window span) of data at its
        steady rate to send packet by packet.
    """

    model_config = ConfigDict(extra="forbid")

    theta: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="Steady when (max - min) / mean of the last `window` rate samples is below "
        "this.",
    )
    window: int = Field(default=20, ge=2, description="Rate samples in the steadiness window.")
    sample_period_ns: int = Field(
        default=5000, gt=0, description="Period of the per-flow rate sampler, ns."
    )
    fast_forward: bool = Field(default=True, description="Fast-forward steady partitions.")
    memo_mode: MemoMode = Field(
        default="readwrite",
        description="Memo store use: 'readwrite' (look up and store entries), 'read' (look up "
        "only; the store is never written and may be read-only) or 'off'. A run sees the store "
        "as it was when it started plus its own entries; summary.json records the snapshot's "
        "memo_fingerprint.",
    )
    memoize: bool = Field(
        default=True,
        description="Older switch kept for compatibility: false means memo_mode 'off'.",
    )
    memo_path: str | None = Field(
        default=None,
        description="Memo store file; unset: $WORMSIM_MEMO_STORE, else "
        "$XDG_CACHE_HOME/wormsim/memo.sqlite (~/.cache/wormsim/memo.sqlite).",
    )
    min_skip_periods: int = Field(
        default=10,
        ge=1,
        description="Fast-forward only if the skip is at least this many sample periods.",
    )
    tail_rtts: float = Field(
        default=2.0,
        ge=1,
        description="A skip leaves each flow at least this many base RTTs of data to send "
        "packet by packet (1 halves the tail's events at 256 GPUs but added 57 % events at "
        "1,024, docs/wormhole.md).",
    )
    tail_windows: float = Field(
        default=0.0,
        ge=0,
        description="... and at least this many steadiness-window spans (the larger wins).",
    )
    steadiness: Literal["range", "blocks"] = Field(
        default="range",
        description="Steadiness test of a flow's window: 'range' ((max - min) / mean < theta; "
        "default) or 'blocks' (the means of 4 consecutive blocks within theta and (max - min) "
        "/ mean < 2 theta: a bounded oscillation without a trend).",
    )
    patience_windows: float = Field(
        default=8.0,
        ge=0,
        description="A flow whose window has been full for this many window spans since its "
        "partition formed, without passing the 'range' test, is then tested as under 'blocks': "
        "a congestion control's stationary oscillation wider than theta (HPCC's ring flows "
        "swing +-5 % around their share) is a steady state once it shows no trend. Flows "
        "shorter than that never see it. Partition skips only (the flows must also deliver the "
        "same fraction of their max-min fair shares, within 2 theta). 0 = off.",
    )
    oscillation_max_trend: float = Field(
        default=0.01,
        ge=0,
        lt=1,
        description="With patience: the least-squares trend over the window, of both the "
        "delivered and the congestion-control rate, must move them by less than this "
        "fraction of their mean (HPCC's shares on a shared link drift for milliseconds).",
    )
    signal: Literal["delivered", "cc_rate", "both"] = Field(
        default="both",
        description="What the steadiness test watches: delivered rate, congestion-control "
        "rate, or both.",
    )
    max_rate_gap: float = Field(
        default=0.05,
        ge=0,
        lt=1,
        description="Steady also needs each flow's mean sending rate within this fraction of "
        "its delivered rate (rate-based congestion controls; 0 = off).",
    )
    max_trend: float = Field(
        default=0.025,
        ge=0,
        lt=1,
        description="Steady also needs each flow's congestion-control rate free of a trend: "
        "the least-squares line through its window moves it by less than this fraction of its "
        "mean over the window (0 = off). A rate climbing slowly inside the range test (DCTCP's "
        "window-limited incast: 3.5 % per window) is still converging.",
    )
    memo_replay_dcqcn: bool = Field(
        default=True,
        description="Replay memo hits under DCQCN, restoring the alpha, target rate and stage "
        "the entry kept (false: hits are simulated and counted as memo_rejected).",
    )
    partial_replay: bool = Field(
        default=False,
        description="Replay the part of a stored transient that fits when a flow of the "
        "partition ends before the whole of it (the flows stop their tail margin short of the "
        "end), instead of simulating the partition packet by packet.",
    )
    share_transients: bool = Field(
        default=True,
        description="Shadow partitions: a partition that forms at one tick with the same "
        "labelled FCG and remaining bytes as another mirrors it instead of being simulated "
        "(see wormsim.netsim.packet.wormhole.shadow).",
    )
    partition_ports: Literal["data_and_ack", "data", "auto"] = Field(
        default="auto",
        description="Ports that couple flows into one partition: their data and ACK routes, or "
        "their data routes only (other partitions' ACKs then pass a skipped partition's frozen "
        "ports at its queue's drain time, ACKs for a skipped flow are held by its skip, and "
        "skipped or shadowed flows keep loading their ACK routes); 'auto' (default): data "
        "routes under HPCC and DCQCN, data and ACK routes under DCTCP and TIMELY.",
    )

    skip_unit: Literal["partition", "flow"] = Field(
        default="partition",
        description="What a fast-forward skips: a whole partition once all its flows are "
        "steady (default, with memoization), or each flow alone once it is steady, its rate "
        "held as a phantom load on its routes while its neighbours run packet by packet "
        "('flow'; no memo or shadow partitions).",
    )

    @field_validator("memo_mode", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML 1.1 reads a bare ``off`` as false: take it as the mode it spells."""
        return "off" if value is False else value

    @model_validator(mode="after")
    def _one_memo_switch(self) -> WormholeSpec:
        """Keep ``memoize`` and ``memo_mode`` consistent (``off`` either way)."""
        explicit = "memo_mode" in self.model_fields_set
        if not self.memoize and explicit and self.memo_mode != "off":
            raise ValueError(
                f"memoize=false contradicts memo_mode={self.memo_mode!r}; drop memoize "
                "(memo_mode replaces it)"
            )
        if not self.memoize:
            self.memo_mode = "off"
        elif self.memo_mode == "off":
            self.memoize = False
        return self

    def check_cc(self, cc: str) -> None:
        """Refuse settings that do not hold under congestion control ``cc``.

        Raises
        ------
        ValueError
            ``skip_unit="flow"`` under a delay-based control (TIMELY): a skipped flow loads
            its route as a fluid that adds no queueing delay, which such a control does not
            see (docs/wormhole.md).
        """
        c = BY_NAME[cc]
        if self.skip_unit == "flow" and c.delay_based:
            raise ValueError(
                f"sim.wormhole.skip_unit = 'flow' does not work under network.cc = {cc}: a "
                "skipped flow loads its route as a fluid that adds no queueing delay, and "
                f"{c.title} reacts to delays (under TIMELY two ns-3 scenarios 10 % and 50 % "
                "off); use skip_unit 'partition'"
            )

    @property
    def effective_memo_mode(self) -> MemoMode:
        """``memo_mode``, or ``"off"`` when ``memoize`` is false (also after ``model_copy``)."""
        return "off" if not self.memoize else self.memo_mode
