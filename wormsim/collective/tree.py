"""Double binary tree all-reduce (NCCL Tree), as a template.

Across servers: NCCL's double binary tree over server indices (tree 0 by the lowest-set-bit rule
rooted at 0; tree 1 mirrors it for an even count, shifts it by one for an odd count). Inside a
server: a chain from the server's head GPU (rotated per channel). Channel ``c`` uses tree
``c % 2``, so with an even channel count each tree carries half the data. Each channel's share is
streamed in ``chunks`` pipelined chunks: up (reduce) and down (broadcast) overlap.

Dependencies per chunk ``j`` (edge ``v -> parent(v)``):

- up ``v -> p`` waits for the chunk-``j`` up flows of ``v``'s children and for chunk ``j-1`` on the
  same edge; chunk 0 waits for ``v``'s op deps;
- down ``p -> v`` waits for the chunk-``j`` down flow into ``p`` (or, at the root, the chunk-``j``
  up flows into the root, and the root's op deps for chunk 0) and for chunk ``j-1`` on the edge;
- a member's op node waits for every last-chunk flow that touches it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from wormsim.collective.template import Shape, Template, TemplateKey, empty_template

if TYPE_CHECKING:
    from wormsim.collective.config import CollectiveSpec

__all__ = [
    "TREE",
    "btree_parent",
    "dtree_parents",
    "tree_parents",
    "tree_template",
    "tree_key",
    "tree_build",
]

#: The algorithm's name (``collective.allreduce: tree``, the DAG's ``algorithm`` column).
TREE = "tree"

_I64 = np.int64


def btree_parent(n: int) -> np.ndarray:
    """Parent of each node of NCCL's binary tree 0 over ``n`` nodes (root 0 has parent -1)."""
    r = np.arange(n, dtype=_I64)
    bit = r & -r  # lowest set bit
    up = (r ^ bit) | (bit << 1)
    up = np.where(up >= n, r ^ bit, up)
    up[0] = -1
    return up


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents in NCCL's two trees over ``n`` nodes (mirror for even ``n``, shift for odd)."""
    p0 = btree_parent(n)
    r = np.arange(n, dtype=_I64)
    if n % 2 == 1:
        pp = p0[(r - 1) % n]
        p1 = np.where(pp < 0, -1, (pp + 1) % n)
    else:
        pp = p0[n - 1 - r]
        p1 = np.where(pp < 0, -1, n - 1 - pp)
    return p0, p1


