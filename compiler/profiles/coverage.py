"""How much of a report a replay built: the share of its device time whose ops were built as ops of
tilescope's IR, and each op code that was not, with its count, its share and why."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from tilescope.compiler.profiles.report import Report, ReportOp


@dataclass(frozen=True)
class UnbuiltCode:
    """One op code of a report that was not built (or not every time it appears)."""

    op_code: str
    count: int  # its ops not built
    device_ns: float  # their DEVICE KERNEL DURATION summed
    share: float  # of the report's device time, 0 to 1
    reason: str  # why (the first such op's)


@dataclass(frozen=True)
class Coverage:
    """The report's device time, the part its built ops measured, and what was not built."""

    ops: int
    built_ops: int
    device_ns: float
    built_ns: float
    unbuilt: tuple[UnbuiltCode, ...]  # by device time, most first

    @property
    def share(self) -> float:
        """Of the report's device time, the share its built ops took (1 for a report of none)."""
        return self.built_ns / self.device_ns if self.device_ns else 1.0


def coverage_of(report: Report, unbuilt: Iterable[tuple[ReportOp, str]]) -> Coverage:
    """`report`'s coverage when the ops of `unbuilt` (each with why) were not built."""
    codes: dict[str, list] = {}
    missed = 0
    for op, reason in unbuilt:
        missed += 1
        entry = codes.setdefault(op.op_code, [0, [], reason])
        entry[0] += 1
        entry[1].append(op.kernel_ns or 0.0)
    total = report.device_ns
    listed = sorted(
        (
            UnbuiltCode(code, count, math.fsum(times), math.fsum(times) / total if total else 0.0, reason)
            for code, (count, times, reason) in codes.items()
        ),
        key=lambda u: (-u.device_ns, u.op_code),
    )
    missed_ns = math.fsum(u.device_ns for u in listed)
    return Coverage(len(report.ops), len(report.ops) - missed, total, max(0.0, total - missed_ns), tuple(listed))
