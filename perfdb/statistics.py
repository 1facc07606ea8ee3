"""Where a run's device time goes: per op name, op kind or op code, Tracy's statistics window."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tilescope.perfdb.errors import RunNotFound
from tilescope.perfdb.runs import check_run_id
from tilescope.perfdb.schema import OpRecord, Run

STAT_KEYS = ("name", "kind", "code", "source")  # what op_statistics groups by
NO_SOURCE = "(no line of source)"  # the group of ops whose model names none (MLIR without them)


@dataclass(slots=True)
class OpStats:
    """The device durations of one group of ops (those of one name, or of one kind), in ns. Not
    frozen: a 100k-op run has 100k rows, and a frozen dataclass is made five times slower."""

    group: str  # the op name, op kind or op code
    count: int
    total_ns: float
    self_ns: float  # ops do not nest inside each other, so an op's self time is its total
    mean_ns: float
    min_ns: float
    max_ns: float
    median_ns: float
    p90_ns: float
    pct_of_run: float  # of the run's total (its step, host and idle time included), in %

    def to_json(self, by: str) -> dict:
        """As `tilescope stats --json` prints it: the group under the name of what it is (`by`)."""
        found = asdict(self)
        return {by: found.pop("group"), **found}


def percentile(ordered: list[float], q: float) -> float:
    """The q-th percentile of sorted values, interpolated linearly between neighbours (numpy's default)."""
    at = q / 100 * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def op_statistics(session: Session, run_id: int, by: str = "name") -> list[OpStats]:
    """Per op name (or per op kind, by="kind"; per op code, by="code": the code a measured report
    names, a simulated op's kind; per line of the model's source, by="source": a PyTorch model's
    line of Python), by total descending."""
    if by not in STAT_KEYS:
        raise ValueError(f"statistics by {by!r}; one of {', '.join(STAT_KEYS)}")
    check_run_id(run_id)
    groups: dict[str, list[float]] = {}
    if by == "source":
        columns = (OpRecord.code_line, OpRecord.code)
    else:
        columns = (OpRecord.op_code if by == "code" else getattr(OpRecord, by), OpRecord.kind)
    # the columns, not whole records: their tensors and bytes are JSON to decode
    for key, other, duration in session.execute(
        select(*columns, OpRecord.duration_ns).where(OpRecord.run_id == run_id).order_by(OpRecord.start_ns)
    ):
        if by == "source":  # "model.py:57  self.attn(x)": the file's name, the line and its code
            key, other = (f"{key.rsplit('/', 1)[-1]}  {other}".rstrip() if key else ""), NO_SOURCE
        groups.setdefault(key or other, []).append(duration)
    run_ns = session.scalar(select(Run.total_ns).where(Run.id == run_id))
    if run_ns is None:
        raise RunNotFound(run_id)
    run_ns = run_ns or 1.0
    rows = []
    for key, durations in groups.items():
        values = sorted(durations)  # most groups hold one op or a few: plain Python beats numpy's per-call cost
        total = sum(values)
        rows.append(
            OpStats(
                group=key,
                count=len(values),
                total_ns=total,
                self_ns=total,
                mean_ns=total / len(values),
                min_ns=values[0],
                max_ns=values[-1],
                median_ns=percentile(values, 50),
                p90_ns=percentile(values, 90),
                pct_of_run=total / run_ns * 100,
            )
        )
    return sorted(rows, key=lambda row: (-row.total_ns, row.group))
