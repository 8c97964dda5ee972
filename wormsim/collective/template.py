"""Collective templates: one algorithm's flows and dependencies in *member position* space.

A template describes one collective instance once (positions ``0..n-1`` are the members in
ascending rank order; sizes are ranges of equal *pieces* of the buffer). :func:`instantiate` then
stamps it over every instance of a bucket at once with numpy broadcasting (arrays shaped
``[instances, template nodes]``), so no Python loop ever runs per flow or per instance.

Template nodes are flows or *gates* (zero-duration delay nodes, e.g. "all members arrived").
Dependencies come in three kinds:

- ``edges``: (child node, parent node), both in the template;
- ``inherit``: (node, position): the node depends on the ``deps`` of that member's op row;
- ``done``: (position, node): the member's op node ("collective done on this rank") depends on it.

Sizes are exact: the buffer of ``S`` bytes is cut into ``n_pieces`` pieces, piece ``q`` holding
``S // Q + (q < S % Q)`` bytes, and a node carries ``sum(sign * pieces[lo:hi])`` over its terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "NCCL_WINDOW",
    "Shape",
    "TemplateKey",
    "Template",
    "Instantiated",
    "seq",
    "par",
    "instantiate",
    "empty_template",
]

_I64 = np.int64

#: Chunk-flows in flight per connection in ``nccl_chunks`` mode (4 slices of 1 MiB).
NCCL_WINDOW = 2


@dataclass(frozen=True)
class Shape:
    """What the plan knows of a group of collective instances before choosing a template.

    Attributes
    ----------
    kind : str
        The collective (one of ``wormsim.workload.ops.COLLECTIVES``).
    n, n_servers, per_server : int
        Members, the servers they span, members on every server (0 when servers hold
        different numbers of members).
    size : int
        The op's ``size_bytes``.
    """

    kind: str
    n: int
    n_servers: int
    per_server: int
    size: int


@dataclass(frozen=True)
class TemplateKey:
    """Everything a template depends on (instances with equal keys share one template).

    Attributes
    ----------
    algorithm : str
        The algorithm (a name of :data:`wormsim.collective.algorithms.TABLE`) whose template
        builder reads the key.
    kind : str
        The collective.
    n, channels, n_servers, per_server : int
    loops : int
        Ring loops, tree chunks, p2p chunks.
    window : int
        Chunk-flows in flight per connection.
    aggregate_intra : bool
        Intra-server rings as one flow per edge (a ring within one server, hierarchical's
        intra-server phases).
    """

    algorithm: str
    kind: str
    n: int
    channels: int
    n_servers: int
    per_server: int
    loops: int
    window: int
    aggregate_intra: bool = False


def _a(x: object) -> np.ndarray:
    return np.asarray(x, dtype=_I64)


@dataclass
class Template:
    """One collective instance in position space.

    Attributes
    ----------
    n_members, n_pieces : int
    is_flow : bool[T]
        Flow (True) or gate (False) per template node.
    src, dst : int64[T]
        Member positions of a flow's endpoints (-1 for gates).
    step, channel : int64[T]
        Labels (-1 for gates).
    lo, hi, sign : int64[T, K]
        Piece ranges summed (with sign) into a flow's size.
    label_pos : int64[T]
        Member whose op row labels the node (the sender for flows).
    edge_child, edge_parent : int64[E]
    inherit_node, inherit_pos : int64[R]
    done_pos, done_node : int64[D]
    done_own : int64[*]
        Positions whose op node also depends on its own row's deps (recv rule, size-1 groups).
    n_steps : int
        Steps of the algorithm (for the intra-node latency term).
    """

    n_members: int
    n_pieces: int
    is_flow: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    step: np.ndarray
    channel: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    sign: np.ndarray
    label_pos: np.ndarray
    edge_child: np.ndarray
    edge_parent: np.ndarray
    inherit_node: np.ndarray
    inherit_pos: np.ndarray
    done_pos: np.ndarray
    done_node: np.ndarray
    done_own: np.ndarray = field(default_factory=lambda: _a([]))
    n_steps: int = 0

    @property
    def n_nodes(self) -> int:
        """Template nodes (flows and gates)."""
        return int(self.is_flow.shape[0])

    @staticmethod
    def build(
        n_members: int,
        n_pieces: int,
        *,
        src: np.ndarray,
        dst: np.ndarray,
        step: np.ndarray,
        channel: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        sign: np.ndarray | None = None,
        edges: tuple[np.ndarray, np.ndarray] = (_a([]), _a([])),
        inherit: tuple[np.ndarray, np.ndarray] = (_a([]), _a([])),
        done: tuple[np.ndarray, np.ndarray] = (_a([]), _a([])),
        n_gates: int = 0,
        gate_label_pos: np.ndarray | None = None,
        done_own: np.ndarray | None = None,
        n_steps: int = 0,
    ) -> Template:
        """Make a template of flows ``0..F-1`` followed by ``n_gates`` gates ``F..F+G-1``."""
        src, dst = _a(src), _a(dst)
        nf = src.shape[0]
        lo = _a(lo).reshape(nf, -1) if nf else np.zeros((0, 1), _I64)
        hi = _a(hi).reshape(nf, -1) if nf else np.zeros((0, 1), _I64)
        if sign is None or not nf:
            sign = np.ones_like(lo)
        else:
            sign = _a(sign).reshape(nf, -1)
        g = n_gates
        pad = np.zeros((g, lo.shape[1]), dtype=_I64)
        minus = np.full(g, -1, dtype=_I64)
        glp = np.zeros(g, dtype=_I64) if gate_label_pos is None else _a(gate_label_pos)
        return Template(
            n_members=n_members,
            n_pieces=n_pieces,
            is_flow=np.concatenate([np.ones(nf, bool), np.zeros(g, bool)]),
            src=np.concatenate([src, minus]),
            dst=np.concatenate([dst, minus]),
            step=np.concatenate([_a(step), minus]),
            channel=np.concatenate([_a(channel), minus]),
            lo=np.concatenate([lo, pad]),
            hi=np.concatenate([hi, pad]),
            sign=np.concatenate([sign, pad]),
            label_pos=np.concatenate([src, glp]),
            edge_child=_a(edges[0]),
            edge_parent=_a(edges[1]),
            inherit_node=_a(inherit[0]),
            inherit_pos=_a(inherit[1]),
            done_pos=_a(done[0]),
            done_node=_a(done[1]),
            done_own=_a([]) if done_own is None else _a(done_own),
            n_steps=n_steps,
        )


def empty_template(n_members: int) -> Template:
    """A collective without flows (a group of one): the op node just inherits its row's deps."""
    z = _a([])
    return Template.build(
        n_members,
        1,
        src=z,
        dst=z,
        step=z,
        channel=z,
        lo=z,
        hi=z,
        done_own=np.arange(n_members, dtype=_I64),
    )