def tree_parents(n_servers: int, per_server: int, channel: int) -> np.ndarray:
    """Parent (member position, -1 at the root) of every member in channel ``channel``'s tree.

    Member position ``s * per_server + j`` is local GPU ``j`` of server ``s``.
    """
    inter = dtree_parents(n_servers)[channel % 2]
    g = per_server
    chain = np.roll(np.arange(g, dtype=_I64), -(channel // 2))  # chain order, head first
    parent = np.full(n_servers * g, -1, dtype=_I64)
    heads = np.arange(n_servers, dtype=_I64) * g + chain[0]
    # chain: position i of the chain hangs under position i-1
    for s_off in range(1, g):
        parent[np.arange(n_servers) * g + chain[s_off]] = (
            np.arange(n_servers, dtype=_I64) * g + chain[s_off - 1]
        )
    has_up = inter >= 0
    parent[heads[has_up]] = heads[inter[has_up]]
    return parent


def tree_template(n_servers: int, per_server: int, n_channels: int, chunks: int) -> Template:
    """Double binary tree all-reduce over ``n_servers * per_server`` members.

    Parameters
    ----------
    n_servers, per_server : int
        Shape of the group (members per server must be uniform; pass ``per_server=1`` and
        ``n_servers=n`` to build the tree over ranks).
    n_channels : int
        Channel ``c`` runs tree ``c % 2`` on ``1/n_channels`` of the buffer.
    chunks : int
        Pipelined chunks per channel.
    """
    n = n_servers * per_server
    if n <= 1:
        return empty_template(max(n, 1))
    k_ch = chunks
    ne = n - 1
    srcs, dsts, steps, chans, pieces = [], [], [], [], []
    ec, ep, inh_n, inh_p, done_p, done_n = [], [], [], [], [], []
    nf_per_ch = 2 * k_ch * ne
    for c in range(n_channels):
        par = tree_parents(n_servers, per_server, c)
        v = np.flatnonzero(par >= 0).astype(_I64)  # edge e: v[e] -> par[v[e]]
        pv = par[v]
        root = int(np.flatnonzero(par < 0)[0])
        edge_of = np.full(n, -1, dtype=_I64)
        edge_of[v] = np.arange(ne, dtype=_I64)
        base = c * nf_per_ch
        jj = np.arange(k_ch, dtype=_I64)[:, None]
        ee = np.arange(ne, dtype=_I64)[None, :]

        def up(j: np.ndarray, e: np.ndarray, base: int = base) -> np.ndarray:
            return base + j * ne + e

        def dn(j: np.ndarray, e: np.ndarray, base: int = base) -> np.ndarray:
            return base + (k_ch + j) * ne + e

        srcs += [np.broadcast_to(v, (k_ch, ne)).ravel(), np.broadcast_to(pv, (k_ch, ne)).ravel()]
        dsts += [np.broadcast_to(pv, (k_ch, ne)).ravel(), np.broadcast_to(v, (k_ch, ne)).ravel()]
        steps += [
            np.broadcast_to(jj, (k_ch, ne)).ravel(),
            np.broadcast_to(jj + k_ch, (k_ch, ne)).ravel(),
        ]
        chans.append(np.full(2 * k_ch * ne, c, dtype=_I64))
        pieces += [np.broadcast_to(c * k_ch + jj, (k_ch, ne)).ravel()] * 2
        # up: children's up flows (child edge e2 with par[v[e2]] = v[e] non-root)
        e2 = np.flatnonzero(edge_of[pv] >= 0)
        e_parent_edge = edge_of[pv[e2]]
        ec.append(up(jj, e_parent_edge[None, :]).ravel())
        ep.append(up(jj, e2[None, :]).ravel())
        # down: from a non-root parent, the down flow into the parent
        nr = np.flatnonzero(pv != root)
        at_root = np.flatnonzero(pv == root)
        jv = np.arange(k_ch, dtype=_I64)[:, None]
        ec.append(dn(jv, nr[None, :]).ravel())
        ep.append(dn(jv, edge_of[pv[nr]][None, :]).ravel())
        # down from the root: all up flows into the root, same chunk
        cr, pr = np.meshgrid(at_root, at_root, indexing="ij")
        ec.append(dn(jv, cr.ravel()[None, :]).ravel())
        ep.append(up(jv, pr.ravel()[None, :]).ravel())
        # same edge, previous chunk
        if k_ch > 1:
            jp = np.arange(1, k_ch, dtype=_I64)[:, None]
            ec += [up(jp, ee).ravel(), dn(jp, ee).ravel()]
            ep += [up(jp - 1, ee).ravel(), dn(jp - 1, ee).ravel()]
        # chunk 0: up flows inherit the sender's deps; root's down flows inherit the root's
        inh_n += [up(np.int64(0), np.arange(ne, dtype=_I64)), dn(np.int64(0), at_root)]
        inh_p += [v, np.full(at_root.shape[0], root, dtype=_I64)]
        # done: every last-chunk flow touching the member
        last = np.concatenate([up(np.int64(k_ch - 1), ee[0]), dn(np.int64(k_ch - 1), ee[0])])
        done_p += [v, pv, pv, v]
        done_n += [last[:ne], last[:ne], last[ne:], last[ne:]]
    cat = np.concatenate
    piece = cat(pieces)
    return Template.build(
        n,
        n_channels * k_ch,
        src=cat(srcs),
        dst=cat(dsts),
        step=cat(steps),
        channel=cat(chans),
        lo=piece,
        hi=piece + 1,
        edges=(cat(ec), cat(ep)),
        inherit=(cat(inh_n), cat(inh_p)),
        done=(cat(done_p), cat(done_n)),
        n_steps=2 * (per_server - 1) + 2 * max(1, int(np.log2(max(n_servers, 1)))),
    )


def tree_key(shape: Shape, channels: int, spec: CollectiveSpec) -> TemplateKey:
    """The template key of a double binary tree: each channel's share in chunks of
    ``tree_chunk_bytes``; members of servers of unequal size form a tree of single members."""
    s = shape
    ns, ps = (s.n_servers, s.per_server) if s.per_server > 0 else (s.n, 1)
    chunks = max(1, math.ceil(s.size / channels / spec.tree_chunk_bytes))
    return TemplateKey(TREE, s.kind, s.n, channels, ns, ps, chunks, 1)


def tree_build(key: TemplateKey) -> Template:
    """The tree template of a key made by :func:`tree_key`."""
    return tree_template(key.n_servers, key.per_server, key.channels, key.loops)
