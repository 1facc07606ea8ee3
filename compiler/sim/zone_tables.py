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

import numpy as np


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
    """Zones as parallel columns. The cores of an op run in step, so a zone is added once for a set
    of tracks (numbered by track_set) and spread over them when the columns are read: a Python call
    per zone and set, whatever the number of cores."""

    def __init__(self) -> None:
        super().__init__()
        self._sets: list[array] = []  # track ids of each track set
        self._set = array("q")
        self._depth = array("q")
        self._name = array("q")
        self._start = array("d")
        self._end = array("d")
        self._op = array("q")
        self._spread: tuple[np.ndarray, ...] | None = None

    def track_set(self, tracks: Sequence[int]) -> int:
        """A number for a set of tracks (ids from track_id) that zones can be added to at once."""
        self._sets.append(array("q", tracks))
        return len(self._sets) - 1

    def add(self, tracks: int, depth: int, name: int, start: float, end: float, op: int) -> None:
        """One zone on every track of the set `tracks` (from track_set; names from name_id)."""
        self._set.append(tracks)
        self._depth.append(depth)
        self._name.append(name)
        self._start.append(start)
        self._end.append(end)
        self._op.append(op)
        self._spread = None

    def _columns(self) -> tuple[np.ndarray, ...]:
        """track, depth, name, start, end, op: a row per zone and track of its set, in order added."""
        if self._spread is None:
            sizes = np.array([len(s) for s in self._sets], np.int64)
            flat = np.frombuffer(b"".join(s.tobytes() for s in self._sets), np.int64)
            first = np.cumsum(sizes) - sizes  # where each set starts in `flat`
            which = np.frombuffer(self._set, np.int64) if len(self._set) else np.empty(0, np.int64)
            counts = sizes[which]
            zone = np.repeat(np.arange(len(which)), counts)  # each row's zone
            # row r of zone z is track flat[first[set of z] + (r - the first row of z)]
            at = (first[which] - (np.cumsum(counts) - counts))[zone] + np.arange(len(zone))
            self._spread = (
                flat[at],
                *(
                    np.frombuffer(c, np.int64 if c.typecode == "q" else np.float64)[zone]
                    if len(c)
                    else np.empty(0, np.int64 if c.typecode == "q" else np.float64)
                    for c in (self._depth, self._name, self._start, self._end, self._op)
                ),
            )
        return self._spread

    track = property(lambda self: self._columns()[0])
    depth = property(lambda self: self._columns()[1])
    name = property(lambda self: self._columns()[2])
    start = property(lambda self: self._columns()[3])
    end = property(lambda self: self._columns()[4])
    op = property(lambda self: self._columns()[5])

    def __len__(self) -> int:
        return len(self.track)

    def __iter__(self) -> Iterator[Zone]:
        tracks, names = self.track_names(), self.name_list()
        for t, d, n, s, e, o in zip(*(c.tolist() for c in self._columns())):
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
        if isinstance(values, np.ndarray):  # its bytes, not an element at a time
            self.value.frombytes(values.astype(np.float64).tobytes())
        else:
            self.value.extend(values)

    def __len__(self) -> int:
        return len(self.track)

    def __iter__(self) -> Iterator[Counter]:
        tracks, names = self.track_names(), self.name_list()
        for t, n, at, v in zip(self.track, self.name, self.t, self.value):
            yield Counter(tracks[t], names[n], at, v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CounterTable) and list(self) == list(other)