def _pad_terms(arr: np.ndarray, k: int) -> np.ndarray:
    if arr.shape[1] >= k:
        return arr
    return np.concatenate([arr, np.zeros((arr.shape[0], k - arr.shape[1]), _I64)], axis=1)


def par(
    parts: list[tuple[Template, np.ndarray, int, int]], n_members: int, n_pieces: int
) -> Template:
    """Run templates side by side on disjoint members.

    Parameters
    ----------
    parts : list of (template, position map, piece offset, piece scale)
        ``position map[p]`` is the member position of the part's position ``p``; a part's piece
        ``q`` is piece ``offset + scale * q`` of the result (ranges scale accordingly).
    n_members, n_pieces : int
        Of the result.
    """
    k = max((t.lo.shape[1] for t, *_ in parts), default=1)
    offs = np.cumsum([0] + [t.n_nodes for t, *_ in parts])
    cat = np.concatenate

    def pos(t: Template, m: np.ndarray, a: np.ndarray) -> np.ndarray:
        return np.where(a >= 0, m[np.maximum(a, 0)], -1)

    return Template(
        n_members=n_members,
        n_pieces=n_pieces,
        is_flow=cat([t.is_flow for t, *_ in parts]),
        src=cat([pos(t, m, t.src) for t, m, *_ in parts]),
        dst=cat([pos(t, m, t.dst) for t, m, *_ in parts]),
        step=cat([t.step for t, *_ in parts]),
        channel=cat([t.channel for t, *_ in parts]),
        lo=cat([_pad_terms(o + s * t.lo, k) for t, _, o, s in parts]),
        hi=cat([_pad_terms(o + s * t.hi, k) for t, _, o, s in parts]),
        sign=cat([_pad_terms(t.sign, k) for t, *_ in parts]),
        label_pos=cat([m[t.label_pos] for t, m, *_ in parts]),
        edge_child=cat([t.edge_child + o for (t, *_), o in zip(parts, offs, strict=False)]),
        edge_parent=cat([t.edge_parent + o for (t, *_), o in zip(parts, offs, strict=False)]),
        inherit_node=cat([t.inherit_node + o for (t, *_), o in zip(parts, offs, strict=False)]),
        inherit_pos=cat([m[t.inherit_pos] for t, m, *_ in parts]),
        done_pos=cat([m[t.done_pos] for t, m, *_ in parts]),
        done_node=cat([t.done_node + o for (t, *_), o in zip(parts, offs, strict=False)]),
        done_own=cat([m[t.done_own] for t, m, *_ in parts]),
        n_steps=max((t.n_steps for t, *_ in parts), default=0),
    )


