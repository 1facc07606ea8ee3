"""A system's target file: its [system] and [link] tables read into a System, joined to the chip
target of its devices (docs/simulator.md, "System files"). A stored run keeps one text that alone
rebuilds the target: the system's file with its device's file embedded as [device] toml.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tilescope.compiler.errors import TargetError
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.targets.data_file import MISSING, checked, shown
from tilescope.compiler.targets.system import FABRICS, System

MAX_DEVICES = 1024  # a system's devices: more than any one host or rack of these parts holds
# The inclusive range of every number of a [system] table (docs/simulator.md, "System files").
SYSTEM_LIMITS: dict[str, tuple[float, float]] = {
    "system.rows": (1, MAX_DEVICES),
    "system.cols": (1, MAX_DEVICES),
    "link.bytes_per_s": (1e3, 1e16),  # 1 kB/s to 10 PB/s, one direction of one link
    "link.latency_ns": (0, 1e9),  # at most a second per hop
    "link.per_neighbour": (1, 64),
}

# (device name, the file's embedded [device] toml or None, where) -> the device's chip target
DeviceLoader = Callable[[str, str | None, str], Target]


def _get(data: dict, key: str, kind: type, where: str, default: Any = MISSING) -> Any:
    return checked(data, key, kind, where, SYSTEM_LIMITS, default)


def system_target(data: dict, where: str, assumed: tuple[str, ...], device_of: DeviceLoader) -> Target:
    """A parsed system file: its device target's chip, with the system's devices and links."""
    name = _get(data, "system.device", str, where)
    device = device_of(name, _get(data, "device.toml", str, where, default=None), where)
    if device.system.devices > 1 or device.system.device:
        raise TargetError(f"{where}: key 'system.device' must be a single device, not the system {shown(device.name)}")
    if device.name != name:
        raise TargetError(f"{where}: key 'device.toml' describes {shown(device.name)}, not {shown(name)}")
    own = tuple(key for key in assumed if not key.startswith("device."))  # not the embedded file's
    system = dataclasses.replace(_system(data, where, name), assumed=own)
    return dataclasses.replace(device, name=system.name, description=system.description, system=system)


def _system(data: dict, where: str, device: str) -> System:
    """The [system] and [link] tables of a parsed system file."""
    rows, cols = _get(data, "system.rows", int, where), _get(data, "system.cols", int, where)
    if rows * cols > MAX_DEVICES:
        raise TargetError(f"{where}: system {rows}x{cols}: at most {MAX_DEVICES} devices")
    fabric = _get(data, "system.fabric", str, where, default="mesh")
    if fabric not in FABRICS:
        raise TargetError(f"{where}: key 'system.fabric' must be one of {', '.join(FABRICS)}, got {fabric!r}")
    single = rows * cols == 1
    return System(
        name=_get(data, "name", str, where),
        description=_get(data, "description", str, where, default=""),
        device=device,
        mesh=(rows, cols),
        link_bytes_per_s=0.0 if single else _get(data, "link.bytes_per_s", float, where),
        link_latency_ns=0.0 if single else _get(data, "link.latency_ns", float, where),
        links_per_neighbour=_get(data, "link.per_neighbour", int, where, default=1),
        wraps=(
            _get(data, "system.wrap_rows", bool, where, default=False),
            _get(data, "system.wrap_cols", bool, where, default=False),
        ),
        fabric=fabric,
    )
