"""What a measured op is called: the one naming that a measured run and its replay share, so the
two align row for row in a diff.

An op is named by its LOC when the report has one; otherwise `{op_code}#{n}`, n counting that op
code's ops so far on the op's own device (1-based, in report order), so a device's names do not
shift when another device's ops interleave differently.
"""

from __future__ import annotations

from tilescope.compiler.profiles.report import Report, ReportOp


def op_name(op: ReportOp, nth: int) -> str:
    """The name of `op`, the `nth` (1-based) op of its code on its device."""
    return op.loc if op.loc else f"{op.op_code}#{nth}"


def op_names(report: Report) -> tuple[str, ...]:
    """Every device op's name, aligned with `report.ops`."""
    counts: dict[tuple[int, str], int] = {}
    names = []
    for op in report.ops:
        key = (op.device, op.op_code)
        counts[key] = counts.get(key, 0) + 1
        names.append(op_name(op, counts[key]))
    return tuple(names)
