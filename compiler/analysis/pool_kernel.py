"""Max and average pooling as ttnn's pool2d program runs them (tt-metal ttnn/operations/pool/generic:
reader_pool_2d.cpp, compute_pool_2d.cpp): the output pixels in even shares over the grid, each core
working its share one output pixel at a time.

For each output pixel and each block of up to eight channel tiles, the readers (two, taking every
other pixel) gather the window from the input (after its halo): a NoC read per window row, its
sticks contiguous, or per stick where the window is dilated across; the compute kernel tilizes
those rows (the unpacker, a face row a cycle: a face of the window's rows, up to 16, per channel
face), reduces them on the engine (a pass over each tile) and packs the one output row. Each pixel
is a step of the pipeline, with its handshakes. A window of more than a tile's rows is reduced a
tile's rows at a time, each a step.
"""

from __future__ import annotations

from dataclasses import replace

from tilescope.compiler.analysis.core_cycles import vector_cycles
from tilescope.compiler.analysis.core_shares import grid_cores, spread
from tilescope.compiler.analysis.core_transfers import CoreTransfers
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.core_work import CircularBuffer, Compute, CoreWork, Kernel, Transfer
from tilescope.compiler.ir.dtypes import bytes_per_element
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.tiles import FACE, ceil_div, tile_bytes
from tilescope.compiler.targets.chip import Target

KINDS = ("max_pool2d", "avg_pool2d")
TILES_PER_REDUCTION = 8  # channel tiles a pixel's step reduces at once (MAX_TILES_PER_REDUCTION)
LARGE_AVERAGE_TILES = 4  # ... an average over a window of more than a tile's rows (fp32 accumulation)
# where imports name a pooling window and its dilation (TTIR, older TTIR, TTNN)
KERNEL_ATTRS = (("kernel",), ("kernel_height", "kernel_width"), ("kernel_size",))
DILATION_ATTRS = (("dilation",), ("dilation_height", "dilation_width"), ("dilations",))


