"""The first-run notice: said exactly when the engine's kernels are not in numba's cache."""

from __future__ import annotations

from wormsim.netsim.common import warmup
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet


def test_notice_only_when_the_kernels_must_compile(tmp_path, monkeypatch):
    dag, topo = warmup.tiny_scenario()
    run_packet(dag, topo, NetworkSpec(cc="hpcc"))  # compiles or loads, and caches
    assert warmup.kernels_cached("packet") and warmup.compile_notice("packet") is None
    empty = tmp_path / "no_cache_here"
    empty.mkdir()
    monkeypatch.setattr(warmup, "__file__", str(empty / "warmup.py"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert not warmup.kernels_cached("packet")
    assert "first run only" in (warmup.compile_notice("wormhole") or "")


def test_pipeline_says_it_compiles(tmp_path, monkeypatch):
    import yaml

    from tests.pipelines.conftest import TINY, invoke

    monkeypatch.setattr(warmup, "kernels_cached", lambda mode: False)
    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    r = invoke("pipeline", "run", exp, "-o", tmp_path / "run", "--mode", "flow")
    assert r.exit_code == 0, r.output
    assert "compiling the flow-mode kernels (first run only" in r.output