def seq(a: Template, b: Template) -> Template:
    """Run ``b`` after ``a`` on the same members: a phase boundary is a per-rank dependency.

    Whatever in ``b`` would inherit the deps of member ``p``'s row depends instead on what
    completes ``a`` at ``p`` (or still on the row, when ``a`` has no flow at ``p``).
    """
    off = a.n_nodes
    k = max(a.lo.shape[1], b.lo.shape[1])
    order = np.argsort(a.done_pos, kind="stable")
    dpos, dnode = a.done_pos[order], a.done_node[order]
    start = np.searchsorted(dpos, b.inherit_pos, "left")
    stop = np.searchsorted(dpos, b.inherit_pos, "right")
    cnt = stop - start
    child = np.repeat(b.inherit_node + off, cnt)
    idx = np.repeat(start - np.cumsum(cnt) + cnt, cnt) + np.arange(cnt.sum())
    parent = dnode[idx]
    cat = np.concatenate
    b_pos = np.unique(b.done_pos)
    keep_a = ~np.isin(a.done_pos, b_pos)
    return Template(
        n_members=a.n_members,
        n_pieces=a.n_pieces,
        is_flow=cat([a.is_flow, b.is_flow]),
        src=cat([a.src, b.src]),
        dst=cat([a.dst, b.dst]),
        step=cat([a.step, b.step]),
        channel=cat([a.channel, b.channel]),
        lo=cat([_pad_terms(a.lo, k), _pad_terms(b.lo, k)]),
        hi=cat([_pad_terms(a.hi, k), _pad_terms(b.hi, k)]),
        sign=cat([_pad_terms(a.sign, k), _pad_terms(b.sign, k)]),
        label_pos=cat([a.label_pos, b.label_pos]),
        edge_child=cat([a.edge_child, b.edge_child + off, child]),
        edge_parent=cat([a.edge_parent, b.edge_parent + off, parent]),
        inherit_node=cat([a.inherit_node, b.inherit_node[cnt == 0] + off]),
        inherit_pos=cat([a.inherit_pos, b.inherit_pos[cnt == 0]]),
        done_pos=cat([a.done_pos[keep_a], b.done_pos]),
        done_node=cat([a.done_node[keep_a], b.done_node + off]),
        done_own=a.done_own,
        n_steps=a.n_steps + b.n_steps,
    )


@dataclass
class Instantiated:
    """A template stamped over ``I`` instances; node ids are ``base + i * T + t``.

    Attributes
    ----------
    is_flow, src, dst, size, step, channel, label_op : arrays of length ``I * T``
    edge_node, edge_dep : direct dependencies (node ids)
    inherit_node, inherit_op : the node depends on the deps of op row ``inherit_op``
    done_op, done_dep : the op node ``done_op`` depends on node ``done_dep``
    """

    is_flow: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    step: np.ndarray
    channel: np.ndarray
    label_op: np.ndarray
    edge_node: np.ndarray
    edge_dep: np.ndarray
    inherit_node: np.ndarray
    inherit_op: np.ndarray
    done_op: np.ndarray
    done_dep: np.ndarray


def _cum(total: np.ndarray, q: np.ndarray, n_pieces: int) -> np.ndarray:
    base, rem = np.divmod(total, n_pieces)
    return base[:, None] * q[None, :] + np.minimum(q[None, :], rem[:, None])


def instantiate(
    t: Template,
    ranks: np.ndarray,
    op_ids: np.ndarray,
    sizes: np.ndarray,
    base: int,
    flow_sizes: np.ndarray | None = None,
) -> Instantiated:
    """Stamp ``t`` over instances.

    Parameters
    ----------
    t : Template
    ranks, op_ids : int64[I, n]
        Member ranks and their op ids, in position order.
    sizes : int64[I]
        Buffer size of each instance (split into ``t.n_pieces`` pieces).
    base : int
        First node id.
    flow_sizes : int64[I, T], optional
        Explicit node sizes (uneven all-to-all), overriding the piece ranges.
    """
    n_inst, nt = ranks.shape[0], t.n_nodes
    ids = base + np.arange(n_inst, dtype=_I64)[:, None] * nt  # [I, 1]
    if flow_sizes is None:
        size = np.zeros((n_inst, nt), dtype=_I64)
        for j in range(t.lo.shape[1]):
            if not np.any(t.sign[:, j]):
                continue
            seg = _cum(sizes, t.hi[:, j], t.n_pieces) - _cum(sizes, t.lo[:, j], t.n_pieces)
            size += t.sign[None, :, j] * seg
    else:
        size = flow_sizes
    srcpos = np.maximum(t.src, 0)
    dstpos = np.maximum(t.dst, 0)
    flow = np.broadcast_to(t.is_flow, (n_inst, nt))
    src = np.where(flow, ranks[:, srcpos], -1)
    dst = np.where(flow, ranks[:, dstpos], -1)
    return Instantiated(
        is_flow=flow.ravel(),
        src=src.ravel(),
        dst=dst.ravel(),
        size=np.where(flow, size, 0).ravel(),
        step=np.broadcast_to(t.step, (n_inst, nt)).ravel(),
        channel=np.broadcast_to(t.channel, (n_inst, nt)).ravel(),
        label_op=op_ids[:, t.label_pos].ravel(),
        edge_node=(ids + t.edge_child[None, :]).ravel(),
        edge_dep=(ids + t.edge_parent[None, :]).ravel(),
        inherit_node=np.concatenate(
            [(ids + t.inherit_node[None, :]).ravel(), op_ids[:, t.done_own].ravel()]
        ),
        inherit_op=np.concatenate(
            [op_ids[:, t.inherit_pos].ravel(), op_ids[:, t.done_own].ravel()]
        ),
        done_op=op_ids[:, t.done_pos].ravel(),
        done_dep=(ids + t.done_node[None, :]).ravel(),
    )
