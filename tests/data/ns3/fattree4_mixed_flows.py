"""flow.txt of the fattree4-mixed-* scenarios: long and short flows into a few hot receivers of
the k=4 fat-tree (hosts 0-15), staggered starts at whole nanoseconds.

    python tests/data/ns3/fattree4_mixed_flows.py SEED N_LONG N_SHORT N_DST LONG_WIN_NS SHORT_WIN_NS

``random.Random(SEED)`` picks N_DST receivers, then the long flows (2-10 MB in whole MB, start
uniform in [0, LONG_WIN_NS) ns), then the short ones (50-500 KB in 10 KB steps, start in
[0, SHORT_WIN_NS) ns); each flow goes to one of the receivers from any other host. Lines are
sorted by start (ns-3 reads flows in start order); a start is written so that ns-3.17 (the floor
of the double's exact value times 10^9) and a reader taking ``int(float(s) * 1e9)`` both get the
intended nanosecond: 9 decimals, with a trailing ``1`` (+0.1 ns) where the double falls short.
"""

from __future__ import annotations

import math
import random
import sys
from fractions import Fraction

HOSTS = 16
T0_NS = 2_000_000_000  # flows start at 2.0 s of ns-3 time and later


def _as_read(s: str) -> tuple[int, int]:
    return math.floor(Fraction(float(s)) * 10**9), int(float(s) * 1e9)


def start_text(ns: int) -> str:
    t = T0_NS + ns
    s = f"{t // 10**9}.{t % 10**9:09d}"
    if _as_read(s) != (t, t):
        s += "1"
    assert _as_read(s) == (t, t), (ns, s)
    return s


def flows(seed: int, n_long: int, n_short: int, n_dst: int, long_win: int, short_win: int):
    rng = random.Random(seed)
    dsts = rng.sample(range(HOSTS), n_dst)
    out = []
    for n, sizes, win in (
        (n_long, lambda: rng.randint(2, 10) * 1_000_000, long_win),
        (n_short, lambda: rng.randint(5, 50) * 10_000, short_win),
    ):
        for _ in range(n):
            dst = rng.choice(dsts)
            src = rng.choice([h for h in range(HOSTS) if h != dst])
            out.append((src, dst, sizes(), rng.randrange(0, win)))
    out.sort(key=lambda f: f[3])
    return out


def flow_txt(*args: int) -> str:
    fl = flows(*args)
    lines = [str(len(fl))] + [f"{a} {b} 3 100 {size} {start_text(t)}" for a, b, size, t in fl]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(flow_txt(*(int(x) for x in sys.argv[1:7])))
