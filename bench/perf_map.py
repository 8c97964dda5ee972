"""Profile a Wormhole run with Linux ``perf``, numba's compiled functions named.

numba's functions live in memory that ``perf`` cannot name; this runs one Table 1 workload in
Wormhole mode (cold store, as ``bench/wormhole.py --wormhole-only``) and writes
``/tmp/perf-<pid>.map`` (each compiled overload's address and its module.function) before and
after the run, which ``perf report`` reads for ``[JIT]`` samples.

Usage::

    python bench/perf_map.py --workload gpt175b-1024 --scale 0.1 &
    perf record -F 999 -g -p <pid printed as READY> -o perf.data -- sleep 60
    perf report -i perf.data --no-children --sort sym -g none

Prints the run's counters as one JSON line at the end (nothing is recorded).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import sys

import wormhole as bench_wormhole  # bench/wormhole.py
from numba.core.registry import CPUDispatcher


def _short(mangled: str) -> str:
    """``module.function`` from numba's mangled name (``_ZN7wormsim6netsim...``)."""
    m = mangled[3:] if mangled.startswith("_ZN") else mangled
    parts = []
    while m and m[0].isdigit():
        k = re.match(r"\d+", m).group(0)
        n = int(k)
        parts.append(m[len(k) : len(k) + n])
        m = m[len(k) + n :]
    return ".".join(parts[-2:]) or mangled[:60]


def write_map() -> int:
    """Write this process's perf map of every compiled numba overload; the entries written."""
    entries = set()
    for obj in gc.get_objects():
        if isinstance(obj, CPUDispatcher):
            for cres in obj.overloads.values():
                try:
                    addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
                except Exception:  # a library without code of its own
                    continue
                if addr:
                    entries.add((addr, _short(cres.fndesc.llvm_func_name)))
    rows = sorted(entries)
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        for i, (addr, name) in enumerate(rows):
            size = rows[i + 1][0] - addr if i + 1 < len(rows) else 4096
            fh.write(f"{addr:x} {min(size, 1 << 18):x} {name}\n")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="gpt175b-1024")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--cc", default="hpcc")
    args = parser.parse_args()
    cfg, dag = bench_wormhole.scaled_dag(args.workload, args.scale)
    from wormsim.netsim.packet.run import _warm

    _warm(True)
    print(f"READY {os.getpid()} ({write_map()} functions mapped)", file=sys.stderr, flush=True)
    row = bench_wormhole.run_wormhole_only(cfg, dag, args.cc, {})
    write_map()
    print(json.dumps({k: float(v) if hasattr(v, "item") else v for k, v in row.items()}))


if __name__ == "__main__":
    main()
