"""A chip's target file: its keys read into a Target, each checked, any fault one line naming
the file and the key (the schema is documented in docs/simulator.md, "Target files").

Every number must lie in a physically plausible range (LIMITS), so that no file, however hostile,
makes the simulator allocate per-core arrays without end or compute infinite times.
"""

from __future__ import annotations

import re
from typing import Any

from tilescope.compiler.errors import TargetError
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.dtypes import BYTES_PER_ELEMENT
from tilescope.compiler.targets.chip import (
    DISPATCH_MODES,
    FIDELITIES,
    SCOPES,
    CorePipeline,
    MatrixEngine,
    Memory,
    Target,
)
from tilescope.compiler.targets.data_file import MISSING, checked, shown

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
    "matrix.registers": (1, 1024),
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
    "pipeline.segment_copy_cycles": (0, 1_000_000),
    "pipeline.word_store_cycles": (0, 1_000_000),
    "pipeline.coalesced_store_cycles": (0, 1_000_000),
    "pipeline.stage_init_cycles": (0, 1_000_000),
    "pipeline.start_skew_ns": (0, 1_000_000),
    "noc.count": (1, 64),
    "noc.round_trip_cycles": (0, 1_000_000),
    "noc.issue_cycles": (0, 1_000_000),
    "noc.stateful_issue_cycles": (0, 1_000_000),
    "noc.page_cycles": (0, 1_000_000),
    "noc.link_bytes_per_cycle": (1, 1 << 20),
    "noc.hop_cycles": (1, 1_000_000),
    "noc.interface_cycles": (1, 1_000_000),
    "dispatch.<mode>_ns": (0, 1e9),  # at most a second per op launch
    "error_bands.<kind>": (0, 1000),  # a share of the predicted time
    "vector.sfpu_cycles_per_tile.<kind>": (1, 1_000_000),
    "data_tiling.<dtype>": (1, 1024),  # each of M0, N0, K0, in elements
}
MAX_IREE_FLAGS, MAX_IREE_FLAG = 32, 256  # flags, and characters of each
MAX_BANDS = 256  # kinds with an error band


def _get(data: dict, key: str, kind: type, where: str, default: Any = MISSING, limits: str = "") -> Any:
    """data[key] (dotted) of type `kind`; a number must lie in its range, LIMITS[limits or key]."""
    return checked(data, key, kind, where, LIMITS, default, limits)


def _dispatch_ns(data: dict, mode: str, where: str) -> float:
    """Host overhead per op launch; zero is allowed (a captured trace)."""
    return _get(data, f"dispatch.{mode}_ns", float, where, limits="dispatch.<mode>_ns")


def _fusion(data: dict, where: str) -> dict[str, bool]:
    """Optional [fusion] table: activation, bias, heads (each false when absent)."""
    _get(data, "fusion", dict, where, default={})
    return {key: _get(data, f"fusion.{key}", bool, where, default=False) for key in ("activation", "bias", "heads")}


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
        start_skew_ns=number("start_skew_ns", float),
        dest_tiles=number("dest_tiles", int),
        segment_copy_cycles=number("segment_copy_cycles", float),
        word_store_cycles=number("word_store_cycles", float),
        coalesced_store_cycles=number("coalesced_store_cycles", float),
        stage_init_cycles=number("stage_init_cycles", float),
    )


def _error_bands(data: dict, where: str) -> dict[str, float]:
    """Optional [error_bands] table: kind (or "default") -> share of the predicted time."""
    table = _get(data, "error_bands", dict, where, default={})
    if len(table) > MAX_BANDS:
        raise TargetError(f"{where}: key 'error_bands' has {len(table)} kinds: at most {MAX_BANDS}")
    return {kind: _get(data, f"error_bands.{kind}", float, where, limits="error_bands.<kind>") for kind in table}


def _sfpu_cycles(data: dict, where: str) -> dict[str, float]:
    """Optional [vector] sfpu_cycles_per_tile: element-wise kind (or "default") -> cycles per tile."""
    key = "vector.sfpu_cycles_per_tile"
    table = _get(data, key, dict, where, default={})
    if len(table) > MAX_BANDS:
        raise TargetError(f"{where}: key {shown(key)} has {len(table)} kinds: at most {MAX_BANDS}")
    for kind in table:
        if kind != "default" and kind not in opset.KINDS:
            raise TargetError(f"{where}: key {shown(f'{key}.{kind}')} is no kind of the vocabulary")
    limits = "vector.sfpu_cycles_per_tile.<kind>"
    return {kind: _get(data, f"{key}.{kind}", float, where, limits=limits) for kind in table}


def _inner_tiles(data: dict, where: str) -> dict[str, tuple[int, int, int]]:
    """Optional [data_tiling] table: dtype -> [M0, N0, K0], each 1 to 1024 elements."""
    tiles = {}
    for dtype in _dtype_keys(data, "data_tiling", where, default={}):
        key = f"data_tiling.{dtype}"
        value = _get(data, key, list, where)
        low, high = LIMITS["data_tiling.<dtype>"]
        if len(value) != 3 or not all(type(n) is int and low <= n <= high for n in value):
            raise TargetError(f"{where}: key {shown(key)} must be [M0, N0, K0]: three integers from 1 to {high:,}")
        tiles[dtype] = tuple(value)
    return tiles


def _iree_flags(data: dict, where: str) -> tuple[str, ...]:
    """Optional [iree] flags: iree-compile's flags for this chip."""
    flags = _get(data, "iree.flags", list, where, default=[])
    if len(flags) > MAX_IREE_FLAGS or not all(isinstance(f, str) and 0 < len(f) <= MAX_IREE_FLAG for f in flags):
        most = f"at most {MAX_IREE_FLAGS} flags of 1 to {MAX_IREE_FLAG} characters"
        raise TargetError(f"{where}: key 'iree.flags' must be {most}")
    return tuple(flags)


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
    registers = _get(data, "matrix.registers", int, where, default=None)
    return MatrixEngine(rates, passes, dict(defaults), _get(data, "matrix.min_rows", int, where), fallback, registers)


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


def target_from(data: dict, where: str, assumed: tuple[str, ...] = ()) -> Target:
    """The chip a parsed target file describes; `assumed` are its keys no public document gives."""
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
        noc_round_trip_cycles=_get(data, "noc.round_trip_cycles", float, where, default=0.0),
        noc_issue_cycles=_get(data, "noc.issue_cycles", float, where, default=0.0),
        noc_stateful_issue_cycles=_get(data, "noc.stateful_issue_cycles", float, where, default=0.0),
        noc_page_cycles=_get(data, "noc.page_cycles", float, where, default=0.0),
        short_tiles=_get(data, "tile.short_rows", bool, where, default=False),
        error_bands=_error_bands(data, where),
        sfpu_cycles=_sfpu_cycles(data, where),
        inner_tiles=_inner_tiles(data, where),
        iree_flags=_iree_flags(data, where),
    )
