"""The simulator against published hardware measurements: per row, predicted vs measured, the
mean absolute error, and whether each shape's configurations come out in the chip's order.

Measurements are shipped in compiler/measurements/ with their sources (SOURCES.md there). Each
GEMM row is compiled as one matmul, laid out as the benchmark laid it out (operands and result in
L1 or DRAM, the row's grid, dtype and math fidelity), and simulated; the matmul's own device time
is what is compared, as the benchmark's device profiler measured it.

Only Wormhole is calibrated, and only on half of its shapes (`FIT`); the other half (`HELD_OUT`)
and every Blackhole row are predictions the fitted values never saw.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from tilescope.compiler.frontend import zoo
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.validation.files import ELTWISE_FILE, GEMM_FILE
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.targets.chip import Target

CALIBRATED = "wormhole_n150"  # the one target whose pipeline constants are fitted
# targets whose files take the calibrated target's fitted constants: the same Tensix core
TENSIX_TARGETS = ("wormhole_n150", "blackhole_p150")
FIT, HELD_OUT, NO_REFIT = "fit", "held-out", "no refit"
ELTWISE_TABLE = "eltwise example benchmark"
# the matrix engine's cycles per 32x32x32 tile at each fidelity, as the benchmark's utilization uses them
TILE_CYCLES = {"lofi": 16, "hifi2": 32, "hifi3": 48, "hifi4": 64}
# Measured times closer than this are a tie (the benchmark's repeated runs differ by up to ~4%):
# such pairs do not count for or against rank agreement.
RANK_TIE = 0.04
# The pipeline constants fitted on Wormhole, with the range physics allows each.
FITTED = {
    "unpack_bytes_per_cycle": (16.0, 80.0),  # the unpackers' L1 ports: 16 to 80 B/cycle
    "overlap_loss": (0.0, 1.0),
    "step_sync_cycles": (0.0, 2000.0),
    "launch_ns": (0.0, 20000.0),
}


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


@dataclass(frozen=True)
class Row:
    target: str
    table: str
    shape: str  # the op's shape and grid: rows compared for rank agreement share it
    layout: str  # where its operands and result live
    config: str  # dtype and fidelity
    split: str  # fit | held-out | no refit
    measured_ns: float
    predicted_ns: float

    @property
    def kind(self) -> str:
        return "eltwise" if self.table == ELTWISE_TABLE else "gemm"

    @property
    def error(self) -> float:
        """Predicted over measured throughput, minus one: +0.1 is 10% too fast."""
        return self.measured_ns / self.predicted_ns - 1


@dataclass(frozen=True)
class Summary:
    target: str
    kind: str  # gemm | eltwise
    split: str
    rows: int
    mean_abs_error: float
    rank_pairs: int
    rank_agreement: float


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


def split_of(row: GemmMeasurement, calibration_shapes: frozenset[tuple[int, int, int]]) -> str:
    if row.target != CALIBRATED:
        return NO_REFIT
    return FIT if row.shape in calibration_shapes else HELD_OUT


def calibration_shapes(rows: Iterable[GemmMeasurement]) -> frozenset[tuple[int, int, int]]:
    """Every other Wormhole shape in order of size, from the smallest: the fit sees half the
    sizes, and each held-out shape lies between two it saw."""
    shapes = sorted({r.shape for r in rows if r.target == CALIBRATED}, key=lambda s: (math.prod(s), s))
    return frozenset(shapes[::2])


# --- one measurement, compiled and simulated ---------------------------------------------------


def _grid_spec(grid: tuple[int, int]) -> str:
    return f"{grid[0]}x{grid[1]}"


def _placed(memory: str, grid: tuple[int, int]) -> dict:
    if memory == "l1":
        return {"grid": grid, "memory": "l1", "memory_layout": "block_sharded"}
    return {"memory": "dram", "memory_layout": "interleaved"}


def gemm_overrides(row: GemmMeasurement) -> list[OpOverride]:
    """The benchmark's layout: A and the result in L1 shards over the grid or in DRAM, B in
    DRAM, everything in the row's dtype, the matmul at its fidelity on the row's grid."""
    out = {**_placed(row.out, row.grid), "grid": row.grid}
    return [
        OpOverride("matmul", dtype=row.dtype, fidelity=row.fidelity, **out),
        OpOverride("matmul", operand=0, dtype=row.dtype, **_placed(row.in0, row.grid)),
        OpOverride("matmul", operand=1, dtype=row.dtype, **_placed(row.in1, row.grid)),
    ]


@cache
def _gemm_kernel(row: GemmMeasurement) -> Graph:
    """The row's kernel level (the split depends on the target's shape, not on its fitted costs)."""
    target = load_target(row.target)
    model = import_mlir(zoo.matmul(row.m, row.k, row.n), f"zoo:matmul:{row.m}x{row.k}x{row.n}")
    compilation = compile_model(model, target, gemm_overrides(row))
    rejected = [o for o in compilation.override_outcomes if o.status == "rejected"]
    if rejected:
        raise ValueError(f"{row.target} {row.shape} {row.config}: {rejected[0].reason}")
    return compilation.kernel


def op_ns(kernel: Graph, target: Target, name: str) -> float:
    """One op's simulated device time, as a device profiler would time it (no host dispatch)."""
    result = simulate(kernel, target, "trace")
    return next(op.duration_ns for op in result.ops if op.name == name)


