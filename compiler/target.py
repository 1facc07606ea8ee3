"""Targets are data files (TOML); this module reads and checks them.

A built-in target is named (`wormhole_n150`); any other target is a path to a file of the same
schema. A bad file is an error naming the file and the key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import TargetError

BUILTIN_DIR = Path(__file__).parent / "targets"
FIDELITIES = ("lofi", "hifi2", "hifi3", "hifi4")
DISPATCH_MODES = ("host", "trace")


@dataclass(frozen=True)
class Memory:
    name: str
    scope: str  # core (per-core L1 / local store) | device (shared: LLS, DRAM)
    capacity_bytes: int
    bytes_per_s: float  # per core for scope=core, aggregate for scope=device
    channels: int = 1


@dataclass(frozen=True, eq=False)  # identity: one object per file content (see load_target)
class Target:
    name: str
    description: str
    clock_hz: float
    grid: tuple[int, int]
    tile: tuple[int, int]
    matrix_flops_per_cycle: int
    cycles_per_tile: dict[str, int]
    matrix_min_rows: int
    vector_elements_per_cycle: int
    memories: dict[str, Memory]
    noc_count: int
    noc_link_bytes_per_cycle: int
    noc_hop_cycles: int
    noc_interface_cycles: int
    dispatch_ns: dict[str, float]
    fusion: dict[str, bool]  # which element-wise ops the target's kernels can fuse: activation, bias
    source: dict[str, Any]  # the whole file, kept so a stored run records what it ran on

    @property
    def cores(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def core_memory(self) -> Memory:
        return next(m for m in self.memories.values() if m.scope == "core")

    @property
    def dram(self) -> Memory:
        return self.memories["dram"]

    @property
    def noc_bytes_per_s(self) -> float:
        """One NoC link's bandwidth: the most one core's reader (or writer) moves per second."""
        return self.noc_link_bytes_per_cycle * self.clock_hz

    @property
    def peak_flops(self) -> float:
        """Matrix peak of the whole grid at LoFi."""
        return self.matrix_flops_per_cycle * self.cores * self.clock_hz


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def load_target(name_or_path: str) -> Target:
    """A built-in target by name or a target file by path; the same file content gives the same
    Target object, so callers may cache on it, and an edited file is read afresh."""
    path = BUILTIN_DIR / f"{name_or_path}.toml"
    if not path.exists():
        path = Path(name_or_path).expanduser()
        if path.suffix != ".toml" or not path.is_file():
            raise TargetError(
                f"unknown target {name_or_path!r}; built in: {', '.join(builtin_names())}, "
                "or a path to a .toml target file"
            )
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise TargetError(f"{path}: cannot read: {err}") from None
    return _parse_target(text, str(path))


@lru_cache(maxsize=32)
def _parse_target(text: str, where: str) -> Target:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TargetError(f"{where}: not valid TOML: {err}") from None
    return _target_from(data, where)


def _get(data: dict, key: str, kind: type, where: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise TargetError(f"{where}: missing key {key!r}")
        node = node[part]
    if kind is float and isinstance(node, int) and not isinstance(node, bool):
        node = float(node)
    if not isinstance(node, kind) or isinstance(node, bool):
        raise TargetError(f"{where}: key {key!r} must be {kind.__name__}, got {node!r}")
    if kind in (int, float) and node <= 0:
        raise TargetError(f"{where}: key {key!r} must be positive, got {node!r}")
    return node


def _dispatch_ns(data: dict, mode: str, where: str) -> float:
    """Host overhead per op launch; zero is allowed (a captured trace)."""
    value = _get(data, "dispatch", dict, where).get(f"{mode}_ns")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise TargetError(f"{where}: key 'dispatch.{mode}_ns' must be a number >= 0, got {value!r}")
    return float(value)


def _fusion(data: dict, where: str) -> dict[str, bool]:
    """Optional [fusion] table: activation, bias (both false when absent)."""
    table = data.get("fusion", {})
    if not isinstance(table, dict):
        raise TargetError(f"{where}: key 'fusion' must be a table")
    flags = {}
    for key in ("activation", "bias"):
        value = table.get(key, False)
        if not isinstance(value, bool):
            raise TargetError(f"{where}: key 'fusion.{key}' must be true or false, got {value!r}")
        flags[key] = value
    return flags


def _memories(data: dict, where: str) -> dict[str, Memory]:
    table = _get(data, "memory", dict, where)
    clock = _get(data, "clock_hz", float, where)
    memories = {}
    for name in table:
        scope = _get(data, f"memory.{name}.scope", str, where)
        if scope not in ("core", "device"):
            raise TargetError(f"{where}: key 'memory.{name}.scope' must be core or device, got {scope!r}")
        entry = table[name]
        if "bytes_per_cycle" in entry:
            bandwidth = _get(data, f"memory.{name}.bytes_per_cycle", float, where) * clock
        else:
            bandwidth = _get(data, f"memory.{name}.bytes_per_s", float, where)
        memories[name] = Memory(
            name=name,
            scope=scope,
            capacity_bytes=_get(data, f"memory.{name}.capacity_bytes", int, where),
            bytes_per_s=bandwidth,
            channels=_get(data, f"memory.{name}.channels", int, where) if "channels" in entry else 1,
        )
    if sum(m.scope == "core" for m in memories.values()) != 1:
        raise TargetError(f"{where}: key 'memory' must declare exactly one memory with scope = \"core\"")
    if "dram" not in memories:
        raise TargetError(f"{where}: missing key 'memory.dram'")
    return memories


def _target_from(data: dict, where: str) -> Target:
    cycles = _get(data, "matrix.cycles_per_tile", dict, where)
    for fidelity in FIDELITIES:
        _get(data, f"matrix.cycles_per_tile.{fidelity}", int, where)
    return Target(
        name=_get(data, "name", str, where),
        description=str(data.get("description", "")),
        clock_hz=_get(data, "clock_hz", float, where),
        grid=(_get(data, "grid.rows", int, where), _get(data, "grid.cols", int, where)),
        tile=(_get(data, "tile.rows", int, where), _get(data, "tile.cols", int, where)),
        matrix_flops_per_cycle=_get(data, "matrix.flops_per_cycle", int, where),
        cycles_per_tile={f: int(cycles[f]) for f in FIDELITIES},
        matrix_min_rows=_get(data, "matrix.min_rows", int, where),
        vector_elements_per_cycle=_get(data, "vector.elements_per_cycle", int, where),
        memories=_memories(data, where),
        noc_count=_get(data, "noc.count", int, where),
        noc_link_bytes_per_cycle=_get(data, "noc.link_bytes_per_cycle", int, where),
        noc_hop_cycles=_get(data, "noc.hop_cycles", int, where),
        noc_interface_cycles=_get(data, "noc.interface_cycles", int, where),
        dispatch_ns={mode: _dispatch_ns(data, mode, where) for mode in DISPATCH_MODES},
        fusion=_fusion(data, where),
        source=data,
    )
