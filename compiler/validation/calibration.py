"""The calibration: Wormhole's pipeline constants fitted to the benchmark rows the fit sees
(op_benchmarks.FIT), and the targets that take them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache

from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.validation.microbench import gemm_kernel, op_ns
from tilescope.compiler.validation.op_benchmarks import CALIBRATED, FIT, GemmMeasurement, calibration_shapes, split_of

# targets whose files take the calibrated target's fitted constants: the same Tensix core
TENSIX_TARGETS = ("wormhole_n150", "blackhole_p150")
# The pipeline constants fitted on Wormhole, with the range physics allows each.
FITTED = {
    "unpack_bytes_per_cycle": (16.0, 80.0),  # the unpackers' L1 ports: 16 to 80 B/cycle
    "overlap_loss": (0.0, 1.0),
    "step_sync_cycles": (0.0, 2000.0),
    "launch_ns": (0.0, 20000.0),
}


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
        return [math.log(op_ns(gemm_kernel(m), target, "matmul") / m.device_ns(target.clock_hz)) for m in rows]

    solution = least_squares(residuals, start, bounds=(low, high), x_scale="jac", diff_step=1e-3)
    return dict(zip(names, (float(v) for v in solution.x)))
