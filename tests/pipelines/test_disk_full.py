"""A full disk under every writer: exit 2, the one disk-full message, nothing half-written."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import matplotlib.figure
import polars as pl
import pytest

from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.formats import hpcc_io

from .conftest import invoke

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _polars_full(*args, **kwargs):
    raise pl.exceptions.ComputeError("failed to write: No space left on device (os error 28)")


def _os_full(*args, **kwargs):
    raise ENOSPC


real_fsync = os.fsync
seen_fsyncs: list[int] = []


def _fsync_full(fd):
    seen_fsyncs.append(fd)
    if len(seen_fsyncs) > 3:  # the first few files are written, then the disk is full
        raise ENOSPC
    real_fsync(fd)


WRITERS = {
    "parquet through polars": (pl.DataFrame, "write_parquet", _polars_full),
    "text and JSON": (Path, "write_text", _os_full),
    "plots": (matplotlib.figure.Figure, "savefig", _os_full),
    "fsync of any file": (os, "fsync", _fsync_full),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_full_disk_is_a_clean_error_whatever_writes(tmp_path, tiny, monkeypatch, writer):
    owner, name, full = WRITERS[writer]
    seen_fsyncs.clear()
    monkeypatch.setattr(owner, name, full)
    r = invoke("pipeline", "run", tiny, "-o", tmp_path / "run", "--mode", "flow")
    assert r.exit_code == 2, r.output
    assert "no space left on the device" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "run").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]  # no staging left


def test_writing_a_topology_is_atomic(tmp_path, monkeypatch):
    topo = Topology.from_links(3, [2], [(0, 2, 100e9, 1_000_000), (1, 2, 100e9, 1_000_000)])
    path = tmp_path / "topology.txt"
    hpcc_io.write_topology(topo, path)
    before = path.read_text()
    monkeypatch.setattr(os, "fsync", _os_full)
    with pytest.raises(OSError, match="No space left"):
        hpcc_io.write_topology(topo, path)
    assert path.read_text() == before  # the old file is whole
    assert [p.name for p in tmp_path.iterdir()] == ["topology.txt"]
