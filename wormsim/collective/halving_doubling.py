"""Halving-doubling (Rabenseifner) all-reduce, as a template.

``p = 2**floor(log2 n)`` members take part; in reduce-scatter round ``i`` virtual rank ``v``
exchanges half of its current segment with ``v XOR 2**i`` (sizes ``S/2, S/4, ...``), then the
all-gather mirrors it. With ``n`` not a power of two, the first ``2(n-p)`` members pair up: the
even one sends its whole buffer to the odd one before (pre step) and receives the result after
(post step). Every round depends on the rank's previous round (its flow out and the flow in).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from wormsim.collective.template import Shape, Template, TemplateKey, empty_template

if TYPE_CHECKING:
    from wormsim.collective.config import CollectiveSpec

__all__ = [
    "HALVING_DOUBLING",
    "halving_doubling_template",
    "halving_doubling_key",
    "halving_doubling_build",
]

#: The algorithm's name (``collective.allreduce: halving_doubling``).
HALVING_DOUBLING = "halving_doubling"

_I64 = np.int64


def halving_doubling_template(n: int, n_channels: int = 1) -> Template:
    """Halving-doubling all-reduce over ``n`` members; channels split the buffer evenly."""
    if n <= 1:
        return empty_template(max(n, 1))
    m = int(np.floor(np.log2(n)))
    p = 1 << m
    rem = n - p
    pos_of_v = np.concatenate(
        [np.arange(rem, dtype=_I64) * 2 + 1, np.arange(2 * rem, n, dtype=_I64)]
    )  # virtual rank -> member position
    v = np.arange(p, dtype=_I64)
    q = n_channels * p  # pieces
    src, dst, step, chan, lo, hi = [], [], [], [], [], []
    ec, ep, inh_n, inh_p, done_p, done_n = [], [], [], [], [], []
    nf = 0

    def add(
        s: np.ndarray, d: np.ndarray, st: int, c: int, a: np.ndarray, b: np.ndarray
    ) -> np.ndarray:
        nonlocal nf
        ids = nf + np.arange(s.shape[0], dtype=_I64)
        nf += s.shape[0]
        src.append(s)
        dst.append(d)
        step.append(np.full(s.shape[0], st, _I64))
        chan.append(np.full(s.shape[0], c, _I64))
        lo.append(a)
        hi.append(b)
        return ids

    off = 1 if rem else 0
    for c in range(n_channels):
        cb = c * p
        # prev_out[v] / prev_in[v]: the flows of v's previous round
        if rem:
            ev = np.arange(rem, dtype=_I64) * 2
            pre = add(ev, ev + 1, 0, c, np.full(rem, cb), np.full(rem, cb + p))
            inh_n.append(pre)
            inh_p.append(ev)
        seg_lo = np.zeros(p, _I64)
        width = p
        prev_out: np.ndarray | None = None
        prev_in: np.ndarray | None = None
        rounds = [(i, True) for i in range(m)] + [(i, False) for i in reversed(range(m))]
        los = []
        for rnd, (i, rs) in enumerate(rounds):
            partner = v ^ (1 << i)
            bit = (v >> i) & 1
            if rs:
                half = width // 2
                send_lo = np.where(bit == 0, seg_lo + half, seg_lo)
                keep_lo = np.where(bit == 0, seg_lo, seg_lo + half)
                a, b = send_lo, send_lo + half
                los.append((seg_lo.copy(), width))
                seg_lo, width = keep_lo, half
            else:
                a, b = seg_lo, seg_lo + width
                seg_lo, width = los.pop()
            ids = add(pos_of_v[v], pos_of_v[partner], rnd + off, c, cb + a, cb + b)
            into = ids[partner]  # the flow v receives this round, indexed by v
            if prev_out is None:
                inh_n.append(ids)
                inh_p.append(pos_of_v[v])
                if rem:
                    odd = np.arange(rem, dtype=_I64)  # virtual ranks fed by a pre step
                    ec.append(ids[odd])
                    ep.append(pre)
            else:
                ec += [ids, ids]
                ep += [prev_out, prev_in]
            prev_out, prev_in = ids, into
        assert prev_out is not None and prev_in is not None
        done_p += [pos_of_v[v], pos_of_v[v]]
        done_n += [prev_out, prev_in]
        if rem:
            odd = np.arange(rem, dtype=_I64)
            post = add(
                pos_of_v[odd],
                pos_of_v[odd] - 1,
                2 * m + 1,
                c,
                np.full(rem, cb),
                np.full(rem, cb + p),
            )
            ec += [post, post]
            ep += [prev_out[odd], prev_in[odd]]
            done_p += [pos_of_v[odd] - 1, pos_of_v[odd]]
            done_n += [post, post]
    cat = np.concatenate
    return Template.build(
        n,
        q,
        src=cat(src),
        dst=cat(dst),
        step=cat(step),
        channel=cat(chan),
        lo=cat(lo),
        hi=cat(hi),
        edges=(cat(ec) if ec else np.zeros(0, _I64), cat(ep) if ep else np.zeros(0, _I64)),
        inherit=(cat(inh_n), cat(inh_p)),
        done=(cat(done_p), cat(done_n)),
        n_steps=2 * m + 2 * off,
    )


def halving_doubling_key(shape: Shape, channels: int, spec: CollectiveSpec) -> TemplateKey:
    """The template key of halving-doubling (one loop, no window)."""
    s = shape
    return TemplateKey(HALVING_DOUBLING, s.kind, s.n, channels, s.n_servers, s.per_server, 1, 1)


def halving_doubling_build(key: TemplateKey) -> Template:
    """The halving-doubling template of a key made by :func:`halving_doubling_key`."""
    return halving_doubling_template(key.n, key.channels)
