"""How a matmul's output tiles are blocked: over the cores of its grid (tt-metal's 2D and 1D
multicast programs), and within a core into passes and K steps whose buffers fit in L1. The kernel
split times the blocks; the layout pass checks a block or sub-block override against them.
"""

from __future__ import annotations

from tilescope.compiler.analysis.l1_budget import L1Budget
from tilescope.compiler.ir.tiles import ceil_div

MAX_INNER_BLOCK = 8  # K tiles per matmul step (tt-metal's in0_block_w is a small divisor of Kt)


def inner_block(kt: int, limit: int = MAX_INNER_BLOCK) -> int:
    """The largest divisor of Kt up to `limit`, so K splits into whole steps."""
    return max(d for d in range(1, min(kt, limit) + 1) if kt % d == 0)


def matmul_split(mt: int, nt: int, grid: tuple[int, int], multicast: bool) -> tuple[str, str, int, int]:
    """(program, axis, output tile rows per core, columns per core): 2D blocks when the output
    covers the grid both ways (axis "2d"), else 1D along the longer side ("n" or "m")."""
    cores = grid[0] * grid[1]
    if mt >= grid[0] and nt >= grid[1]:
        return ("matmul_2d_mcast" if multicast else "matmul_2d"), "2d", ceil_div(mt, grid[0]), ceil_div(nt, grid[1])
    if nt >= mt:  # thin output: every core needs all of A
        return ("matmul_1d_mcast_in0" if multicast else "matmul_1d"), "n", mt, ceil_div(nt, cores)
    return ("matmul_1d_mcast_in1" if multicast else "matmul_1d"), "m", ceil_div(mt, cores), nt  # tall: all of B


def fit_blocks(m: int, n: int, kt: int, step_bytes, budget: L1Budget) -> tuple[int, int, int]:
    """Pass rows, pass columns and K step (in tiles) whose buffers, step_bytes(pm, pn, kb), fit
    in `budget`: start from the core's whole share and up to 8 K tiles (one pass, each operand
    read once), shrink K first (only more steps), then the larger output side (more passes, which
    read operands again)."""
    pm, pn, kb = m, n, inner_block(kt)
    while (kb > 1 or pm > 1 or pn > 1) and not budget.fits(step_bytes(pm, pn, kb)):
        if kb > 1:
            kb = inner_block(kt, kb - 1)
        elif pm >= pn:
            pm = ceil_div(pm, 2)
        else:
            pn = ceil_div(pn, 2)
    return pm, pn, kb


def subblock(pm: int, pn: int, dest_tiles: int) -> tuple[int, int]:
    """The output sub-block (h, w) in tiles a core accumulates in its destination registers at
    once: the largest h x w up to `dest_tiles` that divides its pass, wider first on a tie (as
    tt-metal's matmul configs pick out_subblock_h and out_subblock_w)."""
    best = (1, 1)
    for h in range(1, min(pm, dest_tiles) + 1):
        for w in range(1, min(pn, dest_tiles // h) + 1):
            if pm % h == 0 and pn % w == 0 and (h * w, w) > (best[0] * best[1], best[1]):
                best = (h, w)
    return best


def unpacked_per_multiply(a_tile: float, b_tile: float, block: tuple[int, int]) -> float:
    """Bytes unpacked per tile multiply with sub-block (h, w): the operand along the sub-block's
    longer side is unpacked once and reused for each tile of that side; the other, every time."""
    h, w = block
    return b_tile + a_tile / w if w >= h else a_tile + b_tile / h
