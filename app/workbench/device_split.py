"""Where each device's time goes on a system of several: compute, collectives, both, or idle.

Every device runs the same program on its piece (SPMD), so each device's row holds the compute
ops and the links beside it the collectives; a collective overlaps the compute that does not
need its result. The split is over the step (the run's total): compute + collectives - overlap
+ idle = total.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sim.tracks import device_track, is_device_track


@dataclass(frozen=True)
class DeviceSplit:
    device: str  # its timeline row, "device D"
    compute_ns: float
    collectives_ns: float
    overlap_ns: float  # collectives hidden under compute
    idle_ns: float


def _union(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _length(spans: Sequence[tuple[float, float]]) -> float:
    return sum(end - start for start, end in spans)


def _overlap(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> float:
    """The time two sorted, disjoint span lists share."""
    shared, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        shared += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return shared


def split_by_device(records, tracks: Sequence[str], total_ns: float) -> list[DeviceSplit]:
    """Each device's split (none for a run on one device), from the run's op records."""
    devices = [t for t in tracks if is_device_track(t)]
    if not devices:
        return []
    return _each(records, devices, total_ns)


def split_each_device(records, tracks: Sequence[str], total_ns: float) -> list[DeviceSplit]:
    """As split_by_device, and for a run on one device its one device, "device 0", all compute."""
    return _each(records, [t for t in tracks if is_device_track(t)] or [device_track(0)], total_ns)


def _each(records, devices: Sequence[str], total_ns: float) -> list[DeviceSplit]:
    """A simulated run's records are one device's, every device alike (one program); a measured
    run's say which device each op ran on, and each device is split by its own."""
    by_device: dict[int, list] = {}
    for r in records:
        by_device.setdefault(r.device, []).append(r)
    if len(by_device) <= 1:
        return [_split(d, records, total_ns) for d in devices]
    return [_split(d, by_device.get(int(d.removeprefix("device ")), []), total_ns) for d in devices]


LINKED = frozenset({*COLLECTIVES, "transfer"})  # ops on the links: collectives, and a program's transfers


def _split(device: str, records, total_ns: float) -> DeviceSplit:
    compute = _union((r.start_ns, r.start_ns + r.duration_ns) for r in records if r.kind not in LINKED)
    links = _union((r.start_ns, r.start_ns + r.duration_ns) for r in records if r.kind in LINKED)
    overlap = _overlap(compute, links)
    computing, linked = _length(compute), _length(links)
    idle = max(0.0, total_ns - (computing + linked - overlap))
    return DeviceSplit(device, computing, linked, overlap, idle)


SPLIT_PARTS = ("compute", "collectives", "overlap", "idle")


@dataclass(frozen=True)
class DevicePair:
    """One device's split in both runs compared; None for a run without that device."""

    device: str
    a: DeviceSplit | None
    b: DeviceSplit | None

    def to_json(self) -> dict:
        """{device, a, b}, each side {compute_ns, collectives_ns, overlap_ns, idle_ns} or None."""
        return {"device": self.device, "a": _parts(self.a), "b": _parts(self.b)}


def side_by_side(a: Sequence[DeviceSplit], b: Sequence[DeviceSplit]) -> tuple[DevicePair, ...]:
    """Two runs' splits device by device, device 0 to the last either has."""
    by_device = [{d.device: d for d in side} for side in (a, b)]
    count = max((len(side) for side in (a, b)), default=0)
    return tuple(
        DevicePair(device, *(side.get(device) for side in by_device))
        for device in (device_track(number) for number in range(count))
    )


def _parts(split: DeviceSplit | None) -> dict | None:
    return None if split is None else {f"{part}_ns": getattr(split, f"{part}_ns") for part in SPLIT_PARTS}
