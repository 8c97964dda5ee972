"""GPU presets and the compute-time model.

Phase time = FLOPs / (peak · efficiency), as Megatron-style analytic models do; or a measured
per-op kernel time from the user, which takes precedence.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from wormsim.units import BYTES_PER_GB_F, FLOPS_PER_TFLOPS_F, PS_PER_S_F

__all__ = ["GPU_PRESETS", "GpuPreset", "HardwareSpec"]

_MAX_KERNEL_US = 1e12  # about 11.6 days per kernel


class GpuPreset(BaseModel):
    """Peak dense bf16 throughput and HBM bandwidth of one GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    peak_tflops: float = Field(gt=0)
    hbm_gbps: float = Field(gt=0)  # GB/s (10^9 bytes per second)


#: Vendor datasheet peaks: dense bf16 tensor-core TFLOP/s (no sparsity), HBM GB/s.
GPU_PRESETS: dict[str, GpuPreset] = {
    "A100": GpuPreset(peak_tflops=312.0, hbm_gbps=2039.0),
    "H100": GpuPreset(peak_tflops=989.0, hbm_gbps=3350.0),
    "H200": GpuPreset(peak_tflops=989.0, hbm_gbps=4800.0),
}


class HardwareSpec(BaseModel):
    """Compute side of the cluster.

    Attributes
    ----------
    gpu : {"A100", "H100", "H200"}
        GPU preset.
    efficiency : float
        Achieved fraction of peak for GEMM-dominated phases (Megatron reaches 0.4-0.6).
    kernel_times_us : dict[str, float]
        Measured time per op name per layer and micro-batch (e.g. ``attn_fwd: 812.5``), in µs;
        overrides the FLOP model for those ops. Names are the ``name`` column of ops.parquet.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    gpu: Literal["A100", "H100", "H200"] = Field("A100", description="GPU preset.")
    efficiency: float = Field(
        default=0.5, gt=0, le=1, description="Achieved fraction of peak FLOP/s (0..1]."
    )
    kernel_times_us: dict[str, float] = Field(
        default_factory=dict,
        description="Measured time per op name, per layer and micro-batch, µs (overrides FLOPs).",
    )

    @field_validator("kernel_times_us")
    @classmethod
    def _times(cls, value: dict[str, float]) -> dict[str, float]:
        for name, us in value.items():
            if not 0 <= us <= _MAX_KERNEL_US:
                raise ValueError(
                    f"kernel_times_us.{name} is {us} µs; it must be in 0..{_MAX_KERNEL_US:,.0f}"
                )
        return value

    @property
    def preset(self) -> GpuPreset:
        """The GPU's datasheet numbers."""
        return GPU_PRESETS[self.gpu]

    def flops_to_ps(self, flops: float) -> int:
        """Time in picoseconds of ``flops`` at the achieved rate."""
        rate = self.preset.peak_tflops * FLOPS_PER_TFLOPS_F * self.efficiency
        return int(round(flops / rate * PS_PER_S_F))

    def bytes_to_ps(self, nbytes: float) -> int:
        """Time in picoseconds to stream ``nbytes`` through HBM (memory-bound ops)."""
        return int(round(nbytes / (self.preset.hbm_gbps * BYTES_PER_GB_F) * PS_PER_S_F))
