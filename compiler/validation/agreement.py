"""How well the predictions agree with the measurements: per target, kind of op and split, the mean
absolute error and the rank agreement (are a shape's configurations in the chip's order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilescope.compiler.validation.microbench import Row
from tilescope.compiler.validation.op_benchmarks import FIT, HELD_OUT, NO_REFIT

# Measured times closer than this are a tie (the benchmark's repeated runs differ by up to ~4%):
# such pairs do not count for or against rank agreement.
RANK_TIE = 0.04


@dataclass(frozen=True)
class Summary:
    target: str
    kind: str  # gemm | eltwise
    split: str
    rows: int
    mean_abs_error: float
    rank_pairs: int
    rank_agreement: float


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