def pool_kernel(graph: Graph, op: Op, target: Target) -> Kernel | None:
    """The op's kernel, or None when its operands are not an N x H x W x C image and its pooled
    output (the caller then streams it)."""
    if not op.inputs or not op.outputs:
        return None
    x, out = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(x.shape) != 4 or len(out.shape) != 4:
        return None
    found = _window(graph, op)
    if found is None:
        return None
    (kh, kw), dilation = found
    # a window never larger than the padded image it slides over
    pad_h, pad_w = _padding(op)
    kh, kw = min(kh, x.shape[1] + pad_h), min(kw, x.shape[2] + pad_w)
    window = kh * kw
    grid = op.attrs["grid"]
    tile = x.layout.tile
    # channels sharded across cores (width: over all of them; block: over the grid's columns), each
    # core pooling its channels of its pixels
    across = _channel_split(x.layout, grid)
    channels = ceil_div(x.shape[3], across)
    channel_tiles = ceil_div(channels, tile[1])
    # a window of more than a tile's rows is reduced a tile's rows at a time; an average over one
    # so large accumulates in fp32, four channel tiles a step
    chunks = ceil_div(window, tile[0])
    per_step = LARGE_AVERAGE_TILES if op.kind == "avg_pool2d" and chunks > 1 else TILES_PER_REDUCTION
    blocks = ceil_div(channel_tiles, per_step)
    # the unpacker tilizes the window's rows in the top faces when they fit a face's height, else
    # a whole tile's rows, in every face across the channels
    faces_across = max(1, tile[1] // FACE)
    tilize = (window if window <= FACE else tile[0]) * faces_across
    # a read per window row of contiguous sticks: only of one channel block of whole tiles, the
    # window not dilated across and its rows not split between a large window's chunks; else a
    # read per stick
    whole_rows = blocks == 1 and channels % tile[1] == 0 and dilation[1] == 1 and (chunks == 1 or tile[0] % kw == 0)
    reads_per_pixel = (kh if whole_rows else window) * blocks
    transfers = CoreTransfers(target)
    in_stick = channels * bytes_per_element(x.layout.dtype)
    out_stick = ceil_div(out.shape[3], across) * bytes_per_element(out.layout.dtype)
    pixels = out.shape[0] * out.shape[1] * out.shape[2]
    work = []
    for n, members in _pixel_shares(pixels, grid, across).items():
        # the two readers take every other pixel: the reader's half, and the writer's RISC-V's
        mine, theirs = ceil_div(n, 2), n // 2
        reads = tuple(
            m
            for half, by_writer in ((mine, False), (theirs, True))
            if half
            for m in _gather(
                _window_reads(transfers, x, in_stick * window * half, grid), reads_per_pixel * half, by_writer
            )
        )
        writes = transfers.moves(out, out_stick * n, grid)
        steps = n * blocks * chunks
        compute = Compute(
            "vector",
            n * channel_tiles * chunks,
            vector_cycles(target, n * channel_tiles * chunks, 1.0, tile),
            tilize_cycles=n * channel_tiles * chunks * tilize,
        )
        cbs = (
            CircularBuffer(
                "in0", x.name, 2, 2 * tile_bytes(x.layout.dtype, tile) * min(channel_tiles, TILES_PER_REDUCTION)
            ),
            CircularBuffer("out", out.name, 2, 2 * out_stick),
        )
        work.append(CoreWork(tuple(members), reads, compute, writes, steps, cbs))
    return Kernel(grid, tuple(work), "pool2d")


def _window_reads(transfers: CoreTransfers, x, nbytes: float, grid: tuple[int, int]) -> tuple[Transfer, ...]:
    """A reader's window sticks: from the core's own shard when the image (its halo's output) is
    sharded on the op's grid, every window's rows there; else from where the image lives."""
    if transfers.is_local(x, grid):
        return (Transfer(x.name, x.layout.memory, nbytes),)
    return transfers.moves(x, nbytes, grid)


def _gather(moves: tuple[Transfer, ...], commands: int, by_writer: bool) -> tuple[Transfer, ...]:
    """A reader's share of the window gathers: its bytes where they come from, its NoC reads
    issued one by one (counted on the first)."""
    return tuple(replace(m, commands=commands if i == 0 else 0, by_writer=by_writer) for i, m in enumerate(moves))


def _channel_split(layout, grid: tuple[int, int]) -> int:
    """How many cores an image's channels are split over, as it is sharded on the op's grid."""
    if not layout.sharded or layout.grid != grid:
        return 1
    if layout.memory_layout == "width_sharded":
        return grid[0] * grid[1]
    return grid[1] if layout.memory_layout == "block_sharded" else 1


def _pixel_shares(pixels: int, grid: tuple[int, int], across: int) -> dict[int, list[tuple[int, int]]]:
    """Output pixels per core: in even shares over the cores, or, with the channels split `across`
    cores, over the groups of cores that split them (each core of a group its channels of them)."""
    cores = grid_cores(grid)
    if across == 1:
        return spread(pixels, cores)
    groups = {cores[i]: cores[i : i + across] for i in range(0, len(cores), across)}
    shares = spread(pixels, list(groups))
    return {n: [core for first in firsts for core in groups[first]] for n, firsts in shares.items()}


def _window(graph: Graph, op: Op) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The window's height and width and its dilation, as the op's attributes (or, for linalg's
    pooling, its window operand's shape) give them; None when none does or they are not positive."""
    kernel = _pair(op, KERNEL_ATTRS)
    if kernel is None and len(op.inputs) >= 2 and len(graph.tensors[op.inputs[1]].shape) == 2:
        kernel = tuple(graph.tensors[op.inputs[1]].shape)
    dilation = _pair(op, DILATION_ATTRS) or (1, 1)
    if kernel is None or min(kernel + dilation) < 1:
        return None
    return kernel, dilation


def _pair(op: Op, spellings: tuple[tuple[str, ...], ...]) -> tuple[int, int] | None:
    """Two integers from the first spelling the op's attributes use: one attribute with both (or one,
    for both), or one attribute each."""
    for names in spellings:
        if not all(name in op.attrs for name in names):
            continue
        values = tuple(v for name in names for v in attributes.ints(str(op.attrs[name])))
        if len(values) == 1:
            values = values * 2
        return (values[0], values[1]) if len(values) >= 2 else None
    return None


def _padding(op: Op) -> tuple[int, int]:
    """The padding the window slides over, in all across the height and across the width."""
    values = attributes.ints(str(op.attrs.get("padding", "")))
    if len(values) >= 4:  # top, bottom, left, right
        return values[0] + values[1], values[2] + values[3]
    if len(values) == 2:  # each side of the height, of the width
        return 2 * values[0], 2 * values[1]
    return 0, 0
