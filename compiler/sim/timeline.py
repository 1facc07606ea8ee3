"""A run's timeline: each op's zones on the rows of the cores that run it, their reader, compute and
writer engines, the devices and the links (track names: compiler/sim/tracks.py), and counters: L1
in use on each core, and each shared memory's and link's bandwidth in use."""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np

from tilescope.compiler.ir.meta import L1_LIVE_PER_CORE
from tilescope.compiler.ir.core_work import Kernel
from tilescope.compiler.ir.graph import Op
from tilescope.compiler.sim.records import LINK, NS, OpTiming, ticks
from tilescope.compiler.sim.result import CoreTime
from tilescope.compiler.sim.tracks import ENGINES, core_track, device_track, engine_track
from tilescope.compiler.sim.zone_tables import CounterTable, ZoneTable
from tilescope.compiler.targets.chip import Target

PHASES = ("read", "compute", "write")  # what each engine does for an op


class Timeline:
    """The zones and counters of one run on `target`, whose program runs on `devices` devices."""

    def __init__(self, target: Target, devices: int) -> None:
        self.target = target
        self.devices = devices
        self.zones = ZoneTable()
        self.counters = CounterTable()
        self._core_rows: dict[tuple, tuple[int, ...]] = {}  # core set -> its rows' track sets
        self._counter_rows: dict[tuple, tuple[array, np.ndarray]] = {}  # core set -> its tracks, rows, columns
        self._device_rows: int | None = None  # the track set of every device's row, once made
        self._link_rows: dict[str, int] = {}  # a link track -> its track set
        self._one_device: dict[int, int] = {}  # a device -> its row's track set

    def on_cores(
        self, op: Op, kernel: Kernel, core_times: Sequence[CoreTime], timing: OpTiming, device: int | None = None
    ) -> None:
        """The op's zones on its cores (and on every device's row: each runs its piece at once),
        and its counters. With `device`, a program placing each op on a device runs it there
        alone: its zone goes on that device's row (the devices' cores are not told apart)."""
        name = self.zones.name_id(op.name)
        if device is not None:
            self.zones.add(self._device(device), 0, name, timing.start_ns, timing.end_ns, name)
            return
        self._core_zones(op, kernel, core_times, timing.start_ns)
        if self.devices > 1:
            self.zones.add(self._devices(), 0, name, timing.start_ns, timing.end_ns, name)
        self._counters(op, kernel, timing)

    def on_links(self, op: Op, track: str, timing: OpTiming) -> None:
        """A collective's zone on its links' row, and the bandwidth each device sends at meanwhile."""
        zones, counters = self.zones, self.counters
        name = zones.name_id(op.name)
        if track not in self._link_rows:
            self._link_rows[track] = zones.track_set([zones.track_id(track)])
        zones.add(self._link_rows[track], 0, name, timing.start_ns, timing.end_ns, name)
        counter, sent = [counters.track_id(track)], counters.name_id("link_bytes_per_s")
        counters.add(counter, sent, timing.start_ns, [timing.bandwidth(LINK)])
        counters.add(counter, sent, timing.end_ns, [0.0])

    def _device(self, device: int) -> int:
        """The track set of one device's row."""
        if device not in self._one_device:
            self._one_device[device] = self.zones.track_set([self.zones.track_id(device_track(device))])
        return self._one_device[device]

    def _devices(self) -> int:
        if self._device_rows is None:
            rows = [self.zones.track_id(device_track(d)) for d in range(self.devices)]
            self._device_rows = self.zones.track_set(rows)
        return self._device_rows

    def _core_zones(self, op: Op, kernel: Kernel, core_times: Sequence[CoreTime], start: float) -> None:
        """Each core's op zone and its reader, compute and writer phases; a group's cores share them."""
        zones = self.zones
        name = zones.name_id(op.name)
        for group, ct in zip(kernel.groups, core_times):
            blocks = max(1, group.blocks)
            end = start + ticks(ct.total * NS)
            rows = self._rows(group.cores)
            zones.add(rows[0], 0, name, start, end, name)
            first_block = ct.read / blocks * NS  # the compute engine starts once a block is read
            phases = (
                (start, start + ticks(ct.read * NS)),
                (start + ticks(first_block), start + ticks(first_block + ct.compute * NS)),
                (end - ticks(ct.write * NS), end),
            )
            for engine, (phase, (p0, p1)) in enumerate(zip(PHASES, phases), start=1):
                if p1 > p0:
                    zones.add(rows[engine], 1, zones.name_id(phase), p0, p1, name)

    def _rows(self, cores: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        """The track sets of a set of cores' rows, then of each engine's rows (kept: most ops run
        on one of a few core sets)."""
        key = tuple(cores)
        if key not in self._core_rows:
            self._core_rows[key] = tuple(
                self.zones.track_set(column) for column in zip(*(self._core_tracks(c) for c in cores))
            )
        return self._core_rows[key]

    def _core_tracks(self, core: tuple[int, int]) -> tuple[int, int, int, int]:
        """A core's row and its engines' rows, numbered together so the timeline lists them so."""
        zones = self.zones
        track = core_track(core)
        if track not in zones.tracks:
            for row in (track, *(engine_track(track, engine) for engine in ENGINES)):
                zones.track_id(row)
        first = zones.tracks[track]
        return first, first + 1, first + 2, first + 3

    def _counters(self, op: Op, kernel: Kernel, timing: OpTiming) -> None:
        """L1 bytes in use on each core while the op runs (tensors live in L1 plus the op's
        circular buffers), and each shared memory's bandwidth in use."""
        counters = self.counters
        live = op.meta.get(L1_LIVE_PER_CORE)
        l1 = counters.name_id("l1_bytes")
        for group in kernel.groups:
            key = tuple(group.cores)
            if key not in self._counter_rows:
                self._counter_rows[key] = (
                    array("q", (counters.track_id(core_track(core)) for core in group.cores)),
                    np.array(key).reshape(-1, 2).T,
                )
            tracks, (rows, cols) = self._counter_rows[key]
            values = np.full(len(rows), float(group.cb_bytes))
            if live is not None:  # cores outside the planned grid hold no tensors
                inside = (rows < live.shape[0]) & (cols < live.shape[1])
                values[inside] += live[rows[inside], cols[inside]]
            counters.add(tracks, l1, timing.start_ns, values)
        for path in timing.bytes:
            memory = self.target.memories.get(path)
            if memory is not None and memory.shared:
                track, name = [counters.track_id(path)], counters.name_id(f"{path}_bytes_per_s")
                counters.add(track, name, timing.start_ns, [timing.bandwidth(path)])
                counters.add(track, name, timing.end_ns, [0.0])
