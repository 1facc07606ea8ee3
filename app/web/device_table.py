"""The tables of each device's time on a system of several devices: the statistics tab's of one
run, and the diff's of two side by side."""

from __future__ import annotations

from collections.abc import Sequence

from dash import html

from tilescope.app.workbench.device_split import DevicePair, DeviceSplit
from tilescope.app.web import ids
from tilescope.app.web.grids import column, grid

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
    alike = all((d.compute_ns, d.collectives_ns) == (split[0].compute_ns, split[0].collectives_ns) for d in split)
    # one program on every device's piece, or a program placing each op on a device of its own
    how = "one program each on its piece" if alike else "each running its own ops"
    head = html.H4(f"Per device: {len(split)} devices, {how}", className="subhead")
    return [head, grid(ids.DEVICES_TABLE, columns, rows, height=min(240, 42 + 28 * len(rows)))]


# a device the run does not have: a dash, not an empty cell that reads as not yet loaded
DASH_US = {"function": "params.value == null ? '-' : d3.format(',.2f')(params.value)"}


def devices_diff_children(rows: Sequence[DevicePair], labels: tuple[str, str]) -> list:
    """Both runs' split device by device (app.workbench.device_split.side_by_side), when either ran
    on several devices; `-` for a device one run does not have."""
    if len(rows) <= 1:
        return []
    data = [
        {"id": row.device, "device": row.device}
        | {
            f"{key}_{side}": getattr(split, f"{key}_ns") / 1e3 if split is not None else None
            for key, *_ in DEVICE_COLUMNS[1:]
            for side, split in (("a", row.a), ("b", row.b))
        }
        for row in rows
    ]
    columns = [column("device", "device", "text", flex=1)]
    columns += [
        column(f"{key}_{side}", f"{name} {label}", "us", flex=1) | {"valueFormatter": DASH_US}
        for key, label, _ in DEVICE_COLUMNS[1:]
        for side, name in zip(("a", "b"), labels)
    ]
    head = html.H4(
        f"Per device: {labels[0]} on {_count(rows, 'a')}, {labels[1]} on {_count(rows, 'b')}", className="subhead"
    )
    return [head, grid(ids.DIFF_DEVICES, columns, data, height=min(280, 42 + 28 * len(data)))]


def _count(rows: Sequence[DevicePair], side: str) -> str:
    count = sum(getattr(row, side) is not None for row in rows)
    return f"{count} device{'s' * (count != 1)}"
