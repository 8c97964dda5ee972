"""Small models for fast, exact workload tests, and the real AICB workload."""

from __future__ import annotations

import polars as pl
import pytest

from tests.workload._aicb import REAL
from tests.workload._ops import SMALL_MOE
from wormsim.workload.aicb import AicbWorkload, aicb_to_ops, read_aicb
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec


@pytest.fixture
def small_model() -> ModelSpec:
    """A dense GPT-like model: 8 layers, h = 512, 8 heads, tiny vocabulary."""
    return ModelSpec(
        name="small", num_layers=8, hidden_size=512, num_heads=8, vocab_size=64, seq_length=256
    )


@pytest.fixture
def small_moe() -> ModelSpec:
    """A MoE model: 4 layers, 8 experts, top-2."""
    return SMALL_MOE


@pytest.fixture
def hw() -> HardwareSpec:
    """A100 at 50 % efficiency."""
    return HardwareSpec()


@pytest.fixture(scope="module")
def real() -> AicbWorkload:
    """The real AICB workload (GPT-13B on 128 GPUs)."""
    return read_aicb(REAL)


@pytest.fixture(scope="module")
def real_ops(real: AicbWorkload) -> pl.DataFrame:
    """Its ops table."""
    return aicb_to_ops(real)
