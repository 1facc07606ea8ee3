"""A target: one accelerator chip as the compiler and the simulator see it (its cores, engines,
memories, on-chip network and launch costs), and the system of devices it is one of.

Targets are data files (TOML): targets/chip_file.py reads a chip's file into this record,
targets/system_file.py a system's, and targets/catalog.py finds them by name or path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tilescope.compiler.targets.system import SINGLE_DEVICE, System

FIDELITIES = ("lofi", "hifi2", "hifi3", "hifi4")
DISPATCH_MODES = ("host", "trace")
DEFAULT_DISPATCH = "host"  # ops launched one by one from the host, as a model runs without a captured trace
# core: a core's own memory (L1, local store); chip: shared on-chip scratch (LLS);
# device: off-chip device memory (DRAM); host: system memory across the host link.
SCOPES = ("core", "chip", "device", "host")
DEFAULT_BAND = "default"  # the error band of kinds without their own


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
    # vector registers that hold a data-tiled matmul's accumulators (a CPU's register file); None:
    # the engine accumulates in a memory of its own (Tensix's destination registers), no limit
    registers: int | None = None


@dataclass(frozen=True)
class CorePipeline:
    """What a core spends besides its engines' peak work: the unpacker and packer that move
    tiles between L1 and the engines' registers, how well the engines overlap, and the fixed
    costs of each pipeline step and each op. The defaults model none of it (a pure roofline)."""

    unpack_bytes_per_cycle: float | None = None  # operand bytes from L1 into the engines' registers
    pack_bytes_per_cycle: float | None = None  # result bytes from the destination registers to L1
    overlap_loss: float = 0.0  # share of the shorter engines' time the longest one does not hide
    step_sync_cycles: float = 0.0  # per pipeline step: circular-buffer and semaphore handshakes
    launch_ns: float = 0.0  # per op: its kernels started on a core, buffers set up
    # per op on more than one core: the last core starts its kernels this long after the first
    # (the device's dispatch reaching every core)
    start_skew_ns: float = 0.0
    dest_tiles: int = 8  # output tiles the matrix engine accumulates at once: the sub-block limit
    # a data-movement core's RISC-V copying one contiguous piece of a tile (at most a face row)
    # from one L1 buffer to another, as a tiled reshape rearranges its tiles
    segment_copy_cycles: float = 0.0
    # a data-movement core's RISC-V storing one 32-bit word to its L1, in a loop of such stores
    # (filling a tile with a scalar)
    word_store_cycles: float = 0.0
    # the same stores where the core's store queue merges consecutive ones into whole aligned
    # 16-byte blocks of L1 (Blackhole): each such store's cycles; 0 where no store queue merges
    coalesced_store_cycles: float = 0.0
    # a compute kernel moving on to another stage of its program (a softmax's max, then exp, then
    # sum): the unpacker, math and packer reprogrammed for the stage's operation and formats
    stage_init_cycles: float = 0.0


@dataclass(frozen=True, eq=False)  # identity: one object per file content (see catalog.load_target)
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
    # a row-major transaction a kernel waits on (a stick read, or written and acknowledged): one
    # NoC round trip to DRAM or another core (0: not modelled, only bandwidth)
    noc_round_trip_cycles: float = 0.0
    noc_issue_cycles: float = 0.0  # a RISC-V issuing one NoC command (its registers written)
    # one NoC command of a run issued with the command buffer's state kept (only the addresses
    # written); 0: as noc_issue_cycles
    noc_stateful_issue_cycles: float = 0.0
    # a RISC-V's work per row-major page it moves back to back with others in flight: the page's
    # address worked out from its index, the command issued (0: only the DRAM rate's share)
    noc_page_cycles: float = 0.0
    short_tiles: bool = False  # the engine also takes tiles of fewer rows (a power of two) of full width
    # how far a measured op of each kind is from its prediction, as a share of the prediction:
    # the 68th percentile of held-out |measured / predicted - 1| ([error_bands], written by
    # `tilescope calibrate`); "default" for kinds with too few measurements. Empty: no band known
    error_bands: dict[str, float] = field(default_factory=dict)
    # cycles the vector unit (SFPU) takes over one tile for each element-wise function of the
    # vocabulary it computes (relu, erf, exp, ...), measured per function; "default" for the rest.
    # Empty: every pass costs what the matrix engine's element-wise path does (elements_per_cycle)
    sfpu_cycles: dict[str, float] = field(default_factory=dict)
    # the devices this target's chip is one of, and their links; a lone chip is a system of one
    system: System = SINGLE_DEVICE
    # data-tiling's inner tiles per element type of a matmul's operands: (M0, N0, K0), the block
    # of the result (M0 x N0) one step of the engine's inner loop makes from M0 x K0 and N0 x K0
    # of its operands (IREE's mmt4d tiles for a CPU; a tile by a tile for Tensix)
    inner_tiles: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # iree-compile's flags for this chip, where IREE targets it (a CPU): what an IREE user passes
    # to compile what tilescope simulates, and what the data-tiling oracle test compiles with
    iree_flags: tuple[str, ...] = ()

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

    def tile_cycles(
        self, dtype: str, fidelity: str, rows: int | None = None, tile: tuple[int, int] | None = None
    ) -> float:
        """Cycles of one tile x tile x tile matrix multiply on one core. A tile of fewer `rows`
        (a short tile) costs its share of a full one, but never less than the engine's minimum
        rows per pass. A `tile` of other columns, or more rows, than the target's (an inner tile
        data-tiling packed into, rows x cols over a K step of cols) costs its multiply-adds."""
        tile_rows, cols = self.tile
        per_cycle = self.matrix.flops_per_cycle[self.compute_dtype(dtype)]
        if tile is not None and (tile[1] != cols or tile[0] > tile_rows):
            # a CPU's rate is of full rows of the target's tile (a vector register's lanes): an
            # inner tile narrower than one fills that share of them
            lanes = min(1.0, tile[1] / cols) if self.matrix.registers is not None else 1.0
            flops = 2 * tile[0] * tile[1] * tile[1]
            return math.ceil(flops / (per_cycle * lanes)) * self.matrix.fidelity_passes[fidelity]
        flops = 2 * tile_rows * cols * cols
        full = math.ceil(flops / per_cycle) * self.matrix.fidelity_passes[fidelity]
        if rows is None or rows >= tile_rows:
            return full
        return full * max(rows, self.matrix.min_rows) / tile_rows

    def inner_tile_problem(self, tile: tuple[int, ...]) -> str:
        """Why a data-tiled matmul cannot run on inner tiles `tile` (M0, N0, K0) here, or '': an
        outer-product kernel holds its M0 x N0 accumulators (a row of the target's tile, a vector
        register, at a time), one row of B and one broadcast element of A in registers at once."""
        registers = self.matrix.registers
        if registers is None or len(tile) < 2:
            return ""
        row = math.ceil(tile[1] / self.tile[1])
        held = tile[0] * row + row + 1
        if held <= registers:
            return ""
        return f"inner tiles {tile[0]}x{tile[1]} need {held} vector registers; {self.name} has {registers}"

    def peak_flops(self, dtype: str = "bf16", fidelity: str | None = None) -> float:
        """Matrix peak of the whole grid, at `fidelity` (the fastest when None)."""
        per_cycle = self.matrix.flops_per_cycle[self.compute_dtype(dtype)]
        passes = self.matrix.fidelity_passes[fidelity] if fidelity else min(self.matrix.fidelity_passes.values())
        return per_cycle * self.cores * self.clock_hz / passes

    def inner_tile(self, dtype: str) -> tuple[int, int, int] | None:
        """The data-tiling inner tile (M0, N0, K0) of a matmul on `dtype` operands: the declared
        one, else the one of the dtype the engine computes `dtype` in; None when none is declared."""
        return self.inner_tiles.get(dtype, self.inner_tiles.get(self.compute_dtype(dtype)))

    def error_band(self, kind: str) -> float | None:
        """The share of a `kind` op's predicted time its measurements fall within (about two in
        three of them), or None when the target has no measurements to say."""
        return self.error_bands.get(kind, self.error_bands.get(DEFAULT_BAND))

    def sfpu_tile_cycles(self, kind: str) -> float | None:
        """The vector unit's cycles for one tile of the function `kind`, or None when not known."""
        return self.sfpu_cycles.get(kind, self.sfpu_cycles.get(DEFAULT_BAND))

    @property
    def vector_ops_per_s(self) -> float:
        return self.vector_elements_per_cycle * self.cores * self.clock_hz
