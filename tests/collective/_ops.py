"""Hand-made ops tables following the ops contract (wormsim.workload.ops)."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from wormsim.workload.ops import OPS_SCHEMA


class OpsBuilder:
    """Append ops row by row; ``frame()`` returns the ops table."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.next_coll = 0
        self.seq: dict[int, int] = {}

    def _row(self, rank: int, **kw: object) -> int:
        op_id = len(self.rows)
        s = self.seq.get(rank, 0)
        self.seq[rank] = s + 1
        row = dict(
            op_id=op_id,
            rank=rank,
            seq=s,
            kind="comm",
            name="x",
            phase="fwd",
            stage=0,
            chunk=0,
            layer=3,
            microbatch=1,
            duration_ps=0,
            flops=0.0,
            collective="",
            group="",
            coll_id=-1,
            peer=-1,
            size_bytes=0,
            split_bytes=None,
            deps=[],
        )
        row.update(kw)
        self.rows.append(row)
        return op_id

    def compute(self, rank: int, duration_ps: int = 1000, deps: Sequence[int] = ()) -> int:
        return self._row(
            rank, kind="compute", name="gemm", duration_ps=duration_ps, deps=list(deps)
        )

    def coll(
        self,
        collective: str,
        ranks: Sequence[int],
        size: int,
        group: str = "dp",
        deps: dict[int, list[int]] | None = None,
        split: dict[int, list[int]] | None = None,
        sizes: dict[int, int] | None = None,
    ) -> dict[int, int]:
        cid = self.next_coll
        self.next_coll += 1
        out = {}
        for r in ranks:
            out[r] = self._row(
                r,
                collective=collective,
                group=group,
                coll_id=cid,
                size_bytes=(sizes or {}).get(r, size),
                deps=(deps or {}).get(r, []),
                split_bytes=(split or {}).get(r),
            )
        return out

    def p2p(
        self,
        src: int,
        dst: int,
        size: int,
        send_deps: Sequence[int] = (),
        recv_deps: Sequence[int] = (),
    ) -> tuple[int, int]:
        cid = self.next_coll
        self.next_coll += 1
        s = self._row(
            src,
            collective="send",
            group="pp",
            coll_id=cid,
            peer=dst,
            size_bytes=size,
            deps=list(send_deps),
        )
        r = self._row(
            dst,
            collective="recv",
            group="pp",
            coll_id=cid,
            peer=src,
            size_bytes=size,
            deps=list(recv_deps),
        )
        return s, r

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=OPS_SCHEMA)
