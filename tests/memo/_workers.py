"""Functions run in child processes by the store tests (importable under ``spawn``)."""

from __future__ import annotations

import os
import random

from tests.memo._graphs import namespace, partition_specs, permuted, random_specs
from wormsim.memo import MemoEntry, MemoStore, build_fcg, namespace_key


def entry_for(specs, scale: int = 1) -> MemoEntry:
    """A value that depends only on each flow's role (its position in ``random_specs``)."""
    return MemoEntry(
        end_rates_bps={s.flow_id: 1e9 * (i + 1) for i, s in enumerate(specs)},
        sent_bytes={s.flow_id: 1000 * (i + 1) * scale for i, s in enumerate(specs)},
        t_conv_ps=7_000_000,
    )


def insert_many(path: str, worker: int, seeds: list[int], barrier, results) -> None:
    """Insert permuted copies of the same partitions, in a worker-specific order."""
    try:
        store = MemoStore(path, timeout_s=60)
        keys = [namespace_key(namespace()), namespace_key(namespace(cc="dcqcn"))]
        order = [(s, k) for s in seeds for k in keys]
        random.Random(worker).shuffle(order)
        barrier.wait(timeout=60)
        created = 0
        for seed, key in order:
            specs = partition_specs(seed)
            new_specs, fmap = permuted(specs, 1000 * worker + seed)
            back = {new: old for old, new in fmap.items()}
            value = entry_for(specs)
            entry = MemoEntry(
                {f.flow_id: value.end_rates_bps[back[f.flow_id]] for f in new_specs},
                {f.flow_id: value.sent_bytes[back[f.flow_id]] for f in new_specs},
                value.t_conv_ps,
            )
            created += store.insert(build_fcg(new_specs), key, entry).created
            store.lookup(build_fcg(specs), key)
        results.put((worker, created, None))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put((worker, -1, repr(exc)))


def die_mid_insert(path: str) -> None:
    """Commit one entry, then get killed inside the write transaction of a second one."""
    import wormsim.memo.writes as writes_mod

    store = MemoStore(path)
    key = namespace_key(namespace())
    first = random_specs(1)
    store.insert(build_fcg(first), key, entry_for(first))
    original = writes_mod._insert_row

    def insert_then_die(conn, values):
        original(conn, values)
        os._exit(7)

    writes_mod._insert_row = insert_then_die
    second = random_specs(2, n_flows=5)
    store.insert(build_fcg(second), key, entry_for(second))
    os._exit(0)  # not reached
