"""The experiment's ``sim`` section: which engine runs, its seed, and the Wormhole knobs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SimSpec", "WormholeSpec"]


class WormholeSpec(BaseModel):
    """Wormhole knobs (DESIGN §5; θ = 5 % from the paper, window and period measured).

    Defaults: the paper's l = 2000 samples at 1 µs is far longer than our flows; 5 µs × 20
    samples (a 100 µs window) of both the delivered and the CC rate, 2-RTT tails, measured on
    the full-size GPT-13B/128 HPCC iteration (``bench/results/wormhole_sensitivity.md``: 81×,
    0.03 % mean FCT error) and the tests of ``tests/netsim/test_wormhole.py`` and
    ``test_memo_bridge.py``. A 10-sample window is 2× faster on GPT-13B at the same error there,
    but turns a two-flow HPCC incast's 3 % FCT error into 17 % (its unfair rates look flat for
    50 µs), and with the delivered rate alone as signal it cost 1–2 % iteration time (queues
    of the flows' start still draining). DCQCN's window is stretched to two of its longest timer
    periods (see ``wormsim.netsim.wormhole``).

    Attributes
    ----------
    theta : float
        Steady when (max - min) / mean of the last ``window`` rate samples is below this.
    window : int
        Rate samples in the steadiness window.
    sample_period_ns : int
        Period of the per-flow rate sampler, ns.
    fast_forward, memoize : bool
        Switch the two mechanisms on or off (both off = packet mode).
    memo_path : str or None
        SQLite memo store shared across runs; ``None`` = ``~/.cache/wormsim/memo.sqlite``.
    min_skip_periods : int
        Fast-forward only if the skip is at least this many sample periods.
    signal : {"delivered", "cc_rate", "both"}
        What the steadiness test watches: each flow's delivered rate (bytes acked per sample
        period), its congestion control's sending-rate variable, or both (each must pass).
        Fast-forward always credits the window's mean delivered rate.
    max_rate_gap : float
        Steady also requires each flow's mean sending rate (its congestion control's rate, on
        the wire) to match its mean delivered rate within this fraction: a flow sending faster
        than it delivers is building a queue (0 = off). Applies to rate-based congestion
        controls only (no sending window: DCQCN, TIMELY, DCTCP).
    memo_replay_dcqcn : bool
        Replay memo hits under DCQCN. Off by default: a memo entry does not hold DCQCN's hidden
        state after a transient (alpha, target rate, timer stage), and replaying hits cost
        0.55 % iteration time on GPT-13B/128 (single flows 20 % slow); lookups and inserts still
        run, and entries found are reported as ``memo_rejected``.
    tail_rtts, tail_windows : float
        Each skip lands early enough that every flow of the partition still has
        max(``tail_rtts`` × its base RTT, ``tail_windows`` × the window span) of data at its
        steady rate to send packet by packet (the landing rule, paper D8).
    """

    model_config = ConfigDict(extra="forbid")

    theta: float = Field(default=0.05, gt=0, lt=1)
    window: int = Field(default=20, ge=2)
    sample_period_ns: int = Field(default=5000, gt=0)
    fast_forward: bool = True
    memoize: bool = True
    memo_path: str | None = None
    min_skip_periods: int = Field(default=10, ge=1)
    tail_rtts: float = Field(default=2.0, ge=1)
    tail_windows: float = Field(default=0.0, ge=0)
    signal: Literal["delivered", "cc_rate", "both"] = "both"
    max_rate_gap: float = Field(default=0.05, ge=0, lt=1)
    memo_replay_dcqcn: bool = False


class SimSpec(BaseModel):
    """How the network is simulated.

    Attributes
    ----------
    mode : {"packet", "wormhole", "flow"}
        Packet-level, packet-level with Wormhole, or max-min fair fluid.
    seed : int
        Seed of everything random in the simulation (ECMP hashing).
    routing : {"hash", "ns3"}
        ECMP path choice: our seeded hash, or the HPCC ns-3 simulator's exact choice.
    wormhole : WormholeSpec
        Wormhole knobs (used in mode ``wormhole``).
    """

    model_config = ConfigDict(extra="forbid")

    mode: Literal["packet", "wormhole", "flow"] = "packet"
    seed: int = 0
    routing: Literal["hash", "ns3"] = "hash"
    wormhole: WormholeSpec = Field(default_factory=WormholeSpec)
