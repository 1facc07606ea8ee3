"""What a search tries on one op: each override item that changes one knob of the op's current
item (where its output lives and how it is sharded, its grid, a matmul's blocking and sub-block,
single buffering, shorter tiles, its dtype and fidelity, the graph's fusions that take it) and
keeps the rest."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from tilescope.compiler.ir.meta import KERNEL, PLACED
from tilescope.compiler.analysis.shard_layouts import unshardable
from tilescope.compiler.analysis.matmul_blocking import subblock
from tilescope.compiler.analysis.matrix_dims import gemm_dims
from tilescope.compiler.ir import attributes, opset
from tilescope.compiler.ir.rewrite import producers, readers
from tilescope.compiler.analysis.heads import MERGE, SPLIT, heads_fusion
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.op_override import LAYOUT_FIELDS

from tilescope.overrides.spec import MAX_INNER_TILE, format_item, parse_item

SHARDED = ("block_sharded", "height_sharded", "width_sharded")


def candidates(compilation: Compilation, op_name: str, knobs: tuple[str, ...], current: str | None = None) -> list[str]:
    """The override items worth a trial on one op: where its output lives and how it is sharded,
    the grid it runs on, a matmul's blocking and sub-block, single buffering, shorter tiles, and
    with precision knobs its dtype and fidelity. Each changes one knob of the op's `current` item
    and keeps the rest, so an op's knobs are tuned one after another. The compiler rejects what the
    op cannot take (more shards than tiles, a full L1)."""
    op = compilation.levels["layout"].op(op_name)
    target = compilation.target
    rows, cols = target.grid
    found: list[str] = []
    if not op.outputs:  # an in-place write (a cache fill): nothing of its own to lay out
        knobs = tuple(k for k in knobs if k == "fusion")
    if "memory" in knobs:
        found += ["l1:interleaved", target.dram.name]
    if "layout" in knobs:  # a sharded output lives in L1
        found += [f"l1:{layout}" for layout in SHARDED]
    if "grid" in knobs:
        grids = {
            (rows, cols),
            (rows, max(1, cols // 2)),
            (max(1, rows // 2), cols),
            (max(1, rows // 2), max(1, cols // 2)),
        }
        found += [f"{r}x{c}" for r, c in sorted(grids) if (r, c) != op.attrs.get("grid")]
    matrix = opset.op_class(op.kind).kind_class in opset.MATRIX_CLASSES
    if "block" in knobs and matrix:
        found += _blocks(compilation, op_name)
    if "double_buffer" in knobs:
        found.append("double_buffer#false")
    if "tile" in knobs and matrix:
        found += [f"tile#{r}x{c}" for r, c in sorted(target.tile_shapes) if (r, c) != target.tile]
    if "dtype" in knobs and matrix:
        found += [d for d in ("bfp8", "bfp4") if d in target.matrix.flops_per_cycle]
    if "fidelity" in knobs and matrix and target.fidelities:
        found += [f"fidelity#{f}" for f in target.fidelities]
    if "fusion" in knobs:
        found += _fusions(compilation, op_name, op.kind)
    if "inner_tiles" in knobs:
        found += _inner_tiles(op.attrs.get("inner_tiles"))
    tried = (combined(current, f"{op_name}={item}") for item in found)
    return [item for item in dict.fromkeys(tried) if item != current]


# what a change of one knob leaves meaningless of the item it changes: a new grid or tile shape
# gives each core another share, whose blocking is to be found again; a new block, its sub-blocks
_RESETS = {
    "grid": ("block", "subblock"),
    "tile": ("block", "subblock"),
    "block": ("subblock",),
    "memory": ("memory_layout",),  # `dram` after `l1:block_sharded` is DRAM, interleaved
}


def combined(current: str | None, change: str) -> str:
    """`current` (an op's item, or None) with what `change` sets in place of its own."""
    new = parse_item(change)
    if current is None:
        return format_item(new)
    old = parse_item(current)
    values = {name: getattr(new, name) for name in (*LAYOUT_FIELDS, "fuse") if getattr(new, name) is not None}
    for name in list(values):
        for reset in _RESETS.get(name, ()):
            values.setdefault(reset, None)
    return format_item(replace(old, **values, spec=""))


def pre_rejected(compilation: Compilation, item: str, named: Collection[str] = ()) -> str:
    """Why the compiler would reject `item` for its sharding, said as it would say it, or '' (it
    may still reject it for another reason): a candidate the search need not compile. The op's
    output starts from the policy's layout and grid, as the layout pass applies an override,
    unless another item of the set, `named` by op, names an op fused into it (it may set them)."""
    ov = parse_item(item)
    layout_level = compilation.levels["layout"]
    placed = layout_level.meta.get(PLACED)
    target = compilation.target
    if ov.memory_layout in (None, "interleaved") or placed is None or not layout_level.has_op(ov.op):
        return ""
    op = layout_level.op(ov.op)
    if any(name != op.name and name in named for name in op.source):
        return ""
    if len(op.outputs) != 1 or op.outputs[0] not in placed.layouts or op.name not in placed.grids:
        return ""
    tensor, base = layout_level.tensors[op.outputs[0]], placed.layouts[op.outputs[0]]
    memory = target.memories.get(ov.memory or base.memory)
    if memory is None or memory.scope != "core" or (ov.tile is not None and ov.tile not in target.tile_shapes):
        return ""
    asked = replace(
        base,
        memory=memory.name,
        memory_layout=ov.memory_layout,
        grid=ov.grid or placed.grids[op.name],
        layout=ov.layout or base.layout,
        tile=ov.tile or base.tile,
        address=None,
    )
    return unshardable(tensor, asked, "the result", target.grid, target.name)


def _inner_tiles(attr) -> list[str]:
    """A data-tiled matmul's other inner tiles: each of M0, N0 and K0 halved or doubled, the
    others kept (the compiler packs its operands again for them)."""
    tile = attributes.ints(attr) if isinstance(attr, str) else ()
    if len(tile) != 3:
        return []
    found = []
    for i in range(3):
        for size in (tile[i] // 2, tile[i] * 2):
            if 1 <= size <= MAX_INNER_TILE:
                other = (*tile[:i], size, *tile[i + 1 :])
                found.append("inner_tiles#" + "x".join(map(str, other)))
    return found


def _fusions(compilation: Compilation, op_name: str, kind: str) -> list[str]:
    """The graph's fusions the op may be taken into or out of: a head split or merge undone, or a
    reshape that splits heads fused with its permute (off by default, as in tt-mlir)."""
    if not compilation.target.fusion.get("heads"):
        return []
    if kind in (SPLIT, MERGE):
        return ["fuse#false"]
    graph = compilation.levels["graph"]
    if kind != "reshape" or not graph.has_op(op_name):
        return []
    found = heads_fusion(graph, graph.op(op_name), producers(graph), readers(graph), compilation.target.tile[1])
    return ["fuse#true"] if not isinstance(found, str) else []


def _blocks(compilation: Compilation, op_name: str) -> list[str]:
    """A matmul's other passes: K steps of 1 to 16 tiles that divide K, half the rows or columns
    per pass, from the blocking its kernel has now; and the sub-blocks of that blocking's pass
    that fill the destination registers, tall or wide (tt-metal takes the widest; the operand
    along the longer side is unpacked once per sub-block, so the best shape depends on the op)."""
    kernel = compilation.kernel.op(op_name).meta.get(KERNEL)
    if kernel is None or len(kernel.block) != 3:
        return []
    layout = compilation.levels["layout"]
    tile = compilation.target.tile
    kt = -(-gemm_dims(layout, layout.op(op_name))[1] // tile[1])
    bm, bn, kb = kernel.block
    blocks = {(bm, bn, k) for k in (1, 2, 4, 8, 16) if kt % k == 0}
    blocks |= {(m, n, kb) for m, n in ((bm // 2, bn), (bm, bn // 2)) if m and n and bm % m == 0 and bn % n == 0}
    found = [f"block#{m}x{n}x{k}" for m, n, k in sorted(blocks - {(bm, bn, kb)})]
    dest = compilation.target.pipeline.dest_tiles
    now = kernel.subblock or subblock(bm, bn, dest)
    for h in (h for h in range(1, min(bm, dest) + 1) if bm % h == 0):
        w = max(w for w in range(1, min(bn, dest // h) + 1) if bn % w == 0)
        if (h, w) != now:
            found.append(f"subblock#{h}x{w}")
    return found
