"""Stored runs in the formats other tools read.

Chrome Trace Event JSON, as Perfetto and Tracy's `tracy-import-chrome` load it: `{"traceEvents":
[...]}` with complete events (`ph: "X"`, `ts`/`dur` in microseconds), integer `pid` per device and
`tid` per core and engine, `M` events naming the process and every thread, and `C` counter events
(one plot per counter: L1 bytes in use per core, shared-memory bandwidth). The work done once per
model load (const-eval) is a process of its own, its ops one after the other from time zero on a
clock of their own: it is not part of the step.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from tilescope.compiler.sim.tracks import parse_track

from tilescope.perfdb import timeline
from tilescope.perfdb.runs import get_run, load_ops

DEVICE_PID = 0
LOAD_PID = 1


def _track_order(track: str) -> tuple:
    """Cores in row-major order, each followed by its engines; then the other tracks by name."""
    core = parse_track(track)
    if core is None:
        return (1, track)
    return (0, core.row, core.col, core.rank, track)


def chrome_trace(session: Session, run_id: int) -> dict:
    """A run's zones and counters as a Chrome trace; times in microseconds."""
    run = get_run(session, run_id)
    zones = timeline.zones(session, run_id)
    counters = timeline.counters(session, run_id)
    tracks = sorted({z.track for z in zones}, key=_track_order)
    tid = {track: index + 1 for index, track in enumerate(tracks)}  # tid 0 is left to counters
    events: list[dict] = [
        {
            "ph": "M",
            "name": "process_name",
            "pid": DEVICE_PID,
            "tid": 0,
            "args": {"name": f"{run.target.name} (run {run.id}: {run.model.name})"},
        },
    ]
    for track in tracks:
        events.append({"ph": "M", "name": "thread_name", "pid": DEVICE_PID, "tid": tid[track], "args": {"name": track}})
        events.append(
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": DEVICE_PID,
                "tid": tid[track],
                "args": {"sort_index": tid[track]},
            }
        )
    for z in zones:
        events.append(
            {
                "ph": "X",
                "name": z.name,
                "cat": "op" if z.depth == 0 else "phase",
                "pid": DEVICE_PID,
                "tid": tid[z.track],
                "ts": z.start_ns / 1e3,
                "dur": (z.end_ns - z.start_ns) / 1e3,
                "args": {"op": z.op},
            }
        )
    for c in counters:
        # one plot per counter track; Tracy shows args keys ending in _bytes as memory
        label = f"L1 {c.track}" if c.name == "l1_bytes" else f"{c.track} bandwidth"
        events.append(
            {"ph": "C", "name": label, "pid": DEVICE_PID, "tid": 0, "ts": c.t_ns / 1e3, "args": {c.name: c.value}}
        )
    events.extend(_load_events(load_ops(run)))
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"run": run.id, "model": run.model_ref}}


def _load_events(load: list) -> list[dict]:
    """The ops run once per model load, back to back on one thread of their own process."""
    if not load:
        return []
    name = "model load (const-eval: once per load, not in the step)"
    events = [
        {"ph": "M", "name": "process_name", "pid": LOAD_PID, "tid": 0, "args": {"name": name}},
        {"ph": "M", "name": "thread_name", "pid": LOAD_PID, "tid": 1, "args": {"name": "load"}},
    ]
    t_ns = 0.0
    for op in load:
        events.append(
            {
                "ph": "X",
                "name": op.name,
                "cat": "load",
                "pid": LOAD_PID,
                "tid": 1,
                "ts": t_ns / 1e3,
                "dur": op.duration_ns / 1e3,
                "args": {"op": op.name, "kind": op.kind},
            }
        )
        t_ns += op.duration_ns
    return events
