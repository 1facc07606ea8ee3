"""The statistics tab's table of each device's time on a system of several devices."""

from __future__ import annotations

from collections.abc import Sequence

from dash import html

from ..workbench.device_split import DeviceSplit
from . import ids
from .grids import column, grid

DEVICE_COLUMNS = (
    ("device", "device", "text"),
    ("compute", "compute us", "us"),
    ("collectives", "collectives us", "us"),
    ("overlap", "overlapped us", "us"),
    ("idle", "idle us", "us"),
)


def devices_children(split: Sequence[DeviceSplit]) -> list:
    """Each device's step split into compute, collectives (on its links), their overlap and idle."""
    if not split:
        return []
    rows = [
        dict(
            device=d.device,
            compute=d.compute_ns / 1e3,
            collectives=d.collectives_ns / 1e3,
            overlap=d.overlap_ns / 1e3,
            idle=d.idle_ns / 1e3,
        )
        for d in split
    ]
    columns = [column(key, label, kind, flex=1) for key, label, kind in DEVICE_COLUMNS]
    head = html.H4(f"Per device: {len(split)} devices, one program each on its piece", className="subhead")
    return [head, grid(ids.DEVICES_TABLE, columns, rows, height=min(240, 42 + 28 * len(rows)))]
