"""A run's trace as columns: timeline zones and counter samples.

The simulator gives every core an op zone and three phase zones (reader, compute, writer) per op,
and an L1 sample: hundreds of thousands for one model. As an object each, they cost more than the
simulation that times them; as columns, the cores of one op, which share their times, are added
with one extend per column, and storing them (perfdb) reads the columns without a pass over the
rows. Columns are typed arrays: 8 bytes a value, where a list holds a pointer to a boxed one.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import NamedTuple


class Zone(NamedTuple):
    track: str  # "core r,c" for ops; "core r,c/reader|compute|writer" for phases
    depth: int
    name: str
    start_ns: float
    end_ns: float
    op: str


class _Numbered:
    """Tracks and names, numbered in the order first seen."""

    def __init__(self) -> None:
        self.tracks: dict[str, int] = {}
        self.names: dict[str, int] = {}

    def track_id(self, track: str) -> int:
        return self.tracks.setdefault(track, len(self.tracks))

    def name_id(self, name: str) -> int:
        return self.names.setdefault(name, len(self.names))

    def track_names(self) -> list[str]:
        return list(self.tracks)

    def name_list(self) -> list[str]:
        return list(self.names)


class ZoneTable(_Numbered):
    """Zones as parallel columns."""

    def __init__(self) -> None:
        super().__init__()
        self.track = array("q")
        self.depth = array("q")
        self.name = array("q")
        self.start = array("d")
        self.end = array("d")
        self.op = array("q")

    def add(self, tracks: Sequence[int], depth: int, name: int, start: float, end: float, op: int) -> None:
        """One zone, the same on every track of `tracks` (ids from track_id; names from name_id)."""
        k = len(tracks)
        self.track.extend(tracks)
        self.depth.extend(array("q", (depth,)) * k)  # a repeated array is a memory copy, not k conversions
        self.name.extend(array("q", (name,)) * k)
        self.start.extend(array("d", (start,)) * k)
        self.end.extend(array("d", (end,)) * k)
        self.op.extend(array("q", (op,)) * k)

    def __len__(self) -> int:
        return len(self.track)

    def __iter__(self) -> Iterator[Zone]:
        tracks, names = self.track_names(), self.name_list()
        for t, d, n, s, e, o in zip(self.track, self.depth, self.name, self.start, self.end, self.op):
            yield Zone(tracks[t], d, names[n], s, e, names[o])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ZoneTable) and list(self) == list(other)


class Counter(NamedTuple):
    track: str  # "core r,c" for L1 bytes in use; a memory name for its bandwidth in use
    name: str  # l1_bytes | dram_bytes_per_s | ...
    t_ns: float
    value: float


class CounterTable(_Numbered):
    """Counter samples as parallel columns."""

    def __init__(self) -> None:
        super().__init__()
        self.track = array("q")
        self.name = array("q")
        self.t = array("d")
        self.value = array("d")

    def add(self, tracks: Sequence[int], name: int, t: float, values: Sequence[float]) -> None:
        """One sample of counter `name` at `t` on each track of `tracks`, `values` in the same order."""
        k = len(tracks)
        self.track.extend(tracks)
        self.name.extend(array("q", (name,)) * k)
        self.t.extend(array("d", (t,)) * k)
        self.value.extend(values)

    def __len__(self) -> int:
        return len(self.track)

    def __iter__(self) -> Iterator[Counter]:
        tracks, names = self.track_names(), self.name_list()
        for t, n, at, v in zip(self.track, self.name, self.t, self.value):
            yield Counter(tracks[t], names[n], at, v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CounterTable) and list(self) == list(other)
