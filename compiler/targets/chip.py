"""Targets are data files (TOML); this module reads and checks them.

A built-in target is named (`wormhole_n150`); any other target is a path to a file of the same
schema (documented in docs/simulator.md, "Target files"). A bad file is an error naming the file and
key; every number must lie in a physically plausible range (LIMITS), so that no file, however
hostile, makes the simulator allocate per-core arrays without end or compute infinite times.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tilescope.compiler.targets.data_file import (
    MISSING,
    assumed_keys,
    checked,
    parse_toml,
    read_text,
    shown,
    toml_string,
)
from tilescope.compiler.ir.dtypes import BYTES_PER_ELEMENT
from tilescope.compiler.errors import TargetError
from tilescope.compiler.targets.system import SINGLE_DEVICE, SYSTEM_LIMITS, System, system_from

BUILTIN_DIR = Path(__file__).parent / "chips"
SYSTEM_DIR = Path(__file__).parent / "systems"  # systems of several devices (targets/system.py)
FIDELITIES = ("lofi", "hifi2", "hifi3", "hifi4")
DISPATCH_MODES = ("host", "trace")
DEFAULT_DISPATCH = "host"  # ops launched one by one from the host, as a model runs without a captured trace
# core: a core's own memory (L1, local store); chip: shared on-chip scratch (LLS);
# device: off-chip device memory (DRAM); host: system memory across the host link.
SCOPES = ("core", "chip", "device", "host")

MAX_GRID = 256  # rows, and columns, of cores: at most 256x256
MAX_NAME = 256  # characters of a target's name (the database keeps that many)
MAX_MEMORY_NAME = 32  # characters of a memory's name (stored with every op that uses it)
_MEMORY_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_MEMORY_NAME}}}")
MAX_MEMORIES = 16
# The inclusive range of every number of a target file: wide enough for any real accelerator,
# narrow enough that times stay finite and per-core work stays small. Keys with <name> or <dtype>
# stand for each memory or dtype; documented in docs/simulator.md.
LIMITS: dict[str, tuple[float, float]] = {
    "clock_hz": (1e6, 1e10),  # 1 MHz to 10 GHz
    "grid.rows": (1, MAX_GRID),
    "grid.cols": (1, MAX_GRID),
    "tile.rows": (1, 1024),  # elements
    "tile.cols": (1, 1024),
    "matrix.flops_per_cycle.<dtype>": (1, 1 << 30),
    "matrix.fidelity_passes.<fidelity>": (1, 64),
    "matrix.min_rows": (1, 1024),
    "vector.elements_per_cycle": (1, 1 << 30),
    "memory.<name>.capacity_bytes": (1, 1 << 50),  # 1 PiB
    "memory.<name>.bytes_per_cycle": (1 / 1024, 1 << 30),
    "memory.<name>.bytes_per_s": (1e3, 1e16),  # 1 kB/s to 10 PB/s
    "memory.<name>.latency_ns": (0, 1e9),  # at most a second
    "memory.<name>.channels": (1, 1024),
    "memory.<name>.core_bytes_per_cycle": (1 / 1024, 1 << 30),
    "noc.multicast_bytes_per_cycle": (1 / 1024, 1 << 20),
    "pipeline.unpack_bytes_per_cycle": (1 / 1024, 1 << 20),
    "pipeline.pack_bytes_per_cycle": (1 / 1024, 1 << 20),
    "pipeline.overlap_loss": (0, 1),  # a share of the shorter engines' time
    "pipeline.step_sync_cycles": (0, 1_000_000),
    "pipeline.launch_ns": (0, 1e9),
    "pipeline.dest_tiles": (1, 1024),
    "noc.count": (1, 64),
    "noc.link_bytes_per_cycle": (1, 1 << 20),
    "noc.hop_cycles": (1, 1_000_000),
    "noc.interface_cycles": (1, 1_000_000),
    "dispatch.<mode>_ns": (0, 1e9),  # at most a second per op launch
}


@dataclass(frozen=True)
class Memory:
    name: str
    scope: str
    capacity_bytes: int
    bytes_per_s: float  # per core for scope=core, shared by all cores otherwise
    latency_ns: float = 0.0
    channels: int = 1
    # the most one core moves to or from it per second: its outstanding requests over the
    # round-trip latency (None: only the core's NoC link limits it)
    core_bytes_per_s: float | None = None

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


@dataclass(frozen=True)
class CorePipeline:
    """What a core spends besides its engines' peak work: the unpacker and packer that move
    tiles between L1 and the engines' registers, how well the engines overlap, and the fixed
    costs of each pipeline step and each op. The defaults model none of it (a pure roofline)."""

    unpack_bytes_per_cycle: float | None = None  # operand bytes from L1 into the engines' registers
    pack_bytes_per_cycle: float | None = None  # result bytes from the destination registers to L1
    overlap_loss: float = 0.0  # share of the shorter engines' time the longest one does not hide
    step_sync_cycles: float = 0.0  # per pipeline step: circular-buffer and semaphore handshakes
    launch_ns: float = 0.0  # per op: its kernels started on every core, buffers set up
    dest_tiles: int = 8  # output tiles the matrix engine accumulates at once: the sub-block limit


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
    pipeline: CorePipeline
    fusion: dict[str, bool]  # which element-wise ops the target's kernels can fuse: activation, bias
    assumed: tuple[str, ...]  # keys whose values no public document gives (see the file's comments)
    noc_multicast_bytes_per_cycle: float | None = None  # what a multicast delivers to each receiver
    short_tiles: bool = False  # the engine also takes tiles of fewer rows (a power of two) of full width
    # the devices this target's chip is one of, and their links; a lone chip is a system of one
    system: System = SINGLE_DEVICE

    @property
    def tile_shapes(self) -> list[tuple[int, int]]:
        """The tile shapes a tensor may be stored in: the full tile, and with `short_tiles` the ones
        of fewer rows, tallest first."""
        rows, cols = self.tile
        if not self.short_tiles:
            return [self.tile]
        shorter = (2**i for i in range(rows.bit_length() - 1, -1, -1))
        return [self.tile, *((r, cols) for r in shorter if r < rows and rows % r == 0)]

    @property
    def fidelities(self) -> list[str]:
        """The math fidelities that change what the matrix engine does: none where every one costs
        the same (an engine without Tenstorrent's multi-pass multiplies)."""
        passes = self.matrix.fidelity_passes
        return [f for f in FIDELITIES if f in passes] if len(set(passes.values())) > 1 else []

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

    @property
    def multicast_bytes_per_s(self) -> float:
        """What one multicast delivers per second: below a link's rate when each transfer
        reserves its path and collects every receiver's acknowledgement."""
        per_cycle = self.noc_multicast_bytes_per_cycle or self.noc_link_bytes_per_cycle
        return per_cycle * self.clock_hz

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
    """Built-in targets: single devices and systems of several."""
    return sorted({p.stem for d in (BUILTIN_DIR, SYSTEM_DIR) for p in d.glob("*.toml")})


def _device_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def target_text(name_or_path: str) -> tuple[str, str]:
    """(TOML text, where it came from) of a built-in target name or a target file path. A system's
    text carries its device's file (a [device] table), so that it alone rebuilds the target."""
    # a built-in's file only by its name: anything else is a path the user typed, looked up as typed
    builtin = [d / f"{name_or_path}.toml" for d in (BUILTIN_DIR, SYSTEM_DIR)] if name_or_path in builtin_names() else []
    path = next((p for p in builtin if p.is_file()), None)
    if path is None:
        path = Path(name_or_path).expanduser()
        if path.suffix == ".toml" and not os.path.isfile(path):  # False for a name no file system takes too
            raise TargetError(f"{name_or_path}: no such target file")
        if path.suffix != ".toml":
            raise TargetError(
                f"unknown target {name_or_path!r}; built in: {', '.join(builtin_names())}, "
                "or a path to a .toml target file"
            )
    return _with_device(read_text(path)), str(path)


def _with_device(text: str) -> str:
    """A system file's text with its built-in device's file appended as [device] toml; any other
    text (and any the parser will refuse) as it is."""
    try:
        data = parse_toml(text, "")
    except TargetError:
        return text
    system = data.get("system")
    device = system.get("device") if isinstance(system, dict) else None
    if "device" in data or not isinstance(device, str) or device not in _device_names():
        return text
    return f"{text.rstrip()}\n\n[device]\ntoml = {toml_string(target_text(device)[0])}\n"


def load_target(name_or_path: str, text: str | None = None) -> Target:
    """A built-in target or system by name, or a target or system file by path (or, with `text`,
    the description a stored run kept). The same content gives the same Target object, so callers
    may cache on it, and an edited file is read afresh."""
    if text is not None:
        return _parse_target(text, name_or_path)
    return _parse_target(*target_text(name_or_path))


@lru_cache(maxsize=32)
def _parse_target(text: str, where: str) -> Target:
    data = parse_toml(text, where)
    if "system" in data:
        return _system_target(data, where, assumed_keys(text))
    return _target_from(data, where, assumed_keys(text))


def _system_target(data: dict, where: str, assumed: tuple[str, ...]) -> Target:
    """A system file: the device target's chip, with the system's devices and links."""
    name = _get(data, "system.device", str, where)
    device_text = _get(data, "device.toml", str, where, default=None)
    if device_text is None:
        if name not in _device_names():
            devices = ", ".join(_device_names())
            raise TargetError(f"{where}: key 'system.device' must be a built-in device ({devices}), got {shown(name)}")
        device = _parse_target(*target_text(name))
    else:
        device = _parse_target(device_text, f"{where} [device]")
    if device.system.devices > 1 or device.system.device:
        raise TargetError(f"{where}: key 'system.device' must be a single device, not the system {shown(device.name)}")
    if device.name != name:
        raise TargetError(f"{where}: key 'device.toml' describes {shown(device.name)}, not {shown(name)}")

    def get(data: dict, key: str, kind: type, default: Any = MISSING) -> Any:
        return checked(data, key, kind, where, SYSTEM_LIMITS, default)

    own = tuple(key for key in assumed if not key.startswith("device."))  # not the embedded file's
    system = dataclasses.replace(system_from(data, where, get, name), assumed=own)
    return dataclasses.replace(device, name=system.name, description=system.description, system=system)


def _get(data: dict, key: str, kind: type, where: str, default: Any = MISSING, limits: str = "") -> Any:
    """data[key] (dotted) of type `kind`; a number must lie in its range, LIMITS[limits or key]."""
    return checked(data, key, kind, where, LIMITS, default, limits)


def _dispatch_ns(data: dict, mode: str, where: str) -> float:
    """Host overhead per op launch; zero is allowed (a captured trace)."""
    return _get(data, f"dispatch.{mode}_ns", float, where, limits="dispatch.<mode>_ns")


def _fusion(data: dict, where: str) -> dict[str, bool]:
    """Optional [fusion] table: activation, bias (both false when absent)."""
    _get(data, "fusion", dict, where, default={})
    return {key: _get(data, f"fusion.{key}", bool, where, default=False) for key in ("activation", "bias")}


def _memories(data: dict, where: str) -> dict[str, Memory]:
    table = _get(data, "memory", dict, where)
    clock = _get(data, "clock_hz", float, where)
    if len(table) > MAX_MEMORIES:
        raise TargetError(f"{where}: key 'memory' declares {len(table)} memories: at most {MAX_MEMORIES}")
    memories = {}
    for name in table:
        key = f"memory.{name}"
        if not _MEMORY_NAME.fullmatch(name):  # it is stored with every op that uses the memory
            allowed = f"1 to {MAX_MEMORY_NAME} letters, digits, _ or -"
            raise TargetError(f"{where}: key {shown(key)}: a memory's name is {allowed}")
        scope = _get(data, f"{key}.scope", str, where)
        if scope not in SCOPES:
            raise TargetError(f"{where}: key '{key}.scope' must be one of {', '.join(SCOPES)}, got {shown(scope)}")
        entry = _get(data, key, dict, where)

        def number(field: str, kind: type, default: Any = MISSING, key: str = key) -> Any:
            return _get(data, f"{key}.{field}", kind, where, default, limits=f"memory.<name>.{field}")

        if "bytes_per_cycle" in entry:
            bandwidth = number("bytes_per_cycle", float) * clock
        else:
            bandwidth = number("bytes_per_s", float)
        memories[name] = Memory(
            name=name,
            scope=scope,
            capacity_bytes=number("capacity_bytes", int),
            bytes_per_s=bandwidth,
            latency_ns=number("latency_ns", float, default=0.0),
            channels=number("channels", int, default=1),
            core_bytes_per_s=_times(number("core_bytes_per_cycle", float, default=None), clock),
        )
    if sum(m.scope == "core" for m in memories.values()) != 1:
        raise TargetError(f"{where}: key 'memory' must declare exactly one memory with scope = \"core\"")
    if sum(m.scope == "device" for m in memories.values()) != 1:
        raise TargetError(f"{where}: key 'memory' must declare exactly one memory with scope = \"device\"")
    return memories


def _times(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _pipeline(data: dict, where: str) -> CorePipeline:
    """Optional [pipeline] table; an absent key keeps the default (that cost not modelled)."""
    _get(data, "pipeline", dict, where, default={})
    defaults = CorePipeline()

    def number(key: str, kind: type) -> Any:
        return _get(data, f"pipeline.{key}", kind, where, default=getattr(defaults, key))

    return CorePipeline(
        unpack_bytes_per_cycle=number("unpack_bytes_per_cycle", float),
        pack_bytes_per_cycle=number("pack_bytes_per_cycle", float),
        overlap_loss=number("overlap_loss", float),
        step_sync_cycles=number("step_sync_cycles", float),
        launch_ns=number("launch_ns", float),
        dest_tiles=number("dest_tiles", int),
    )


def _dtype_keys(data: dict, key: str, where: str, default: Any = MISSING) -> dict:
    table = _get(data, key, dict, where, default)
    for dtype in table:
        if dtype not in BYTES_PER_ELEMENT:
            raise TargetError(f"{where}: key {shown(f'{key}.{dtype}')} is not a dtype ({', '.join(BYTES_PER_ELEMENT)})")
    return table


def _matrix(data: dict, where: str) -> MatrixEngine:
    rates = {
        dtype: _get(data, f"matrix.flops_per_cycle.{dtype}", int, where, limits="matrix.flops_per_cycle.<dtype>")
        for dtype in _dtype_keys(data, "matrix.flops_per_cycle", where)
    }
    passes = {
        f: _get(data, f"matrix.fidelity_passes.{f}", int, where, limits="matrix.fidelity_passes.<fidelity>")
        for f in FIDELITIES
    }
    defaults = _dtype_keys(data, "matrix.default_fidelity", where, default={})
    for dtype, fidelity in defaults.items():
        if not isinstance(fidelity, str) or fidelity not in FIDELITIES:
            raise TargetError(f"{where}: key 'matrix.default_fidelity.{dtype}' must be one of {', '.join(FIDELITIES)}")
    fallback = _get(data, "matrix.fallback_dtype", str, where)
    if fallback not in rates:
        raise TargetError(f"{where}: key 'matrix.fallback_dtype' must name a dtype of matrix.flops_per_cycle")
    return MatrixEngine(rates, passes, dict(defaults), _get(data, "matrix.min_rows", int, where), fallback)


def _grid(data: dict, where: str) -> tuple[int, int]:
    """At most MAX_GRID x MAX_GRID cores: the simulator keeps arrays of the grid's shape."""
    table = data.get("grid")
    rows, cols = (table.get(key) if isinstance(table, dict) else None for key in ("rows", "cols"))
    if (
        all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (rows, cols))
        and max(rows, cols) > MAX_GRID
    ):
        raise TargetError(f"{where}: grid {shown(rows)}x{shown(cols)}: at most {MAX_GRID}x{MAX_GRID} cores")
    return _get(data, "grid.rows", int, where), _get(data, "grid.cols", int, where)


def _name(data: dict, where: str) -> str:
    name = _get(data, "name", str, where)
    if not 0 < len(name) <= MAX_NAME:
        raise TargetError(f"{where}: key 'name' must have 1 to {MAX_NAME} characters, got {len(name):,}")
    return name


def _target_from(data: dict, where: str, assumed: tuple[str, ...] = ()) -> Target:
    return Target(
        name=_name(data, where),
        description=_get(data, "description", str, where, default=""),
        clock_hz=_get(data, "clock_hz", float, where),
        grid=_grid(data, where),
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
        pipeline=_pipeline(data, where),
        fusion=_fusion(data, where),
        assumed=assumed,
        noc_multicast_bytes_per_cycle=_get(data, "noc.multicast_bytes_per_cycle", float, where, default=None),
        short_tiles=_get(data, "tile.short_rows", bool, where, default=False),
    )
