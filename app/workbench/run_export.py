"""A stored run written out: its overrides in each format users exchange, its Chrome trace, or its
ops as tt-metal's CSV. The CLI's `export` and the page's Download button both write these."""

from __future__ import annotations

import json

from sqlalchemy.orm import Session

from compiler.errors import TilescopeError
from compiler.target import load_target
from overrides import parse_item
from overrides.formats import OverrideSet, dump
from perfdb.exports import chrome_trace
from perfdb.ops_csv import write_csv
from perfdb.queries import get_run
from perfdb.schema import Run

from .runs import target_of

# format -> (what a user picks, file name suffix)
EXPORT_FORMATS = {
    "overrides": ("overrides, tilescope JSON", "overrides.json"),
    "tt-mlir": ("overrides, tt-mlir options", "overrides.txt"),
    "tt-explorer": ("overrides, TT-Explorer JSON", "tt-explorer.json"),
    "chrome": ("trace, Chrome/Perfetto JSON", "trace.json"),
    "csv": ("ops, tt-metal CSV", "ops.csv"),
}


def peak_bytes_per_s(run: Run) -> dict[str, float]:
    """Peak bytes/s by path of the target a run ran on, for utilization columns."""
    try:
        target = load_target(target_of(run), run.target.description or None)
    except TilescopeError:
        return {}
    peaks = {name: memory.bytes_per_s for name, memory in target.memories.items() if memory.shared}
    peaks["noc"] = target.noc_bytes_per_s * target.cores * target.noc_count
    return peaks


def run_overrides(run: Run) -> OverrideSet:
    return OverrideSet([parse_item(item) for item in run.overrides], run.policy, run.dispatch, run.l1_usage_cap)


def export_run(session: Session, run_id: int, fmt: str) -> tuple[str, str]:
    """The text of run `run_id` in `fmt` (one of EXPORT_FORMATS) and a file name for it."""
    if fmt not in EXPORT_FORMATS:
        raise TilescopeError(f"unknown export format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}")
    run = get_run(session, run_id)
    if fmt == "chrome":
        text = json.dumps(chrome_trace(session, run_id))
    elif fmt == "csv":
        text = write_csv(session, run_id, peak_bytes_per_s(run))
    else:
        text = dump(run_overrides(run), {"overrides": "tilescope"}.get(fmt, fmt))
    return text, f"tilescope-run{run_id}-{EXPORT_FORMATS[fmt][1]}"
