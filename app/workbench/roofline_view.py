"""The roofline panel's data: a run's compute ops as points under its target's roofs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilescope.compiler.targets.chip import Target


@dataclass(frozen=True)
class RooflinePoint:
    name: str
    kind: str
    bound: str
    memory: str  # the memory its intensity counts bytes of
    intensity: float  # FLOPs per byte of `memory`
    achieved: float  # FLOP/s


@dataclass(frozen=True)
class Roofline:
    points: list[RooflinePoint]
    roofs: dict[str, float]  # bytes/s of DRAM and of all cores' own memories
    peak_flops: float  # the matrix engines' bf16 peak


def roofline(target: Target, records: Sequence) -> Roofline:
    """The compute ops of a run (op records with their bytes by path) on the roofline of the
    target it ran on. An op is placed by its DRAM bytes, or by its own-memory bytes if it read
    no DRAM."""
    dram, local = target.dram, target.core_memory
    points = []
    for record in records:
        moved = record.bytes.get(dram.name, 0.0)
        memory = dram.name
        if not moved:
            moved, memory = record.bytes.get(local.name, 0.0), local.name
        seconds = record.duration_ns * 1e-9  # 0 for a denormal duration: no rate to place
        if record.flops <= 0 or moved <= 0 or seconds <= 0:
            continue  # data movement only (or no time measured): no point on a roofline
        achieved = record.flops / seconds
        points.append(RooflinePoint(record.name, record.kind, record.bound, memory, record.flops / moved, achieved))
    roofs = {dram.name: dram.bytes_per_s, local.name: local.bytes_per_s * target.cores}
    return Roofline(points, roofs, target.peak_flops("bf16"))


@dataclass(frozen=True)
class RooflineDot:
    """The ops drawn at one place of a roofline: alike ops (a model's repeated layers) land on the
    same point, and one dot over another would hide how many there are."""

    points: tuple[RooflinePoint, ...]  # in the run's order

    @property
    def first(self) -> RooflinePoint:
        return self.points[0]


PLACES = 4  # significant digits a dot's position is told apart by: closer than that, points overlap


def stacked(points: Sequence[RooflinePoint]) -> list[RooflineDot]:
    """The points as dots, those of one bound and memory at the same place (to PLACES digits) in one."""
    at: dict[tuple, list[RooflinePoint]] = {}
    for p in points:
        at.setdefault((p.bound, p.memory, f"{p.intensity:.{PLACES}g}", f"{p.achieved:.{PLACES}g}"), []).append(p)
    return [RooflineDot(tuple(same)) for same in at.values()]
