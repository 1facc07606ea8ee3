"""The calibration: Wormhole's pipeline constants fitted to the benchmark rows the fit sees
(op_benchmarks.FIT), Blackhole's unpacker rate fitted to its own such rows with the others
Wormhole's, and the targets that take them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache

from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.validation.microbench import gemm_kernel, op_ns
from tilescope.compiler.validation.op_benchmarks import (
    CALIBRATED,
    FIT,
    UNPACKER_REFIT,
    GemmMeasurement,
    calibration_shapes,
    split_of,
)

# targets whose files take the calibrated target's fitted constants: the same Tensix core
TENSIX_TARGETS = ("wormhole_n150", "blackhole_p150")
UNPACKER = "unpack_bytes_per_cycle"
# The pipeline constants fitted on Wormhole, with the range physics allows each.
FITTED = {
    "unpack_bytes_per_cycle": (16.0, 80.0),  # the unpackers' L1 ports: 16 to 80 B/cycle
    "overlap_loss": (0.0, 1.0),
    "step_sync_cycles": (0.0, 2000.0),
    "launch_ns": (0.0, 20000.0),
}


def with_pipeline(target: Target, **values: float) -> Target:
    return replace(target, pipeline=replace(target.pipeline, **values))


def fitted_targets(fitted: dict[str, float], unpacker: float | None = None) -> Callable[[str], Target]:
    """Targets by name, those that take the calibrated target's constants (TENSIX_TARGETS) with
    `fitted` in their place, Blackhole with its own `unpacker` rate; each loaded once."""

    @cache
    def target(name: str) -> Target:
        base = load_target(name)
        if name not in TENSIX_TARGETS:
            return base
        values = dict(fitted)
        if name == UNPACKER_REFIT:
            values.pop(UNPACKER, None)
            if unpacker is not None:
                values[UNPACKER] = unpacker
        return with_pipeline(base, **values)

    return target


def fit(measurements: Sequence[GemmMeasurement]) -> dict[str, float]:
    """The Wormhole pipeline constants (FITTED) that best predict the calibration half, by least
    squares on log(predicted / measured) within each constant's physical range."""
    from scipy.optimize import least_squares  # only calibration needs it

    shapes = calibration_shapes(measurements)
    rows = [m for m in measurements if m.target == CALIBRATED and split_of(m, shapes) == FIT]
    base = load_target(CALIBRATED)
    names = list(FITTED)
    low, high = zip(*FITTED.values())
    start = [min(max(getattr(base.pipeline, n) or (lo + hi) / 2, lo), hi) for n, (lo, hi) in FITTED.items()]

    def residuals(values: Sequence[float]) -> list[float]:
        target = with_pipeline(base, **dict(zip(names, values)))
        return [math.log(op_ns(gemm_kernel(m), target, "matmul") / m.device_ns(target.clock_hz)) for m in rows]

    solution = least_squares(residuals, start, bounds=(low, high), x_scale="jac", diff_step=1e-3)
    return dict(zip(names, (float(v) for v in solution.x)))


def fit_unpacker(measurements: Sequence[GemmMeasurement], fitted: dict[str, float] | None = None) -> float:
    """Blackhole's unpacker rate that best predicts its calibration half, its other constants
    Wormhole's (`fitted`, else as shipped): least squares on log(predicted / measured)."""
    from scipy.optimize import least_squares  # only calibration needs it

    shapes = calibration_shapes(measurements)
    rows = [m for m in measurements if m.target == UNPACKER_REFIT and split_of(m, shapes) == FIT]
    others = {k: v for k, v in (fitted or {}).items() if k != UNPACKER}
    base = with_pipeline(load_target(UNPACKER_REFIT), **others)
    low, high = FITTED[UNPACKER]

    def residuals(values: Sequence[float]) -> list[float]:
        target = with_pipeline(base, **{UNPACKER: float(values[0])})
        return [math.log(op_ns(gemm_kernel(m), target, "matmul") / m.device_ns(target.clock_hz)) for m in rows]

    start = min(max(base.pipeline.unpack_bytes_per_cycle or (low + high) / 2, low), high)
    solution = least_squares(residuals, [start], bounds=([low], [high]), x_scale="jac", diff_step=1e-3)
    return float(solution.x[0])
