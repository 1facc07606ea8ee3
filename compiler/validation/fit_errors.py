"""How far a calibration's predictions are from the measurements it did not see: per kind of op,
the held-out median |error| (before and after the fit) and the error band every prediction of
that kind carries; per report, its summed device time.

An op's error is measured / predicted - 1, as everywhere in tilescope's validation. The band of a
kind is the 68th percentile of its held-out |error|: about two measurements in three fall within
predicted x (1 +- band). A kind with fewer than MIN_BAND_ROWS held-out rows takes the band of all
held-out rows (the target's "default").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tilescope.compiler.targets.chip import DEFAULT_BAND
from tilescope.compiler.validation.holdout import HELD_OUT
from tilescope.compiler.validation.report_fit import Sample

MIN_BAND_ROWS = 10  # held-out rows of a kind for a band of its own
BAND_QUANTILE = 0.68


@dataclass(frozen=True)
class KindError:
    """One kind's held-out rows: their median |error| before and after the fit, and its band."""

    kind: str
    rows: int
    before: float
    after: float
    band: float | None  # None: too few rows for its own band


@dataclass(frozen=True)
class ReportError:
    """One report's summed device time, measured and predicted after the fit."""

    report: str
    rows: int
    measured_ns: float
    before_ns: float
    after_ns: float
    held_out: bool  # held out whole: the fit saw none of it

    @property
    def error(self) -> float:
        return self.measured_ns / self.after_ns - 1 if self.after_ns else math.inf


Predict = Callable[[Sample], float]


def _errors(found: Sequence[Sample], predict: Predict) -> list[tuple[str, float]]:
    """(kind, |error|) of every held-out row."""
    out = []
    for s in found:
        if s.side != HELD_OUT:
            continue
        p = predict(s)
        out += [(s.kind, abs(m / p - 1) if p > 0 else math.inf) for m in s.measured_ns]
    return out


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def kind_errors(found: Sequence[Sample], before: Predict, after: Predict) -> list[KindError]:
    """Per kind with held-out rows, the most rows first."""
    was: dict[str, list[float]] = {}
    now: dict[str, list[float]] = {}
    for kind, e in _errors(found, before):
        was.setdefault(kind, []).append(e)
    for kind, e in _errors(found, after):
        now.setdefault(kind, []).append(e)
    kinds = [
        KindError(
            kind,
            len(now[kind]),
            statistics.median(was[kind]),
            statistics.median(now[kind]),
            _quantile(now[kind], BAND_QUANTILE) if len(now[kind]) >= MIN_BAND_ROWS else None,
        )
        for kind in now
    ]
    return sorted(kinds, key=lambda k: (-k.rows, k.kind))


def error_bands(found: Sequence[Sample], predict: Predict) -> dict[str, float]:
    """The band of each kind with enough held-out rows, and the default over all of them."""
    errors = [(k, e) for k, e in _errors(found, predict) if math.isfinite(e)]
    if not errors:
        return {}
    by_kind: dict[str, list[float]] = {}
    for kind, e in errors:
        by_kind.setdefault(kind, []).append(e)
    bands = {DEFAULT_BAND: _quantile([e for _, e in errors], BAND_QUANTILE)}
    bands |= {k: _quantile(v, BAND_QUANTILE) for k, v in sorted(by_kind.items()) if len(v) >= MIN_BAND_ROWS}
    return {k: round(v, 3) for k, v in bands.items()}


def report_errors(
    found: Sequence[Sample], before: Predict, after: Predict, held_out: Sequence[str]
) -> list[ReportError]:
    """Per report, every built row of it (fitted and held out) summed."""
    sums: dict[str, list[float]] = {}
    for s in found:
        acc = sums.setdefault(s.report, [0, 0.0, 0.0, 0.0])
        acc[0] += s.rows
        acc[1] += math.fsum(s.measured_ns)
        acc[2] += before(s) * s.rows
        acc[3] += after(s) * s.rows
    return [ReportError(r, int(a[0]), a[1], a[2], a[3], r in held_out) for r, a in sums.items()]
