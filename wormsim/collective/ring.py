"""Ring reduce-scatter, all-gather and all-reduce (NCCL / SimAI style), as templates.

Ring order: members in ascending rank, so a server's members are consecutive and the intra-server
order is chained across servers (NCCL's flat rings). When every server holds ``g > 1`` members,
channel ``c`` rotates each server's segment by ``c``, so channels enter and leave a server through
different GPUs (hence NICs).

Per channel the buffer is ``n`` chunks; in step ``k`` ring index ``r`` sends chunk
``(r - 1 - k) mod n`` during reduce-scatter and ``(r - k') mod n`` during all-gather (NCCL's
order), to ring index ``r + 1``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from wormsim.collective.errors import CollectiveError
from wormsim.collective.template import NCCL_WINDOW, Shape, Template, TemplateKey, empty_template

if TYPE_CHECKING:
    from wormsim.collective.config import CollectiveSpec

__all__ = [
    "RING",
    "RING_KINDS",
    "ring_steps",
    "ring_orders",
    "ring_template",
    "ring_aggregate_template",
    "ring_key",
    "ring_build",
]

#: The algorithm's name (``collective.allreduce: ring``, the DAG's ``algorithm`` column).
RING = "ring"
#: Collective kinds a ring implements.
RING_KINDS = ("allreduce", "reducescatter", "allgather")

_I64 = np.int64


def ring_steps(kind: str, n: int) -> int:
    """Steps of a ring collective: ``2(n-1)`` for all-reduce, ``n-1`` otherwise."""
    if kind not in RING_KINDS:
        raise CollectiveError(f"ring does not implement {kind!r}; use one of {RING_KINDS}")
    return 2 * (n - 1) if kind == "allreduce" else n - 1


def ring_orders(n: int, n_channels: int, per_server: int) -> np.ndarray:
    """Ring order (member positions) per channel, ``int64[n_channels, n]``.

    Parameters
    ----------
    n : int
        Members.
    n_channels : int
    per_server : int
        Members on every server (0 when servers hold different numbers of members: no rotation).
    """
    base = np.arange(n, dtype=_I64)
    if per_server <= 1 or per_server >= n or n % per_server:
        return np.broadcast_to(base, (n_channels, n)).copy()
    seg = base.reshape(n // per_server, per_server)
    return np.stack([np.roll(seg, -c, axis=1).ravel() for c in range(n_channels)])


def _chunk(kind: str, n: int, r: np.ndarray, k: np.ndarray) -> np.ndarray:
    if kind == "allgather":
        return (r - k) % n
    if kind == "reducescatter":
        return (r - 1 - k) % n
    return np.where(k < n - 1, (r - 1 - k) % n, (r - (k - (n - 1))) % n)


def ring_template(
    kind: str,
    n: int,
    n_channels: int,
    per_server: int = 0,
    loops: int = 1,
    window: int = 1,
) -> Template:
    """Step-by-step ring: one flow per (loop, step, ring index, channel).

    Parameters
    ----------
    kind : {"allreduce", "reducescatter", "allgather"}
    n, n_channels : int
    per_server : int
        See :func:`ring_orders`.
    loops : int
        NCCL loops (1 for the ``step`` granularity); loops are balanced (equal bytes).
    window : int
        Flows in flight per connection: flow ``q`` on a connection waits for flow ``q - window``
        (1: the step-(k-1) flow out of the rank, as SimAI; 2: NCCL's 4 slices of two 2 MiB chunks).

    Notes
    -----
    Flow ``q = loop * S + k`` from ring index ``r`` on channel ``c`` depends on the flow into ``r``
    at step ``k - 1`` (same loop and channel) and on flow ``q - window`` out of ``r``; the first
    ``window`` flows out of ``r`` depend on ``r``'s op deps. The op node of a member depends on
    the last ``window`` flows into and out of it on every channel.
    """
    if n <= 1:
        return empty_template(max(n, 1))
    s = ring_steps(kind, n)
    order = ring_orders(n, n_channels, per_server)
    shape = (loops, s, n, n_channels)
    ll, kk, rr, cc = (a.ravel() for a in np.indices(shape, dtype=_I64))
    f = np.arange(ll.shape[0], dtype=_I64)

    def fid(l_: np.ndarray, k_: np.ndarray, r_: np.ndarray, c_: np.ndarray) -> np.ndarray:
        return ((l_ * s + k_) * n + r_) * n_channels + c_

    q = ll * s + kk
    piece = (ll * n_channels + cc) * n + _chunk(kind, n, rr, kk)
    data = kk >= 1
    credit = q >= window
    qc = q[credit] - window
    edges_child = np.concatenate([f[data], f[credit]])
    edges_parent = np.concatenate(
        [
            fid(ll[data], kk[data] - 1, (rr[data] - 1) % n, cc[data]),
            fid(qc // s, qc % s, rr[credit], cc[credit]),
        ]
    )
    src = order[cc, rr]
    dst = order[cc, (rr + 1) % n]
    first = ~credit
    last = q >= loops * s - window
    return Template.build(
        n,
        loops * n_channels * n,
        src=src,
        dst=dst,
        step=q,
        channel=cc,
        lo=piece,
        hi=piece + 1,
        edges=(edges_child, edges_parent),
        inherit=(f[first], src[first]),
        done=(np.concatenate([src[last], dst[last]]), np.concatenate([f[last], f[last]])),
        n_steps=s,
    )


def ring_aggregate_template(kind: str, n: int) -> Template:
    """Intra-server ring, one flow per ring edge carrying everything that edge carries.

    A gate (all members arrived) precedes the flows; member ``r``'s op node depends on the flows
    into and out of it. Edge ``r -> r+1`` carries every chunk except ``r`` during reduce-scatter
    and every chunk except ``r + 1`` during all-gather (all-reduce: both), i.e. ``(n-1)/n * S``
    per phase.
    """
    if n <= 1:
        return empty_template(max(n, 1))
    r = np.arange(n, dtype=_I64)
    nxt = (r + 1) % n
    full_lo, full_hi = np.zeros(n, _I64), np.full(n, n, _I64)
    terms_lo, terms_hi, terms_sign = [], [], []
    if kind in ("allreduce", "reducescatter"):
        terms_lo += [full_lo, r]
        terms_hi += [full_hi, r + 1]
        terms_sign += [np.ones(n, _I64), -np.ones(n, _I64)]
    if kind in ("allreduce", "allgather"):
        terms_lo += [full_lo, nxt]
        terms_hi += [full_hi, nxt + 1]
        terms_sign += [np.ones(n, _I64), -np.ones(n, _I64)]
    if not terms_lo:
        raise CollectiveError(f"ring does not implement {kind!r}; use one of {RING_KINDS}")
    gate = n
    return Template.build(
        n,
        n,
        src=r,
        dst=nxt,
        step=np.zeros(n, _I64),
        channel=np.zeros(n, _I64),
        lo=np.stack(terms_lo, axis=1),
        hi=np.stack(terms_hi, axis=1),
        sign=np.stack(terms_sign, axis=1),
        edges=(r, np.full(n, gate, _I64)),
        inherit=(np.full(n, gate, _I64), r),
        done=(np.concatenate([r, nxt]), np.concatenate([r, r])),
        n_gates=1,
        n_steps=ring_steps(kind, n),
    )


def ring_key(shape: Shape, channels: int, spec: CollectiveSpec) -> TemplateKey:
    """The template key of a ring: one aggregated flow per edge inside one server
    (``intra_node: aggregate``), else NCCL loops and window of the granularity."""
    s = shape
    if s.n_servers <= 1 and spec.intra_node == "aggregate":
        return TemplateKey(RING, s.kind, s.n, 1, 1, s.n, 1, 1, aggregate_intra=True)
    chunked = spec.granularity == "nccl_chunks"
    loops = max(1, math.ceil(s.size / (channels * s.n * spec.nccl_chunk_bytes))) if chunked else 1
    window = NCCL_WINDOW if chunked else 1
    return TemplateKey(RING, s.kind, s.n, channels, s.n_servers, s.per_server, loops, window)


def ring_build(key: TemplateKey) -> Template:
    """The ring template of a key made by :func:`ring_key`."""
    if key.aggregate_intra:
        return ring_aggregate_template(key.kind, key.n)
    return ring_template(key.kind, key.n, key.channels, key.per_server, key.loops, key.window)
