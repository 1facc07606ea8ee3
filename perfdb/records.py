"""What save_run stores: a run, its op records, its timeline (zones and counter samples) as columns,
and the ops it runs once per model load.

An op's record is the compiler's (compiler.sim.records.OpTiming), as the simulator gives it or
ops_csv makes it of a measured report; perfdb declares the rest, and every writer builds them.
Timelines are columns because a simulated run holds hundreds of thousands of zones, and the
simulator gives them so; rows of tuples are turned into columns once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from tilescope.compiler.sim.records import OpTiming

OP_FIELDS = tuple(f.name for f in fields(OpTiming))  # the op_records table's columns besides its keys


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadOp:
    """An op evaluated once when the model is loaded (the compiler's const-eval: a weight's
    transpose, reshape, typecast or broadcast), as a run keeps it: on a clock of its own, so
    without a start, and with no zones."""

    name: str
    kind: str
    duration_ns: float
    bytes: dict[str, float]  # as OpTiming's
    bound: str
    memory: str  # where the op's output lives

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def of(cls, op) -> LoadOp:
        """The load op of anything with its fields: the simulator's OpTiming, or a stored dict."""
        if isinstance(op, dict):
            return cls(**{f.name: op[f.name] for f in fields(cls)})
        return cls(**{f.name: getattr(op, f.name) for f in fields(cls)})


def _columns(record, integers: Sequence[str], floats: Sequence[str]) -> None:
    """Make the named columns of `record` int64 and float64 arrays of one length (no copy of
    arrays that already are)."""
    for names, dtype in ((integers, np.int64), (floats, np.float64)):
        for name in names:
            object.__setattr__(record, name, np.asarray(getattr(record, name), dtype))
    lengths = {len(getattr(record, name)) for name in (*integers, *floats)}
    if len(lengths) > 1:
        raise ValueError(f"{type(record).__name__}: columns of different lengths {sorted(lengths)}")


@dataclass(frozen=True, eq=False)  # arrays: compared by identity
class ZoneColumns:
    """A run's timeline zones, a row per zone: `track` indexes `tracks` (in the order the timeline
    lists them), `name` and `op` index `names`."""

    tracks: list[str]
    names: list[str]
    track: np.ndarray
    depth: np.ndarray
    name: np.ndarray
    start: np.ndarray  # ns
    end: np.ndarray
    op: np.ndarray

    def __post_init__(self) -> None:
        _columns(self, ("track", "depth", "name", "op"), ("start", "end"))

    def __len__(self) -> int:
        return len(self.track)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, int, str, float, float, str]]) -> ZoneColumns:
        """Zones given as (track, depth, name, start_ns, end_ns, op); tracks and names numbered
        in the order seen."""
        tracks: dict[str, int] = {}
        names: dict[str, int] = {}
        listed = list(rows)
        track, depth, name, start, end, op = zip(*listed) if listed else ((),) * 6  # transposed in C
        track_ids = [tracks.setdefault(t, len(tracks)) for t in track]
        name_ids = [names.setdefault(n, len(names)) for n in name]
        op_ids = [names.setdefault(o, len(names)) for o in op]
        return cls(list(tracks), list(names), track_ids, depth, name_ids, start, end, op_ids)


@dataclass(frozen=True, eq=False)  # arrays: compared by identity
class CounterColumns:
    """A run's counter samples, a row per sample: `track` indexes `tracks`, `name` indexes `names`."""

    tracks: list[str]
    names: list[str]
    track: np.ndarray
    name: np.ndarray
    t: np.ndarray  # ns
    value: np.ndarray

    def __post_init__(self) -> None:
        _columns(self, ("track", "name"), ("t", "value"))

    def __len__(self) -> int:
        return len(self.track)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, float, float]] = ()) -> CounterColumns:
        """Samples given as (track, name, t_ns, value)."""
        tracks: dict[str, int] = {}
        names: dict[str, int] = {}
        listed = list(rows)
        track, name, t, value = zip(*listed) if listed else ((),) * 4
        track_ids = [tracks.setdefault(x, len(tracks)) for x in track]
        name_ids = [names.setdefault(n, len(names)) for n in name]
        return cls(list(tracks), list(names), track_ids, name_ids, t, value)


@dataclass
class NewRun:
    """Everything about one run; the caller converts its simulator output into this."""

    model_ref: str
    model_name: str
    source_hash: str
    source_text: str
    target: str  # the target's name
    total_ns: float
    device_ns: float
    ops: Sequence[OpTiming]
    zones: ZoneColumns
    counters: CounterColumns = field(default_factory=CounterColumns.from_rows)
    dispatch: str = "host"
    policy: str = "dram-interleaved"
    target_ref: str = ""  # how the target was asked for: a built-in name or a file path
    target_text: str = ""  # the target description it ran on
    l1_usage_cap: float = 0.8
    data_tiling: bool = False
    overrides: list[str] = field(default_factory=list)
    override_outcomes: list[dict] = field(default_factory=list)
    label: str = ""
    parent_id: int | None = None
    kind: str = "simulated"  # or measured (an imported ops perf report)
    # the ops run once per model load, in the order they ran, and their total: neither is in total_ns
    load_ops: Sequence[LoadOp] = ()
    load_ns: float = 0.0
    mesh: Sequence[tuple[str, int]] = ()  # (axis, size) of the devices' mesh, major to minor; () on one
