"""Point-to-point send/recv: one flow (or a chain of chunks) from the sender to the receiver.

Positions: 0 is the sender, 1 the receiver. The flow depends on the sender row's deps; the send
op node depends on the (last) flow; the recv op node depends on the (last) flow and on the recv
row's own deps. With chunks, chunk ``k`` waits for chunk ``k - 2`` (two in flight, like NCCL's
slices) and the first two inherit the sender's deps.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from wormsim.collective.template import Shape, Template, TemplateKey

if TYPE_CHECKING:
    from wormsim.collective.config import CollectiveSpec

__all__ = ["P2P", "P2P_WINDOW", "p2p_template", "p2p_key", "p2p_build"]

#: The algorithm's name (the DAG's ``algorithm`` column of send/recv).
P2P = "p2p"

#: Chunks of one send/recv in flight.
P2P_WINDOW = 2

_I64 = np.int64


def p2p_template(chunks: int = 1) -> Template:
    """Send/recv split into ``chunks`` equal flows."""
    k = np.arange(chunks, dtype=_I64)
    w = P2P_WINDOW
    later = k >= w
    last = k >= chunks - w
    zeros = np.zeros(chunks, _I64)
    return Template.build(
        2,
        chunks,
        src=zeros,
        dst=zeros + 1,
        step=k,
        channel=zeros,
        lo=k,
        hi=k + 1,
        edges=(k[later], k[later] - w),
        inherit=(k[~later], zeros[~later]),
        done=(np.concatenate([zeros[last], zeros[last] + 1]), np.concatenate([k[last], k[last]])),
        done_own=np.array([1], dtype=_I64),
        n_steps=1,
    )


def p2p_key(shape: Shape, channels: int, spec: CollectiveSpec) -> TemplateKey:
    """The template key of a send/recv pair: chunks of ``p2p_chunk_bytes`` (one flow when
    unset); a send and its recv share it."""
    size, chunk = shape.size, spec.p2p_chunk_bytes
    chunks = max(1, math.ceil(size / chunk)) if chunk else 1
    return TemplateKey(P2P, "send", 2, 1, shape.n_servers, 0, chunks, 1)


def p2p_build(key: TemplateKey) -> Template:
    """The send/recv template of a key made by :func:`p2p_key`."""
    return p2p_template(key.loops)
