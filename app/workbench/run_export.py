"""A stored run written out: its overrides in each format users exchange, its Chrome trace, or its
ops as tt-metal's CSV. The CLI's `export` and the page's Download button both write these."""

from __future__ import annotations

import json

from sqlalchemy.orm import Session

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import parse_item
from tilescope.overrides.formats import dump, left_out
from tilescope.overrides.override_set import OverrideSet
from tilescope.perfdb.exports import chrome_trace
from tilescope.perfdb.ops_csv import write_csv
from tilescope.perfdb.runs import get_run
from tilescope.perfdb.schema import Run

from tilescope.app.workbench.export_formats import EXPORT_FORMATS
from tilescope.app.workbench.runs import target_of


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
    items = [parse_item(item) for item in run.overrides]
    return OverrideSet(items, run.policy, run.dispatch, run.l1_usage_cap, bool(run.data_tiling) or None)


SHOWN_LEFT_OUT = 3  # items a note names of what a tool's format left out


READERS = {"tt-mlir": "tt-mlir", "tt-explorer": "TT-Explorer"}  # who reads a tool's format


def left_out_note(left: list[str], fmt: str) -> str | None:
    """One line on what a tool's format could not carry of a run's overrides, or None."""
    if not left:
        return None
    more = len(left) - SHOWN_LEFT_OUT
    named = ", ".join(left[:SHOWN_LEFT_OUT]) + (f" and {more} more" if more > 0 else "")
    return (
        f"left out of the {fmt} file, as {READERS[fmt]} does not read them: {named} "
        "(the tilescope JSON export keeps every setting)"
    )


def export_run(session: Session, run_id: int, fmt: str) -> tuple[str, str, str | None]:
    """The text of run `run_id` in `fmt` (one of EXPORT_FORMATS), a file name for it, and a line
    on what the format left out of the run's overrides (None: nothing)."""
    if fmt not in EXPORT_FORMATS:
        raise TilescopeError(f"unknown export format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}")
    run = get_run(session, run_id)
    note = None
    if fmt == "chrome":
        text = json.dumps(chrome_trace(session, run_id))
    elif fmt == "csv":
        text = write_csv(session, run_id, peak_bytes_per_s(run))
    else:
        overrides = run_overrides(run)
        text = dump(overrides, {"overrides": "tilescope"}.get(fmt, fmt))
        note = left_out_note(left_out(overrides, fmt), fmt)
    return text, f"tilescope-run{run_id}-{EXPORT_FORMATS[fmt][1]}", note
