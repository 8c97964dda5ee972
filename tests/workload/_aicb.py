"""The real AICB workload of ``tests/data/aicb`` and the figures of its model."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA", "REAL", "B", "S", "H", "V", "M"]

DATA = Path(__file__).resolve().parents[1] / "data" / "aicb"
REAL = DATA / "gpt13b-128.txt"
# GPT-13B of the file: b = 1, s = 2048, h = 5120, bf16; M = 2·b·s·h bytes
B, S, H, V = 1, 2048, 5120, 50257
M = 2 * B * S * H
