"""A chip's few physical constants fitted to measured ops perf reports, and judged on what the fit
did not see.

Each distinct op of the reports is built and compiled once (compiler/profiles/replay.py); the fit
then only re-costs the compiled kernels with other values of the constants (CONSTANTS), none of
which changes what the compiler decides. The constants are fitted on half of the shapes
(holdout.py) by robust least squares on log(predicted / measured), each within the range physics
and its source allow; the other half, and any report held out whole, judge the fit. Nothing is
looked up per shape: a shape's prediction comes from the same few constants as every other.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.profiles.op_codes import kind_of
from tilescope.compiler.profiles.replay import alike, compiled_op, op_timing
from tilescope.compiler.profiles.replay_target import replay_target
from tilescope.compiler.profiles.report import Report
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.validation.calibration import with_pipeline
from tilescope.compiler.validation.fit_constants import CONSTANTS
from tilescope.compiler.validation.holdout import FIT, HELD_OUT, side_of

MAX_SAMPLES = 4_000  # distinct ops compiled for a fit, over all its reports
MAX_EVALUATIONS = 200  # of every sample's time, per fit (about 0.2 s each for 700 ops)


# keys of Target's own fields
_FIELDS = {
    "noc.round_trip_cycles": "noc_round_trip_cycles",
    "noc.issue_cycles": "noc_issue_cycles",
    "noc.page_cycles": "noc_page_cycles",
}


def value_of(target: Target, key: str) -> float:
    table, _, name = key.partition(".")
    if table == "pipeline":
        return float(getattr(target.pipeline, name) or 0.0)
    return float(getattr(target, _FIELDS[key]))


def with_constants(target: Target, values: dict[str, float]) -> Target:
    """`target` with the constants' values in place of its own."""
    pipeline = {k.partition(".")[2]: v for k, v in values.items() if k.startswith("pipeline.")}
    own = {_FIELDS[k]: v for k, v in values.items() if k in _FIELDS}
    return replace(with_pipeline(target, **pipeline), **own)


@dataclass(frozen=True)
class Sample:
    """One distinct op of a report, compiled: every row of it the report measured."""

    report: str
    kind: str
    target: Target  # replayed on
    kernel: Graph
    measured_ns: tuple[float, ...]
    side: str  # FIT or HELD_OUT

    @property
    def rows(self) -> int:
        return len(self.measured_ns)


def samples(reports: Sequence[Report], asked: str | None, held_out: Sequence[str] = ()) -> list[Sample]:
    """The distinct ops of `reports` (replayed where `tilescope replay` replays them, or on
    `asked`), compiled; each of a report in `held_out` (by source) is held out whole."""
    found: list[Sample] = []
    for report in reports:
        target = replay_target(report, asked).target
        groups: dict[tuple, list] = {}
        for op in report.ops:
            if op.kernel_ns:
                groups.setdefault(alike(op), []).append(op)
        for ops in groups.values():
            if len(found) >= MAX_SAMPLES:
                return found
            op = ops[0]
            kind = kind_of(op.op_code, op.attributes)
            made = compiled_op(op, kind, target)
            if isinstance(made, str):
                continue
            side = HELD_OUT if report.source in held_out else side_of(op)
            measured = tuple(o.kernel_ns for o in ops)
            found.append(Sample(report.source, kind, target, made[0], measured, side))
    return found


class Predictor:
    """Predicted times of samples under values of the constants, each target variant made once."""

    def __init__(self, values: dict[str, float]) -> None:
        self.values = values
        self._targets: dict[int, Target] = {}
        self._times: dict[int, float] = {}

    def __call__(self, sample: Sample) -> float:
        known = self._times.get(id(sample))
        if known is not None:
            return known
        target = self._targets.get(id(sample.target))
        if target is None:
            target = self._targets[id(sample.target)] = with_constants(sample.target, self.values)
        time = self._times[id(sample)] = op_timing(sample.kernel, target)[0].duration_ns
        return time


def fit(found: Sequence[Sample], start: dict[str, float], keys: Sequence[str] = ()) -> dict[str, float]:
    """The constants (`keys` of them, else all) that best predict the FIT samples, from `start`,
    each within its range: robust least squares on log(predicted / measured), a sample weighted by
    its rows. The others keep their values in `start`."""
    from scipy.optimize import least_squares  # only calibration needs it

    rows = [s for s in found if s.side == FIT]
    fitted = [c for c in CONSTANTS if not keys or c.key in keys]
    if not rows or not fitted:
        return dict(start)
    keys = [c.key for c in fitted]
    low, high = [c.low for c in fitted], [c.high for c in fitted]
    x0 = [min(max(start[c.key], c.low), c.high) for c in fitted]
    measured = [statistics.median(s.measured_ns) for s in rows]
    weights = [math.sqrt(s.rows) for s in rows]

    reports = sorted({s.report for s in rows})
    totals = {r: math.fsum(math.fsum(s.measured_ns) for s in rows if s.report == r) for r in reports}
    # each report's summed time counts as much as all its ops together: a fit that gets every op's
    # typical error right but the few long ones wrong would mispredict the model's time
    report_weight = {r: math.sqrt(sum(s.rows for s in rows if s.report == r)) for r in reports}

    def residuals(x: Sequence[float]) -> list[float]:
        predict = Predictor({**start, **dict(zip(keys, (float(v) for v in x)))})
        ops = [w * math.log(max(predict(s), 1.0) / m) for s, m, w in zip(rows, measured, weights)]
        sums = {r: 0.0 for r in reports}
        for s in rows:
            sums[s.report] += predict(s) * s.rows
        return ops + [report_weight[r] * math.log(max(sums[r], 1.0) / totals[r]) for r in reports]

    solution = least_squares(
        residuals,
        x0,
        bounds=(low, high),
        x_scale="jac",
        diff_step=1e-2,
        loss="soft_l1",
        f_scale=0.5,
        max_nfev=MAX_EVALUATIONS,
    )
    return {**start, **{k: float(v) for k, v in zip(keys, solution.x)}}
