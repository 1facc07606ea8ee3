"""The simulator against real ops perf reports: each op a report measured beside what its replay
(compiler/profiles/replay.py) predicts, summed per report and summarized per kind of op.

The error is as everywhere in tilescope's validation: simulated over measured throughput, minus
one (measured over predicted time, minus one): +10% means the simulator is 10% optimistic, -50%
that it predicts twice the time. An op the replay runs as a view (no kernel) has no predicted time
and so no error: it is counted apart. Nothing here is fitted to the reports.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from tilescope.compiler.profiles.replay import Replay

WORST_SHOWN = 3  # worst rows named per kind


class _Compared:
    """A measured time beside a predicted one (a dataclass's `measured_ns` and `predicted_ns`)."""

    measured_ns: float
    predicted_ns: float

    @property
    def error(self) -> float | None:
        """Predicted over measured throughput, minus one; None when nothing was predicted."""
        return self.measured_ns / self.predicted_ns - 1 if self.predicted_ns > 0 else None

    def as_dict(self) -> dict:
        return {**asdict(self), "error": self.error}


@dataclass(frozen=True)
class OpRow(_Compared):
    """One measured op and its prediction."""

    report: str
    name: str
    op_code: str
    kind: str
    measured_ns: float
    predicted_ns: float


@dataclass(frozen=True)
class KindSummary:
    """One kind of op over every report: its rows, their errors, and the worst of them."""

    kind: str
    rows: int
    no_kernel: int  # rows predicted as views: no error
    measured_ns: float
    predicted_ns: float
    median_abs_error: float | None  # None when no row has an error
    mean_abs_error: float | None
    worst: tuple[OpRow, ...]

    def as_dict(self) -> dict:
        return {**asdict(self), "worst": [row.as_dict() for row in self.worst]}


@dataclass(frozen=True)
class ReportSummary(_Compared):
    """One report: the device time its built ops measured and the time predicted for them."""

    name: str
    target: str
    ops: int
    built_ops: int
    coverage: float  # of the report's device time, the share built
    measured_ns: float
    predicted_ns: float


def op_rows(replay: Replay) -> list[OpRow]:
    """A row per built op the report timed."""
    source = replay.report.source
    return [
        OpRow(source, r.name, r.op.op_code, r.kind, r.op.kernel_ns, r.timing.duration_ns)
        for r in replay.ops
        if r.timing is not None and r.op.kernel_ns
    ]


def report_summary(replay: Replay) -> ReportSummary:
    rows = op_rows(replay)
    c = replay.coverage
    return ReportSummary(
        replay.report.source,
        replay.target.name,
        c.ops,
        c.built_ops,
        c.share,
        math.fsum(r.measured_ns for r in rows),
        math.fsum(r.predicted_ns for r in rows),
    )


def kind_summaries(rows: Sequence[OpRow]) -> list[KindSummary]:
    """Per kind of op, the most measured time first."""
    kinds: dict[str, list[OpRow]] = {}
    for row in rows:
        kinds.setdefault(row.kind or "(no kind)", []).append(row)
    summaries = []
    for kind, part in kinds.items():
        errors = [abs(r.error) for r in part if r.error is not None]
        worst = sorted(
            (r for r in part if r.error is not None), key=lambda r: -abs(math.log(r.predicted_ns / r.measured_ns))
        )
        summaries.append(
            KindSummary(
                kind,
                len(part),
                len(part) - len(errors),
                math.fsum(r.measured_ns for r in part),
                math.fsum(r.predicted_ns for r in part),
                statistics.median(errors) if errors else None,
                statistics.fmean(errors) if errors else None,
                tuple(worst[:WORST_SHOWN]),
            )
        )
    return sorted(summaries, key=lambda s: -s.measured_ns)
