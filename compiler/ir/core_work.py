"""Per-core work: what the `kernel` level attaches to each op and what the simulator executes.

Cores doing identical work form one `CoreWork` group, so an even split over 64 cores is one group
and a split that does not divide evenly shows up as two or more groups (load imbalance); so do the
cores that fetch a multicast operand from DRAM and the cores that receive it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Paths a transfer takes besides a memory name: another core's L1 over one NoC link, or a
# multicast that one sender core pushes to a row or column of receivers.
NOC, MCAST = "noc", "mcast"


@dataclass(frozen=True)
class Transfer:
    tensor: str
    path: str  # a memory name (dram, lls, l1 = the core's own memory), noc or mcast
    bytes: float
    # row-major transactions the core waits on (a stick read, a row piece written); 0 for tiles,
    # whose reads a kernel keeps many of in flight, so that only bandwidth shows
    pages: int = 0
    # NoC commands the core's RISC-V issues for it, one by one (a convolution's reader gathering
    # its im2col rows); 0 when a few commands move it
    commands: int = 0
    # the commands are issued with the command buffer's state kept (only the addresses written:
    # tt-metal's read_with_state, as a convolution's activation reader gathers its sticks)
    stateful: bool = False
    # row-major transactions issued back to back, as many kept in flight as cover a round trip,
    # the kernel waiting once a block of them (ttnn's tilize reader, untilize writer, slices)
    streamed: int = 0
    # a read the writer's RISC-V makes, beside the reader's (ttnn's binary ops read their second
    # operand in the writer kernel, tile by tile before writing each result)
    by_writer: bool = False
    # cycles the reader's RISC-V spends storing into what it fetched once it lands, a store at a
    # time (a matmul's reader zeroing the padding of A's last K tile: compiler/analysis/l1_stores.py)
    store_cycles: float = 0.0
    # a block passed core to core down a chain (ttnn's minimal matmul): over the NoC, written into
    # this core by the one before it, the first of the chain `hops` cores up (the deepest, for a
    # group of cores along it); 0 for what the core fetches or is multicast
    hops: int = 0


@dataclass(frozen=True)
class Compute:
    engine: str  # matrix | vector | data
    tiles: int
    cycles: float  # the engine's own cycles at its peak rate
    fidelity: str | None = None
    dtype: str | None = None  # what the matrix engine computes in
    # bytes the unpacker moves from L1 into the engine's registers, and the packer back: a
    # matmul unpacks one operand's tile per tile multiply and the other once per sub-block row
    unpack_bytes: float = 0.0
    pack_bytes: float = 0.0
    # round trips the engine waits on between its steps, for what other cores send (a reduction's
    # partial sums gathered and the result sent back), in series with its work
    waits: int = 0
    # pieces of tiles a data-movement core copies between its L1 buffers itself (a tiled reshape)
    pieces: float = 0.0
    # cycles the unpacker spends tilizing row-major data before the engine can take it (a
    # convolution's gathered im2col block), a face row a cycle, in series with the engine's work
    tilize_cycles: float = 0.0


@dataclass(frozen=True)
class CircularBuffer:
    """A FIFO in the core's L1 between two engines; `pages` tiles, double-buffered when 2 blocks fit."""

    name: str  # in0, in1, ..., out
    tensor: str
    pages: int
    bytes: float


@dataclass(frozen=True)
class CoreWork:
    cores: tuple[tuple[int, int], ...]
    reads: tuple[Transfer, ...]
    compute: Compute
    writes: tuple[Transfer, ...]
    blocks: int  # pipeline steps: reader, compute and writer overlap block by block
    cbs: tuple[CircularBuffer, ...] = ()
    double_buffered: bool = True  # False: each buffer holds one step, so engines take turns
    # cycles the writer's RISC-V spends before its first step, beside the reader's fetches (ttnn's
    # binary op with a scalar fills a tile with it, word by word, before any tile is computed)
    setup_cycles: float = 0.0
    # whether each step waits on the pipeline's handshakes (circular-buffer and semaphore syncs):
    # not where engines hand single tiles straight on (ttnn's sharded element-wise kernels)
    handshakes: bool = True

    @property
    def cb_bytes(self) -> float:
        return sum(cb.bytes for cb in self.cbs)


@dataclass(frozen=True)
class Kernel:
    grid: tuple[int, int]
    groups: tuple[CoreWork, ...]
    program: str = ""  # how the work was split: matmul_2d_mcast, matmul_1d_mcast, eltwise, ...
    block: tuple[int, ...] = ()  # matmul: per-core block rows, cols and inner K block, in tiles
    subblock: tuple[int, int] | None = None  # matmul output sub-block, as asked for
    # the kernel this one is a renaming of (another op of the same shapes and layouts): it times
    # the same, so the simulator times it once
    like: Kernel | None = field(default=None, compare=False, repr=False)

    @property
    def cores_used(self) -> int:
        return sum(len(g.cores) for g in self.groups)

    @property
    def cb_bytes_per_core(self) -> float:
        return max((g.cb_bytes for g in self.groups), default=0.0)


@dataclass(frozen=True)
class SplitKernel:
    """A kernel split-kernels made for an op (None: the op runs none), and the range of L1 budgets
    in bytes, [low, high), it is the kernel for (analysis/l1_budget.py)."""

    kernel: Kernel | None
    low: float
    high: float

    def holds(self, budget: float) -> bool:
        return self.low <= budget < self.high
