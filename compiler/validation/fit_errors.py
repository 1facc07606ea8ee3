"""How far a calibration's predictions are from the measurements it did not see: per kind of op,
the held-out median |error| (before and after the fit) and the error band every prediction of
that kind carries; per report, its summed device time.

An op's error is measured / predicted - 1, as everywhere in tilescope's validation. The band of a
kind is the 68th percentile of its held-out |error|: about two measurements in three fall within
predicted x (1 +- band). A kind with fewer than MIN_BAND_OPS distinct held-out ops (or
MIN_BAND_ROWS rows) takes the band of all held-out rows (the target's "default"): one shape
repeated by every layer says how that shape is predicted, not the kind. An op predicted as a view
(no kernel, no time) has no error, as in `validate --report`.
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
MIN_BAND_OPS = 5  # and distinct held-out ops (shapes)
MAX_BAND = 1000.0  # the most a target file takes (chip_file.LIMITS)
BAND_QUANTILE = 0.68


@dataclass(frozen=True)
class KindError:
    """One kind's held-out rows: their median |error| before and after the fit, and its band."""

    kind: str
    rows: int
    ops: int  # distinct ops (shapes) among the rows
    before: float
    after: float
    band: float | None  # None: too few rows or ops for its own band


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
    def error(self) -> float | None:
        return self.measured_ns / self.after_ns - 1 if self.after_ns else None

    @property
    def error_before(self) -> float | None:
        return self.measured_ns / self.before_ns - 1 if self.before_ns else None


Predict = Callable[[Sample], float]


def _errors(found: Sequence[Sample], predict: Predict) -> dict[str, list[tuple[int, float]]]:
    """Per kind, (op, |error|) of every held-out row of an op with a predicted time."""
    out: dict[str, list[tuple[int, float]]] = {}
    for i, s in enumerate(found):
        p = predict(s) if s.side == HELD_OUT else 0.0
        if p > 0:
            out.setdefault(s.kind, []).extend((i, abs(m / p - 1)) for m in s.measured_ns)
    return out


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return min(MAX_BAND, ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def _banded(rows: list[tuple[int, float]]) -> bool:
    return len(rows) >= MIN_BAND_ROWS and len({op for op, _ in rows}) >= MIN_BAND_OPS


def kind_errors(found: Sequence[Sample], before: Predict, after: Predict) -> list[KindError]:
    """Per kind with held-out rows, the most rows first."""
    was, now = _errors(found, before), _errors(found, after)
    kinds = []
    for kind, rows in now.items():
        errors = [e for _, e in rows]
        earlier = [e for _, e in was.get(kind, rows)]
        band = _quantile(errors, BAND_QUANTILE) if _banded(rows) else None
        ops = len({op for op, _ in rows})
        kinds.append(KindError(kind, len(rows), ops, statistics.median(earlier), statistics.median(errors), band))
    return sorted(kinds, key=lambda k: (-k.rows, k.kind))


def error_bands(found: Sequence[Sample], predict: Predict) -> dict[str, float]:
    """The band of each kind with enough held-out rows and ops, and the default over all of them."""
    by_kind = _errors(found, predict)
    if not by_kind:
        return {}
    every = [e for rows in by_kind.values() for _, e in rows]
    bands = {DEFAULT_BAND: _quantile(every, BAND_QUANTILE)}
    bands |= {k: _quantile([e for _, e in v], BAND_QUANTILE) for k, v in sorted(by_kind.items()) if _banded(v)}
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