def _eltwise_kernel(row: EltwiseMeasurement, target: Target) -> Graph:
    b = zoo.MlirBuilder()
    x = b.arg("x", row.shape, row.dtype)
    model = import_mlir(b.text([b.op(row.op, [x], row.shape, row.dtype, "op")]), f"{row.op} {row.shape}")
    grid = _cores_grid(row.cores, target)
    overrides = [OpOverride("op", grid=grid, memory=row.memory, memory_layout="interleaved")]
    return compile_model(model, target, overrides).kernel


def _cores_grid(cores: int, target: Target) -> tuple[int, int]:
    """A grid of `cores` within the target's: full rows of its width, or one partial row."""
    cols = target.grid[1]
    return (cores // cols, cols) if cores >= cols else (1, cores)


# --- the report ---------------------------------------------------------------------------------


def with_pipeline(target: Target, **values: float) -> Target:
    return replace(target, pipeline=replace(target.pipeline, **values))


def fitted_targets(fitted: dict[str, float]) -> Callable[[str], Target]:
    """Targets by name, those that take the calibrated target's constants (TENSIX_TARGETS) with
    `fitted` in their place; each loaded once."""

    @cache
    def target(name: str) -> Target:
        base = load_target(name)
        return with_pipeline(base, **fitted) if name in TENSIX_TARGETS else base

    return target


def gemm_rows(measurements: Sequence[GemmMeasurement], targets: Callable[[str], Target] = load_target) -> list[Row]:
    shapes = calibration_shapes(measurements)
    rows = []
    for m in measurements:
        target = targets(m.target)
        layout = f"{m.in0}/{m.in1}/{m.out}"
        rows.append(
            Row(
                target=m.target,
                table=m.table,
                shape=f"{m.m}x{m.k}x{m.n} on {_grid_spec(m.grid)}",
                layout=layout,
                config=m.config,
                split=split_of(m, shapes),
                measured_ns=m.device_ns(target.clock_hz),
                predicted_ns=op_ns(_gemm_kernel(m), target, "matmul"),
            )
        )
    return rows


def eltwise_rows(
    measurements: Sequence[EltwiseMeasurement], targets: Callable[[str], Target] = load_target
) -> list[Row]:
    rows = []
    for m in measurements:
        target = targets(m.target)
        rows.append(
            Row(
                target=m.target,
                table=ELTWISE_TABLE,
                shape=f"{m.op} {m.shape[0]}x{m.shape[1]} on {m.cores} cores",
                layout=f"{m.memory} ({m.split})",
                config=m.dtype,
                split=HELD_OUT,
                measured_ns=m.device_ns,
                predicted_ns=op_ns(_eltwise_kernel(m, target), target, "op"),
            )
        )
    return rows


def rank_agreement(rows: Sequence[Row]) -> tuple[int, float]:
    """(pairs compared, share in the chip's order): for every shape, each pair of its rows
    (dtypes, fidelities, layouts) whose measured times differ by more than RANK_TIE."""
    cases: dict[tuple[str, str, str], list[Row]] = {}
    for row in rows:
        cases.setdefault((row.target, row.table, row.shape), []).append(row)
    pairs = agree = 0
    for group in cases.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                if abs(a.measured_ns / b.measured_ns - 1) <= RANK_TIE:
                    continue
                pairs += 1
                agree += (a.measured_ns < b.measured_ns) == (a.predicted_ns < b.predicted_ns)
    return pairs, (agree / pairs if pairs else 1.0)


def summaries(rows: Sequence[Row]) -> list[Summary]:
    """Per target, kind of op and split: rows, mean absolute error and rank agreement."""
    result = []
    for target in dict.fromkeys(r.target for r in rows):
        for kind in ("gemm", "eltwise"):
            for split in (FIT, HELD_OUT, NO_REFIT):
                part = [r for r in rows if r.target == target and r.kind == kind and r.split == split]
                if part:
                    pairs, agreement = rank_agreement(part)
                    error = sum(abs(r.error) for r in part) / len(part)
                    result.append(Summary(target, kind, split, len(part), error, pairs, agreement))
    return result


def fit(measurements: Sequence[GemmMeasurement]) -> dict[str, float]:
    """The Wormhole pipeline constants (FITTED) that best predict the calibration half, by least
    squares on log(predicted / measured) within each constant's physical range."""
    from scipy.optimize import least_squares  # only calibration needs it

    shapes = calibration_shapes(measurements)
    rows = [m for m in measurements if split_of(m, shapes) == FIT]
    base = load_target(CALIBRATED)
    names = list(FITTED)
    low, high = zip(*FITTED.values())
    start = [min(max(getattr(base.pipeline, n) or (lo + hi) / 2, lo), hi) for n, (lo, hi) in FITTED.items()]

    def residuals(values: Sequence[float]) -> list[float]:
        target = with_pipeline(base, **dict(zip(names, values)))
        return [math.log(op_ns(_gemm_kernel(m), target, "matmul") / m.device_ns(target.clock_hz)) for m in rows]

    solution = least_squares(residuals, start, bounds=(low, high), x_scale="jac", diff_step=1e-3)
    return dict(zip(names, (float(v) for v in solution.x)))
