"""Where a report is replayed: the target its DEVICE ARCH names (or the one asked for), and the
grid of cores each op ran on, as a rectangle of that target's grid.

A report names a chip, not a board: wormhole_b0 is replayed on the Wormhole n150 and blackhole on
the Blackhole p150; a report measured on several devices, on the system of that many of its
chips when one is built in. ttnn places an op on any set of cores (110 of a Blackhole's, in rows of
13); tilescope's grids are rectangles, so a core count is the rectangle of that many cores that
fits the target's grid, or, when no rectangle has exactly that many, the nearest (said in a note).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tilescope.compiler.errors import TargetError
from tilescope.compiler.profiles.chips import ARCH_TARGETS, UNSAID_TARGET
from tilescope.compiler.profiles.report import Report
from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.targets.chip import Target

DEFAULT_TARGET = UNSAID_TARGET  # a report that names no chip (DEVICE ARCH blank, absent or unknown)
# (chip target, devices) -> the built-in system of that many such chips
SYSTEMS = {("blackhole_p150", 8): "blackhole_8xp150", ("blackhole_p150", 2): "blackhole_p300"}
SYSTEMS |= {("wormhole_n150", 2): "wormhole_n300", ("wormhole_n150", 8): "t3k", ("wormhole_n150", 32): "galaxy"}
_CONFIG_GRID = re.compile(r"compute_with_storage_grid_size=\(x=(\d{1,3});y=(\d{1,3})\)")


@dataclass(frozen=True)
class ReplayTarget:
    """The target a report is replayed on, and why that one."""

    target: Target
    warning: str = ""  # a line for the user when the target is a guess or stands in for another


def replay_target(report: Report, asked: str | None = None) -> ReplayTarget:
    """The target `asked` (a name or file; a system when the report ran on several devices), else
    the one the report's DEVICE ARCH names; a report naming none is replayed on DEFAULT_TARGET
    with a warning."""
    devices = len(report.devices)
    if asked:
        target = load_target(asked)
        notes = [_other_chip(report, target)]
        if target.system.devices < devices:
            notes.append(
                f"{report.source}: measured on {devices} devices, replayed on {target.name}'s "
                f"{target.system.devices}: collectives are costed as copies"
            )
        return ReplayTarget(target, "; ".join(n for n in notes if n))
    arch = report.arch
    warning = ""
    if not arch:
        chip = DEFAULT_TARGET
        warning = f"{report.source}: no DEVICE ARCH in the report; replayed on {chip} (give --target to choose)"
    elif arch in ARCH_TARGETS:
        chip = ARCH_TARGETS[arch]
    else:  # a prediction for another chip is no prediction: unlike an import, which only records
        raise TargetError(f"{report.source}: DEVICE ARCH {arch[:32]!r} is no chip tilescope knows; give --target")
    if devices > 1:
        system = SYSTEMS.get((chip, devices))
        if system is None:
            note = f"{report.source}: no built-in system of {devices} {chip} chips; collectives are costed on one"
            return ReplayTarget(load_target(chip), "; ".join(w for w in (warning, note) if w))
        return ReplayTarget(load_target(system), warning)
    return ReplayTarget(load_target(chip), warning)


def _other_chip(report: Report, target: Target) -> str:
    """A line when `target` is not the chip the report names (its clock or grid differ: a file
    calibrated from that chip keeps both), else ""."""
    chip = ARCH_TARGETS.get(report.arch)
    if chip is None:
        return ""
    measured = load_target(chip)
    if (measured.clock_hz, measured.grid) == (target.clock_hz, target.grid):
        return ""
    return (
        f"{report.source}: measured on {report.arch} ({chip}), replayed on {target.name} as asked: "
        "a prediction for another chip, not a check of this one"
    )


@lru_cache(maxsize=1024)
def grid_of(cores: int, grid: tuple[int, int]) -> tuple[int, int]:
    """The rectangle of `cores` cores within `grid`: exactly that many, as square as it can be
    (ttnn's 110 cores on a Blackhole run as 10 rows of 11), else the nearest count (larger on a
    tie); the whole grid when `cores` is more than it has."""
    rows, cols = grid
    if cores >= rows * cols:
        return grid
    shapes = [(r, c) for r in range(1, rows + 1) for c in range(1, cols + 1)]
    return min(shapes, key=lambda g: (abs(g[0] * g[1] - cores), -g[0] * g[1], abs(g[0] - g[1]), g))


def config_grid(config: str, cores: int, grid: tuple[int, int]) -> tuple[int, int] | None:
    """The grid a program config names (compute_with_storage_grid_size, x across and y down),
    when it holds exactly the op's `cores` and fits the target's `grid`."""
    found = _CONFIG_GRID.search(config)
    if found is None:
        return None
    x, y = int(found[1]), int(found[2])
    if x * y != cores or y > grid[0] or x > grid[1]:
        return None
    return y, x
