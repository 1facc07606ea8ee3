"""Timeline track names: built here for the simulator, parsed here for whoever reads them back.

A core's row is "core R,C"; each of its engines has a row of its own, "core R,C/ENGINE", listed
after it. Any other track (the device's ops, a shared memory's counters) belongs to no core. On a
system of several devices each device has a row of its ops, "device D", and the links a
collective uses a row, "link AXES" (the mesh axes its devices differ along).
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

ENGINES = ("reader", "compute", "writer")  # a core's three engines, in the order a tile moves through them
_CORE = re.compile(r"core (\d+),(\d+)(?:/(.*))?")


class CoreTrack(NamedTuple):
    """What a core's track names: the core, and the engine ("" for the core's own row)."""

    row: int
    col: int
    engine: str = ""

    @property
    def rank(self) -> int:
        """Its place among the core's rows: the core's own first, then ENGINES in order, any other last."""
        if not self.engine:
            return 0
        return ENGINES.index(self.engine) + 1 if self.engine in ENGINES else len(ENGINES) + 1


@cache  # a run names each core's track once per op
def core_track(core: tuple[int, int]) -> str:
    return f"core {core[0]},{core[1]}"


def engine_track(core: str, engine: str) -> str:
    """The row of `engine` under the core track `core`."""
    return f"{core}/{engine}"


def parse_track(track: str) -> CoreTrack | None:
    """The core (and engine) `track` is a row of; None for a track of no core."""
    match = _CORE.fullmatch(track)
    if match is None:
        return None
    return CoreTrack(int(match.group(1)), int(match.group(2)), match.group(3) or "")


def link_track(axes: tuple[str, ...]) -> str:
    """The row of the links a collective over mesh `axes` uses (its devices differ along them)."""
    return f"link {','.join(axes) or 'all'}"


def is_link_track(track: str) -> bool:
    return track.startswith("link ")


def link_axes(track: str) -> list[str]:
    """The mesh axes of a link track (link_track's `axes`)."""
    return track.removeprefix("link ").split(",")


def device_track(device: int) -> str:
    return f"device {device}"


def is_device_track(track: str) -> bool:
    return track.startswith("device ") and track[7:].isdigit()
