"""The simulator against tt-metal's op benchmarks: per measured row, the prediction beside the
measurement.

Each GEMM row is compiled as one matmul, laid out as the benchmark laid it out (operands and result in
L1 or DRAM, the row's grid, dtype and math fidelity), and simulated; the matmul's own device time
is what is compared, as the benchmark's device profiler measured it. Each eltwise row is one op on
the row's cores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from tilescope.compiler.frontend import zoo
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.validation.op_benchmarks import (
    HELD_OUT,
    EltwiseMeasurement,
    GemmMeasurement,
    calibration_shapes,
    split_of,
)

ELTWISE_TABLE = "eltwise example benchmark"


@dataclass(frozen=True)
class Row:
    """One benchmark row: what the chip measured beside what the simulator predicts."""

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
def gemm_kernel(row: GemmMeasurement) -> Graph:
    """The row's kernel level (the split depends on the target's shape, not on its fitted costs)."""
    target = load_target(row.target)
    model = import_mlir(zoo.matmul(row.m, row.k, row.n), f"zoo:matmul:{row.m}x{row.k}x{row.n}")
    compilation = compile_model(model, target, CompileOptions(gemm_overrides(row)))
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
    return compile_model(model, target, CompileOptions(overrides)).kernel


def _cores_grid(cores: int, target: Target) -> tuple[int, int]:
    """A grid of `cores` within the target's: full rows of its width, or one partial row."""
    cols = target.grid[1]
    return (cores // cols, cols) if cores >= cols else (1, cores)


# --- the rows ------------------------------------------------------------------------------------


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
                predicted_ns=op_ns(gemm_kernel(m), target, "matmul"),
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
