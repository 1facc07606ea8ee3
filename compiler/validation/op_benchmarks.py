"""tt-metal's op benchmarks as records: the GEMM and eltwise rows shipped in
compiler/validation/measurements/ (their sources in SOURCES.md there), and which of them the
calibration sees.

Wormhole's pipeline constants are fitted on half of its shapes (`FIT`), and Blackhole's unpacker
rate on half of its own; the other halves (`HELD_OUT`) are predictions the fitted values never
saw. A target fitted on none of its rows would be `NO_REFIT`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tilescope.compiler.validation.files import ELTWISE_FILE, GEMM_FILE

CALIBRATED = "wormhole_n150"  # the target whose pipeline constants are fitted
# Blackhole takes Wormhole's fitted constants but for its unpacker's rate, fitted on half of its
# own table: no document gives either chip's, and Blackhole's unpacks faster per cycle
UNPACKER_REFIT = "blackhole_p150"
REFIT = (CALIBRATED, UNPACKER_REFIT)
FIT, HELD_OUT, NO_REFIT = "fit", "held-out", "no refit"
# the matrix engine's cycles per 32x32x32 tile at each fidelity, as the benchmark's utilization uses them
TILE_CYCLES = {"lofi": 16, "hifi2": 32, "hifi3": 48, "hifi4": 64}


@dataclass(frozen=True)
class GemmMeasurement:
    target: str
    table: str
    grid: tuple[int, int]  # rows x columns of cores
    m: int
    k: int
    n: int
    in0: str  # where A lives: l1 (block-sharded over the grid) or dram (interleaved)
    in1: str
    out: str
    dtype: str
    fidelity: str
    device_utilization_pct: float

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.k, self.n

    @property
    def config(self) -> str:
        return f"{self.dtype} {self.fidelity}"

    def device_ns(self, clock_hz: float) -> float:
        """The benchmark's device time: its ideal cycles (tiles x cycles per tile at the fidelity,
        over the grid's cores) divided by the device utilization it reports."""
        tiles = self.m * self.k * self.n / 32**3
        ideal = tiles * TILE_CYCLES[self.fidelity] / (self.grid[0] * self.grid[1])
        return ideal / (self.device_utilization_pct / 100) / clock_hz * 1e9


@dataclass(frozen=True)
class EltwiseMeasurement:
    target: str
    op: str
    shape: tuple[int, int]
    dtype: str
    memory: str
    cores: int
    split: str
    device_ns: float


def load_gemm(path: Path = GEMM_FILE) -> list[GemmMeasurement]:
    with path.open(newline="") as file:
        return [
            GemmMeasurement(
                target=r["target"],
                table=r["table"],
                grid=(int(r["grid_rows"]), int(r["grid_cols"])),
                m=int(r["m"]),
                k=int(r["k"]),
                n=int(r["n"]),
                in0=r["in0"],
                in1=r["in1"],
                out=r["out"],
                dtype=r["dtype"],
                fidelity=r["fidelity"],
                device_utilization_pct=float(r["device_utilization_pct"]),
            )
            for r in csv.DictReader(file)
        ]


def load_eltwise(path: Path = ELTWISE_FILE) -> list[EltwiseMeasurement]:
    with path.open(newline="") as file:
        return [
            EltwiseMeasurement(
                r["target"],
                r["op"],
                (int(r["rows"]), int(r["cols"])),
                r["dtype"],
                r["memory"],
                int(r["cores"]),
                r["split"],
                float(r["device_ns"]),
            )
            for r in csv.DictReader(file)
        ]


def split_of(row: GemmMeasurement, calibration_shapes: frozenset[tuple[str, tuple[int, int, int]]]) -> str:
    """FIT, HELD_OUT or NO_REFIT: whether the calibration sees the row."""
    if row.target not in REFIT:
        return NO_REFIT
    return FIT if (row.target, row.shape) in calibration_shapes else HELD_OUT


def calibration_shapes(rows: Iterable[GemmMeasurement]) -> frozenset[tuple[str, tuple[int, int, int]]]:
    """Per target fitted (REFIT), every other shape of its table in order of size, from the
    smallest: the fit sees half the sizes, and each held-out shape lies between two it saw."""
    rows = list(rows)
    seen: set[tuple[str, tuple[int, int, int]]] = set()
    for target in REFIT:
        shapes = sorted({r.shape for r in rows if r.target == target}, key=lambda s: (math.prod(s), s))
        seen.update((target, shape) for shape in shapes[::2])
    return frozenset(seen)
