"""Test-wide fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_memo_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Each test gets its own default memo store, so Wormhole runs never see another test's (or
    the user's) entries and stay deterministic."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))
    monkeypatch.delenv("WORMSIM_MEMO_STORE", raising=False)
