"""Targets are data files (TOML); this module reads and checks them.

A built-in target is named (`wormhole_n150`); any other target is a path to a file of the same
schema (documented in the README, "Target files"). A bad file is an error naming the file and key.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .dtypes import BYTES_PER_ELEMENT
from .errors import TargetError

BUILTIN_DIR = Path(__file__).parent / "targets"
FIDELITIES = ("lofi", "hifi2", "hifi3", "hifi4")
DISPATCH_MODES = ("host", "trace")
# core: a core's own memory (L1, local store); chip: shared on-chip scratch (LLS);
# device: off-chip device memory (DRAM); host: system memory across the host link.
SCOPES = ("core", "chip", "device", "host")


@dataclass(frozen=True)
class Memory:
    name: str
    scope: str
    capacity_bytes: int
    bytes_per_s: float  # per core for scope=core, shared by all cores otherwise
    latency_ns: float = 0.0
    channels: int = 1

    @property
    def shared(self) -> bool:
        return self.scope != "core"


@dataclass(frozen=True)
class MatrixEngine:
    flops_per_cycle: dict[str, int]  # per core, per input dtype, at the fastest fidelity
    fidelity_passes: dict[str, int]  # passes over the mantissas per math fidelity (1 for all: none)
    default_fidelity: dict[str, str]  # fidelity the compiler picks per dtype
    min_rows: int  # rows of a tile the engine processes at once (fewer still cost a full pass)
    fallback_dtype: str  # the engine computes inputs of a dtype it lacks in this one


@dataclass(frozen=True, eq=False)  # identity: one object per file content (see load_target)
class Target:
    name: str
    description: str
    clock_hz: float
    grid: tuple[int, int]
    tile: tuple[int, int]
    matrix: MatrixEngine
    vector_elements_per_cycle: int
    memories: dict[str, Memory]
    noc_count: int
    noc_link_bytes_per_cycle: int
    noc_hop_cycles: int
    noc_interface_cycles: int
    noc_multicast: bool
    dispatch_ns: dict[str, float]
    fusion: dict[str, bool]  # which element-wise ops the target's kernels can fuse: activation, bias
    assumed: tuple[str, ...]  # keys whose values no public document gives (see the file's comments)

    @property
    def cores(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def core_memory(self) -> Memory:
        return next(m for m in self.memories.values() if m.scope == "core")

    @property
    def dram(self) -> Memory:
        return next(m for m in self.memories.values() if m.scope == "device")

    @property
    def noc_bytes_per_s(self) -> float:
        """One NoC link's bandwidth: the most one core's reader (or writer) moves per second."""
        return self.noc_link_bytes_per_cycle * self.clock_hz

    def compute_dtype(self, dtype: str) -> str:
        """The dtype the matrix engine computes `dtype` inputs in."""
        return dtype if dtype in self.matrix.flops_per_cycle else self.matrix.fallback_dtype

    def default_fidelity(self, dtype: str) -> str:
        return self.matrix.default_fidelity.get(self.compute_dtype(dtype), "hifi4")

    def tile_cycles(self, dtype: str, fidelity: str, rows: int | None = None) -> float:
        """Cycles of one tile x tile x tile matrix multiply on one core. A tile of fewer `rows`
        (a short tile) costs its share of a full one, but never less than the engine's minimum
        rows per pass."""
        tile_rows, cols = self.tile
        flops = 2 * tile_rows * cols * cols
        per_cycle = self.matrix.flops_per_cycle[self.compute_dtype(dtype)]
        full = math.ceil(flops / per_cycle) * self.matrix.fidelity_passes[fidelity]
        if rows is None or rows >= tile_rows:
            return full
        return full * max(rows, self.matrix.min_rows) / tile_rows

    def peak_flops(self, dtype: str = "bf16", fidelity: str | None = None) -> float:
        """Matrix peak of the whole grid, at `fidelity` (the fastest when None)."""
        per_cycle = self.matrix.flops_per_cycle[self.compute_dtype(dtype)]
        passes = self.matrix.fidelity_passes[fidelity] if fidelity else min(self.matrix.fidelity_passes.values())
        return per_cycle * self.cores * self.clock_hz / passes

    @property
    def vector_ops_per_s(self) -> float:
        return self.vector_elements_per_cycle * self.cores * self.clock_hz


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def target_text(name_or_path: str) -> tuple[str, str]:
    """(TOML text, where it came from) of a built-in target name or a target file path."""
    path = BUILTIN_DIR / f"{name_or_path}.toml"
    if not path.exists():
        path = Path(name_or_path).expanduser()
        if path.suffix == ".toml" and not path.is_file():
            raise TargetError(f"{name_or_path}: no such target file")
        if path.suffix != ".toml":
            raise TargetError(
                f"unknown target {name_or_path!r}; built in: {', '.join(builtin_names())}, "
                "or a path to a .toml target file"
            )
    try:
        return path.read_text(), str(path)
    except (OSError, UnicodeDecodeError) as err:
        raise TargetError(f"{path}: cannot read: {err}") from None


def load_target(name_or_path: str, text: str | None = None) -> Target:
    """A built-in target by name or a target file by path (or, with `text`, the description a
    stored run kept). The same content gives the same Target object, so callers may cache on it,
    and an edited file is read afresh."""
    if text is not None:
        return _parse_target(text, name_or_path)
    return _parse_target(*target_text(name_or_path))


@lru_cache(maxsize=32)
def _parse_target(text: str, where: str) -> Target:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TargetError(f"{where}: not valid TOML: {err}") from None
    return _target_from(data, where, _assumed_keys(text))


def _assumed_keys(text: str) -> tuple[str, ...]:
    """Keys whose comment starts with 'ASSUMED': values no public document gives."""
    assumed, table, flagged = [], "", False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            table, flagged = stripped.strip("[]"), False
        elif stripped.startswith("#"):
            flagged = flagged or stripped.lstrip("# ").startswith("ASSUMED")
        elif "=" in stripped:
            if flagged or "# ASSUMED" in stripped:
                key = stripped.split("=", 1)[0].strip()
                assumed.append(f"{table}.{key}" if table else key)
            flagged = False
    return tuple(assumed)


_MISSING = object()


def _get(data: dict, key: str, kind: type, where: str, default: Any = _MISSING) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is not _MISSING:
                return default
            raise TargetError(f"{where}: missing key {key!r}")
        node = node[part]
    if kind is float and isinstance(node, int) and not isinstance(node, bool):
        node = float(node)
    if not isinstance(node, kind) or isinstance(node, bool) != (kind is bool):
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
    _get(data, "fusion", dict, where, default={})
    return {key: _get(data, f"fusion.{key}", bool, where, default=False) for key in ("activation", "bias")}


def _memories(data: dict, where: str) -> dict[str, Memory]:
    table = _get(data, "memory", dict, where)
    clock = _get(data, "clock_hz", float, where)
    memories = {}
    for name in table:
        key = f"memory.{name}"
        scope = _get(data, f"{key}.scope", str, where)
        if scope not in SCOPES:
            raise TargetError(f"{where}: key '{key}.scope' must be one of {', '.join(SCOPES)}, got {scope!r}")
        entry = _get(data, key, dict, where)
        if "bytes_per_cycle" in entry:
            bandwidth = _get(data, f"{key}.bytes_per_cycle", float, where) * clock
        else:
            bandwidth = _get(data, f"{key}.bytes_per_s", float, where)
        latency = entry.get("latency_ns", 0)
        if not isinstance(latency, (int, float)) or isinstance(latency, bool) or latency < 0:
            raise TargetError(f"{where}: key '{key}.latency_ns' must be a number >= 0, got {latency!r}")
        memories[name] = Memory(
            name=name,
            scope=scope,
            capacity_bytes=_get(data, f"{key}.capacity_bytes", int, where),
            bytes_per_s=bandwidth,
            latency_ns=float(latency),
            channels=_get(data, f"{key}.channels", int, where, default=1),
        )
    if sum(m.scope == "core" for m in memories.values()) != 1:
        raise TargetError(f"{where}: key 'memory' must declare exactly one memory with scope = \"core\"")
    if sum(m.scope == "device" for m in memories.values()) != 1:
        raise TargetError(f"{where}: key 'memory' must declare exactly one memory with scope = \"device\"")
    return memories


def _dtype_table(data: dict, key: str, where: str, kind: type) -> dict:
    table = _get(data, key, dict, where)
    for dtype in table:
        if dtype not in BYTES_PER_ELEMENT:
            raise TargetError(f"{where}: key '{key}.{dtype}' is not a dtype ({', '.join(BYTES_PER_ELEMENT)})")
        _get(data, f"{key}.{dtype}", kind, where)
    return dict(table)


def _matrix(data: dict, where: str) -> MatrixEngine:
    rates = _dtype_table(data, "matrix.flops_per_cycle", where, int)
    passes = {f: _get(data, f"matrix.fidelity_passes.{f}", int, where) for f in FIDELITIES}
    defaults = _get(data, "matrix.default_fidelity", dict, where, default={})
    for dtype, fidelity in defaults.items():
        if fidelity not in FIDELITIES:
            raise TargetError(f"{where}: key 'matrix.default_fidelity.{dtype}' must be one of {', '.join(FIDELITIES)}")
    fallback = _get(data, "matrix.fallback_dtype", str, where)
    if fallback not in rates:
        raise TargetError(f"{where}: key 'matrix.fallback_dtype' must name a dtype of matrix.flops_per_cycle")
    return MatrixEngine(rates, passes, dict(defaults), _get(data, "matrix.min_rows", int, where), fallback)


def _target_from(data: dict, where: str, assumed: tuple[str, ...] = ()) -> Target:
    return Target(
        name=_get(data, "name", str, where),
        description=str(data.get("description", "")),
        clock_hz=_get(data, "clock_hz", float, where),
        grid=(_get(data, "grid.rows", int, where), _get(data, "grid.cols", int, where)),
        tile=(_get(data, "tile.rows", int, where), _get(data, "tile.cols", int, where)),
        matrix=_matrix(data, where),
        vector_elements_per_cycle=_get(data, "vector.elements_per_cycle", int, where),
        memories=_memories(data, where),
        noc_count=_get(data, "noc.count", int, where),
        noc_link_bytes_per_cycle=_get(data, "noc.link_bytes_per_cycle", int, where),
        noc_hop_cycles=_get(data, "noc.hop_cycles", int, where),
        noc_interface_cycles=_get(data, "noc.interface_cycles", int, where),
        noc_multicast=_get(data, "noc.multicast", bool, where, default=False),
        dispatch_ns={mode: _dispatch_ns(data, mode, where) for mode in DISPATCH_MODES},
        fusion=_fusion(data, where),
        assumed=assumed,
    )
