"""A matmul's blocking as its op's attributes give it: a program config's per-core blocks and split
(`core_block`, `core_split`, `out_subblock`: tt-metal's 2D and 1D multicast program configs) or a
padded-block program's block sizes (`padded_block`: ttnn's minimal_matmul). Each is taken only when
it is one: whole, positive, its K step dividing K, its blocks covering the output on the grid, its
sub-block fitting the destination registers; else the compiler blocks the matmul itself."""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.graph import Op
from tilescope.compiler.ir.tiles import ceil_div

MAX_TILES = 1024  # a block's side, in tiles: a larger one is not taken
# a config's split -> the program it names: blocks both ways, or one side per core with the
# other operand multicast to all (tt-metal's MatmulMultiCoreReuseMultiCast(1D)ProgramConfig)
CONFIG_PROGRAMS = {"2d": "matmul_2d_mcast", "m": "matmul_1d_mcast_in1", "n": "matmul_1d_mcast_in0"}


@dataclass(frozen=True)
class ConfiguredBlocks:
    """Per core M x N output tiles and the K step, how the cores split the output, the sub-block."""

    block: tuple[int, int, int]
    split: str
    subblock: tuple[int, int] | None


def configured(op: Op, tiles: tuple[int, int, int], grid: tuple[int, int], dest: int) -> ConfiguredBlocks | None:
    """The program config of `op` (M x K x N `tiles` on `grid`), or None when it gives none or
    one that does not block this matmul."""
    block = attributes.ints(_text(op.attrs.get("core_block")))
    split = str(op.attrs.get("core_split", "")).strip('"')
    mt, kt, nt = tiles
    if len(block) != 3 or min(block) <= 0 or max(block) > MAX_TILES or split not in CONFIG_PROGRAMS:
        return None
    bm, bn, kb = block
    rows, cols = grid
    covers = {
        "2d": bm * rows >= mt and bn * cols >= nt,
        "m": bm * rows * cols >= mt and bn >= nt,
        "n": bn * rows * cols >= nt and bm >= mt,
    }
    if kt % kb or not covers[split]:
        return None
    asked = attributes.ints(_text(op.attrs.get("out_subblock")))
    fits = len(asked) == 2 and min(asked) > 0 and asked[0] * asked[1] <= dest
    return ConfiguredBlocks((bm, bn, kb), split, (asked[0], asked[1]) if fits else None)


def padded_blocks(op: Op, tiles: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """The M, N and K block sizes a padded-block program pads the matmul's tiles up to, or None.
    A side is at most twice its dimension's tiles: a report's larger block would pad work the
    program does not have."""
    found = attributes.ints(_text(op.attrs.get("padded_block")))
    if len(found) != 3 or min(found) <= 0 or max(found) > MAX_TILES:
        return None
    mt, kt, nt = tiles
    return tuple(min(size, 2 * max(1, dim)) for size, dim in zip(found, (mt, nt, kt)))  # type: ignore[return-value]


def covered(dim: int, block: int) -> int:
    """`dim` tiles padded up to whole blocks."""
    return ceil_div(dim, block) * block


def _text(value) -> str | None:
    return value if isinstance(value, str) else None
