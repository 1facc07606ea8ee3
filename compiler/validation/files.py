"""The public hardware measurements shipped in compiler/validation/measurements/ (their sources
in SOURCES.md there): tt-metal's GEMM and eltwise benchmarks, and its published whole-model figures."""

from __future__ import annotations

from pathlib import Path

MEASUREMENTS = Path(__file__).resolve().parent / "measurements"
GEMM_FILE = MEASUREMENTS / "tt_metal_gemm.csv"
ELTWISE_FILE = MEASUREMENTS / "tt_metal_eltwise.csv"
MODELS_FILE = MEASUREMENTS / "tt_metal_models.csv"
SOURCES_FILE = MEASUREMENTS / "SOURCES.md"  # where each file's figures come from
