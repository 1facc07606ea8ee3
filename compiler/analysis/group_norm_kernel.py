"""Group norm's work per core, as ttnn's group norm kernels run it (ttnn/operations/normalization/
groupnorm: the sharded and the interleaved multi-core programs). A core holds rows of the input
and, for each group of channels in turn, works on the tile columns the group spans:

    statistics  the group's mean, then its variance, need every row: each core sums its part, one
                core gathers the partial sums, reading each core's with a read it waits on (a
                round trip), and multicasts the result back; two such exchanges per group
    compute     each pass over a group's tiles (mask, reduce, subtract, square, scale, shift) is a
                binary op: it unpacks two tiles from L1 (the group's and a mask, a scaler or a
                broadcast statistic) and packs the result back into a circular buffer
    memory      from DRAM, the group's tiles are read for the mean, the variance and the
                normalization, each tile waited on; the last pass reads back the output tiles
                the groups before it wrote (a tile holds several groups' channels) and writes
                them again; one pass waits on the one before (its exchange), so the reads, the
                compute and the writes follow one another

so a group of few channels costs a pass over whole tiles, and a tile of channels holding eight
groups is worked on eight times."""

from __future__ import annotations

from dataclasses import replace

from tilescope.compiler.analysis.core_cycles import vector_cycles
from tilescope.compiler.analysis.l1_budget import L1Budget
from tilescope.compiler.analysis.stream_kernel import stream_kernel
from tilescope.compiler.ir import attributes, opset
from tilescope.compiler.ir.core_work import NOC, Compute, CoreWork, Kernel, Transfer
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.ir.tiles import ceil_div, tile_bytes, tile_grid
from tilescope.compiler.targets.chip import Target

DRAM_PASSES = 3  # reads of a group's tiles from DRAM: for its mean, its variance, the normalization
EXCHANGES = 2  # cross-core reductions per group: the mean, then the variance
PARTIAL_BYTES = 64  # one partial sum, as a NoC transaction of the smallest aligned size
OPERANDS = 2  # tiles each pass unpacks


def group_norm_kernel(
    graph: Graph, op: Op, cls: opset.OpClass, target: Target, budget: L1Budget | None = None
) -> Kernel:
    """The op's kernel: the stream kernel's shares of rows, each core's work per group."""
    kernel = stream_kernel(graph, op, cls, target, budget)
    x = graph.tensors[op.inputs[0]]
    out = graph.tensors[op.outputs[0]]
    tile = x.layout.tile
    channels = x.shape[-1] if x.shape else 1
    groups = max(1, min(channels, _num_groups(op)))
    _, _, col_tiles = tile_grid(x.shape, tile)
    # channels split over the grid's columns when the input is sharded that way
    channel_shards = kernel.grid[1] if x.layout.memory_layout in ("block_sharded", "width_sharded") else 1
    groups_per_core = max(1, groups // channel_shards)
    span = group_span(channels, groups, tile[1])
    sharing = max(1, kernel.cores_used // channel_shards)  # the cores whose rows one group spans
    groups_out = []
    for work in kernel.groups:
        rows = ceil_div(work.compute.tiles, max(1, ceil_div(col_tiles, channel_shards)))
        group_tiles = groups_per_core * rows * span
        groups_out.append(_work(work, x, out, group_tiles, groups_per_core * sharing, cls, target))
    return replace(kernel, groups=tuple(groups_out))


def group_span(channels: int, groups: int, tile_cols: int) -> int:
    """The most tile columns one group of channels spans (a group may straddle two tiles)."""
    width = max(1, channels // groups)
    # where a group starts within its tile repeats every tile_cols groups at most
    starts = range(min(groups, tile_cols))
    return max((g * width + width - 1) // tile_cols - (g * width) // tile_cols + 1 for g in starts)


def _work(
    work: CoreWork, x: Tensor, out: Tensor, group_tiles: int, partials: int, cls: opset.OpClass, target: Target
) -> CoreWork:
    passes = cls.flops_per_element
    in_tile, out_tile = tile_bytes(x.layout.dtype, x.layout.tile), tile_bytes(out.layout.dtype, out.layout.tile)
    compute = Compute(
        "vector",
        work.compute.tiles,
        vector_cycles(target, group_tiles, passes, x.layout.tile),
        unpack_bytes=OPERANDS * passes * group_tiles * in_tile,
        pack_bytes=passes * group_tiles * out_tile,
        waits=EXCHANGES * partials,
    )
    exchange = Transfer(x.name, NOC, EXCHANGES * partials * PARTIAL_BYTES)
    reads = tuple(_again(t, DRAM_PASSES * group_tiles, in_tile) if t.tensor == x.name else t for t in work.reads)
    writes = tuple(_again(t, group_tiles, out_tile) if t.tensor == out.name else t for t in work.writes)
    read_back = tuple(t for t in writes if t.pages)
    return replace(work, reads=(*reads, *read_back, exchange), compute=compute, writes=writes, double_buffered=False)


def _again(t: Transfer, tiles: int, size: float) -> Transfer:
    """A transfer from a memory the core waits on (not its own L1) made `tiles` tiles, each waited."""
    if not t.pages:
        return t
    return replace(t, bytes=tiles * size, pages=tiles)


def _num_groups(op: Op) -> int:
    try:
        return attributes.integer(op.attrs.get("num_groups", 1))
    except ValueError:  # not an integer: one group, the layer norm of the whole row
        return 1
