"""Rate quantizers: how a flow's sending rate becomes an FCG vertex weight.

Exact float rates never repeat, so the Flow Conflict Graph weights each flow by an integer *rate
bucket*. Two quantizers are offered; the default is :class:`LogRateQuantizer` with ``quantum=0.05``.

Why relative (log-scale) buckets of 5 %:

* The steady-state detector already treats a flow as steady when its rate spreads by less than
  ``theta = 5 %`` of its mean (paper Eq. 6), and the rate estimate is only known to within
  ``theta / (1 - theta)`` (Theorem 2). Rates closer than that are indistinguishable to the engine;
  buckets finer than ``theta`` would split one contention pattern into several keys (fewer hits),
  coarser ones would let visibly different transients share one (more error).
* Relative buckets are scale-free: they need no line rate, so one quantizer serves partitions that
  mix 100 G and 400 G links and flows that start at line rate alike, and the error they introduce
  is the same fraction at every speed.

A rate that sits on a bucket boundary can land on either side of it in two runs; that costs a memo
miss, never a wrong hit. Rates below ``floor_bps`` (idle or paused flows) share bucket 0.

:class:`LineRateQuantizer` is the alternative: the rate as a fraction of a reference line rate,
rounded to ``1/steps``; uniform absolute resolution, hence coarse for slow flows.

The quantizer's :attr:`spec` string is stored with every memo entry, and entries built with a
different quantizer never match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from wormsim.memo.errors import MemoError

__all__ = [
    "RateQuantizer",
    "LogRateQuantizer",
    "LineRateQuantizer",
    "DEFAULT_QUANTIZER",
    "quantizer_from_spec",
]


@runtime_checkable
class RateQuantizer(Protocol):
    """Maps a rate in bits/s to an integer bucket; :attr:`spec` names the quantizer exactly."""

    @property
    def spec(self) -> str:  # pragma: no cover - protocol
        """A stable string that identifies the quantizer and all its parameters."""
        ...

    def bucket(self, rate_bps: float) -> int:  # pragma: no cover - protocol
        """The bucket of ``rate_bps``."""
        ...

    def representative(self, bucket: int) -> float:  # pragma: no cover - protocol
        """A rate (bits/s) inside ``bucket``; its centre."""
        ...


def _check_rate(rate_bps: float) -> float:
    r = float(rate_bps)
    if not math.isfinite(r) or r < 0:
        raise MemoError(f"a flow rate must be a finite number >= 0 bits/s, got {rate_bps!r}")
    return r


@dataclass(frozen=True)
class LogRateQuantizer:
    """Relative buckets on a log scale: bucket ``k >= 1`` is centred on
    ``floor_bps * (1 + quantum) ** (k - 1)`` and spans a factor ``1 + quantum``.

    Parameters
    ----------
    quantum : float
        Relative bucket width (0.05 = 5 %), in (0, 1].
    floor_bps : float
        Rates below this are "idle" and share bucket 0.

    Examples
    --------
    >>> q = LogRateQuantizer()
    >>> q.bucket(100e9) == q.bucket(101e9), q.bucket(100e9) == q.bucket(110e9)
    (True, False)
    >>> q.bucket(0.0)
    0
    """

    quantum: float = 0.05
    floor_bps: float = 1e6

    def __post_init__(self) -> None:
        if not (0 < self.quantum <= 1):
            raise MemoError(f"rate quantum must be in (0, 1], got {self.quantum}")
        if not (math.isfinite(self.floor_bps) and self.floor_bps > 0):
            raise MemoError(f"rate floor must be > 0 bits/s, got {self.floor_bps}")

    @property
    def spec(self) -> str:
        """``'log:q=0.05:floor=1e+06'``."""
        return f"log:q={self.quantum:g}:floor={self.floor_bps:g}"

    def bucket(self, rate_bps: float) -> int:
        """The bucket of ``rate_bps`` (0 below the floor)."""
        r = _check_rate(rate_bps)
        if r < self.floor_bps:
            return 0
        return 1 + round(math.log(r / self.floor_bps) / math.log1p(self.quantum))

    def representative(self, bucket: int) -> float:
        """The centre rate of ``bucket`` (0.0 for bucket 0)."""
        if bucket <= 0:
            return 0.0
        return self.floor_bps * (1.0 + self.quantum) ** (bucket - 1)


@dataclass(frozen=True)
class LineRateQuantizer:
    """The rate as a fraction of ``line_rate_bps``, rounded to ``1 / steps``.

    Parameters
    ----------
    line_rate_bps : float
        Reference (bottleneck) line rate.
    steps : int
        Buckets per line rate (64: a resolution of about 1.6 % of the line rate).

    Examples
    --------
    >>> LineRateQuantizer(100e9).bucket(50e9)
    32
    """

    line_rate_bps: float
    steps: int = 64

    def __post_init__(self) -> None:
        if not (math.isfinite(self.line_rate_bps) and self.line_rate_bps > 0):
            raise MemoError(f"line rate must be > 0 bits/s, got {self.line_rate_bps}")
        if int(self.steps) != self.steps or self.steps < 1:
            raise MemoError(f"steps must be a positive integer, got {self.steps}")

    @property
    def spec(self) -> str:
        """``'line:rate=1e+11:steps=64'``."""
        return f"line:rate={self.line_rate_bps:g}:steps={int(self.steps)}"

    def bucket(self, rate_bps: float) -> int:
        """``round(rate / line_rate * steps)``."""
        return round(_check_rate(rate_bps) / self.line_rate_bps * self.steps)

    def representative(self, bucket: int) -> float:
        """``bucket / steps * line_rate``."""
        return max(bucket, 0) / self.steps * self.line_rate_bps


DEFAULT_QUANTIZER: RateQuantizer = LogRateQuantizer()


def quantizer_from_spec(spec: str) -> RateQuantizer:
    """Rebuild a quantizer from its :attr:`~RateQuantizer.spec` string.

    Examples
    --------
    >>> quantizer_from_spec(LogRateQuantizer(0.1).spec) == LogRateQuantizer(0.1)
    True
    """
    try:
        kind, *fields = spec.split(":")
        kv = dict(f.split("=", 1) for f in fields)
        if kind == "log":
            return LogRateQuantizer(float(kv["q"]), float(kv["floor"]))
        if kind == "line":
            return LineRateQuantizer(float(kv["rate"]), int(kv["steps"]))
    except (KeyError, ValueError) as exc:
        raise MemoError(f"bad rate quantizer spec {spec!r}: {exc}") from None
    raise MemoError(f"unknown rate quantizer {spec!r}; expected 'log:…' or 'line:…'")
