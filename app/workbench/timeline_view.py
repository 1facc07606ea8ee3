"""The timeline panel's data: a window of a run's zones at one level of detail, and its counter
plots."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from tilescope.compiler.sim.tracks import is_device_track, parse_track
from tilescope.perfdb.runs import op_records_between
from tilescope.perfdb.timeline import counter_envelope, counter_names, counters, merged, timeline_window

from tilescope.app.workbench.run_view import RunView

DEVICE_ROW = "device"  # the timeline's top row: each op once, from its start to its end


@dataclass(frozen=True)
class TimelineView:
    items: list  # the device row's ops, then the core rows' zones and markers (or their engines')
    rows: list[str]  # the rows to draw: the device's, then each core's
    window: tuple[float, float]  # the time (ns) the items cover: the view, and a view's width either side
    complete: bool  # every zone of the window is there one by one: a zoom or pan inside needs nothing more


def timeline(
    session: Session,
    run: RunView,
    window: tuple[float, float] | None = None,
    pixels: int = 1600,
    engines: bool = False,
) -> TimelineView:
    """The timeline over `window` (ns; default the whole run), and a view's width either side so a
    pan is drawn in the browser: a device row of the ops, then one row per core, or, if `engines`,
    its engines' zones (reader, compute, writer) in lanes of its row. As Tracy draws, every row is
    drawn at the level of detail of `pixels` across: zones shorter than about a pixel come merged
    into "N zones" markers, so a row holds at most a few items per pixel however many zones the run
    has, and no row is ever left out."""
    total = max(run.total_ns, 1.0)
    t0, t1 = window or (0.0, total)
    resolution = (t1 - t0) / pixels
    rows = [(t, parse_track(t)) for t in run.tracks]
    # a system of several devices: a row per device, then one per set of links collectives use; a
    # measured run's other rows (signposts, traced regions, host ops, a trace's threads) after them
    system_rows = _system_rows(run.tracks)
    tracks = [t for t, core in rows if core is not None and bool(core.engine) == engines]
    cores = [t for t, core in rows if core is not None and not core.engine]
    span = (max(0.0, 2 * t0 - t1), min(total, 2 * t1 - t0))
    # each op of the first device on the device row (a measured run's devices each have a row of
    # their own ops), those shorter than a pixel merged, as on the core rows
    first = min((int(t[7:]) for t in system_rows if is_device_track(t)), default=0)
    records = [r for r in op_records_between(session, run.id, *span) if r.device == first]
    device = merged(
        DEVICE_ROW,
        [r.name for r in records],
        [r.start_ns for r in records],
        [r.start_ns + r.duration_ns for r in records],
        resolution,
    )
    if system_rows:
        device = device + timeline_window(session, run.id, *span, resolution, system_rows)
    items = timeline_window(session, run.id, *span, resolution, tracks)
    complete = all(i.count == 1 for i in device) and all(i.count == 1 for i in items)
    return TimelineView(device + items, [DEVICE_ROW, *system_rows, *cores], span, complete)


def _system_rows(tracks) -> list[str]:
    """The rows that are no core's, devices first, in the order the run lists them."""
    others = [t for t in tracks if parse_track(t) is None]
    return [t for t in others if is_device_track(t)] + [t for t in others if not is_device_track(t)]


def counter_steps(session: Session, run_id: int, end_ns: float) -> dict[str, list[tuple[float, float]]]:
    """The timeline's counter plots: L1 in use on the fullest core, and each shared memory's
    bandwidth in use, as (t_ns, value) steps, each to the run's end (`end_ns`)."""
    steps = {"l1_bytes": counter_envelope(session, run_id, "l1_bytes")}
    for name in counter_names(session, run_id):
        if name.endswith("_bytes_per_s"):
            # an op's end (0) and the next op's start share a time: the start holds after it
            steps[name] = sorted((c.t_ns, c.value) for c in counters(session, run_id, name))
    return {name: to_run_end(s, end_ns) for name, s in steps.items() if s}


def to_run_end(steps: list[tuple[float, float]], end_ns: float) -> list[tuple[float, float]]:
    """(t_ns, value) steps of a counter held to the run's end: it is sampled as an op starts, and
    its last value holds while the last op runs."""
    return steps + [(end_ns, steps[-1][1])] if steps and steps[-1][0] < end_ns else steps
