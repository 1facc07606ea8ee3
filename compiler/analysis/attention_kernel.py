"""Flash attention's work per core, as ttnn's SDPA kernels run it: prefill in chunks of query rows
and key rows, decode one tile of query heads at a time, each reading its keys and values once,
chunk by chunk, with its scores kept in the core."""

from __future__ import annotations

from collections.abc import Callable

from tilescope.compiler.analysis.l1_budget import L1Budget
from tilescope.compiler.analysis.core_cycles import fidelity_of, vector_cycles
from tilescope.compiler.analysis.core_shares import grid_cores, spread
from tilescope.compiler.analysis.core_transfers import CoreTransfers
from tilescope.compiler.analysis.matmul_blocking import subblock, unpacked_per_multiply
from tilescope.compiler.analysis.matrix_dims import attention_dims
from tilescope.compiler.ir import attributes, opset
from tilescope.compiler.ir.core_work import CircularBuffer, Compute, CoreWork, Kernel
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.tiles import ceil_div, tile_bytes
from tilescope.compiler.targets.chip import Target

# query rows and key rows per step of flash attention: tt-transformers' SDPA program configs use
# chunks of 256 for long prompts (models/tt_transformers/tt/model_config.py, q/k_chunk_size)
Q_CHUNK_ROWS = K_CHUNK_ROWS = 256
MAX_CHUNKS = 4096  # query chunks a causal mask's mean is taken over


def attention_kernel(
    graph: Graph, op: Op, cls: opset.OpClass, target: Target, budget: L1Budget | None = None
) -> Kernel:
    """Flash attention, as ttnn's SDPA kernels run it: each unit of work is one user's query
    head (for prefill, a chunk of its query rows; for decode, the query heads sharing one KV
    head, in one tile of rows), reading its keys and values once, chunk by chunk, keeping the
    scores in the core. Units spread evenly over the grid."""
    grid = op.attrs["grid"]
    transfers = CoreTransfers(target)
    q, k, v = (graph.tensors[t] for t in op.inputs[:3])
    mask = graph.tensors[op.inputs[3]] if len(op.inputs) > 3 else None
    out = graph.tensors[op.outputs[0]]
    heads, kv_units, sq, sk, d = attention_dims(graph, op)
    rows, cols = target.tile
    decode = op.kind.endswith("_decode")
    dt = ceil_div(d, cols)
    tiles = {name: tile_bytes(t.layout.dtype, t.layout.tile) for name, t in (("q", q), ("k", k), ("v", v), ("o", out))}
    score_tile = tile_bytes("f32", target.tile)
    budget = budget or L1Budget.of(op, target)  # what it asks of it is kept (l1_budget.py)

    def buffers(q_rows: int, chunk: int) -> tuple[CircularBuffer, ...]:
        return (
            CircularBuffer("q", q.name, q_rows * dt, q_rows * dt * tiles["q"]),
            CircularBuffer("k", k.name, 2 * chunk * dt, 2 * chunk * dt * tiles["k"]),
            CircularBuffer("v", v.name, 2 * chunk * dt, 2 * chunk * dt * tiles["v"]),
            CircularBuffer("scores", out.name, q_rows * chunk, q_rows * chunk * score_tile),
            CircularBuffer("out", out.name, q_rows * dt, q_rows * dt * tiles["o"]),
        )

    # for decode the group's query heads are the rows of one tile
    q_chunk, k_chunk = _chunks(rows if decode else min(sq, Q_CHUNK_ROWS), min(sk, K_CHUNK_ROWS), rows, buffers, budget)
    q_rows, chunk = ceil_div(q_chunk, rows), ceil_div(k_chunk, rows)
    units = kv_units if decode else heads * ceil_div(sq, q_chunk)
    # key rows a unit attends to, in whole chunks: all of them, or under a causal mask only the
    # chunks up to each query chunk's diagonal (ttnn's SDPA skips the rest), on average
    attended = sk if decode or not _causal(op) else _causal_keys(sq, sk, _q_offset(op, sq, sk), q_chunk, k_chunk)
    kt = ceil_div(round(attended), cols)
    cbs = buffers(q_rows, chunk)
    fidelity = fidelity_of(op, q.layout.dtype, target)
    compute_dtype = target.compute_dtype(q.layout.dtype)
    counts = spread(units, grid_cores(grid))
    multiplies = 2 * q_rows * kt * dt  # Q K^T, then P V, per unit
    dest = max(1, target.pipeline.dest_tiles)
    work = []
    for n, members in counts.items():
        reads = (
            transfers.moves(q, n * q_rows * dt * tiles["q"], grid)
            + transfers.moves(k, n * kt * dt * tiles["k"], grid)
            + transfers.moves(v, n * kt * dt * tiles["v"], grid)
        )
        if mask is not None:
            reads += transfers.moves(mask, n * q_rows * kt * tile_bytes(mask.layout.dtype, mask.layout.tile), grid)
        writes = transfers.moves(out, n * q_rows * dt * tiles["o"], grid)
        cycles = n * multiplies * target.tile_cycles(compute_dtype, fidelity) + vector_cycles(
            target, n * q_rows * kt, cls.flops_per_element
        )
        compute = Compute(
            "matrix",
            n * multiplies,
            cycles,
            fidelity,
            compute_dtype,
            unpack_bytes=n * multiplies * unpacked_per_multiply(tiles["q"], tiles["k"], subblock(q_rows, kt, dest)),
            # the scores and probabilities go through the core's buffers, then the output
            pack_bytes=n * (2 * q_rows * kt * tile_bytes("bf16", target.tile) + q_rows * dt * tiles["o"]),
        )
        steps = n * ceil_div(kt * cols, k_chunk)
        work.append(CoreWork(tuple(members), reads, compute, writes, steps, cbs, True))
    return Kernel(grid, tuple(work), "sdpa_decode" if op.kind.endswith("_decode") else "sdpa")


def _causal(op: Op) -> bool:
    value = op.attrs.get("causal", op.attrs.get("is_causal", False))
    return value is True or str(value).strip().lower() in ("true", "1")


def _q_offset(op: Op, sq: int, sk: int) -> int:
    """Where the first query sits among the keys: after the keys before it (a prompt continuing a
    cache), unless the op says (`q_offset`, a ring attention's device at its place in the ring)."""
    try:
        return max(0, attributes.integer(op.attrs["q_offset"]))
    except (KeyError, ValueError):  # not said, or not an integer: after the keys before it
        return max(0, sk - sq)


def _causal_keys(sq: int, sk: int, offset: int, q_chunk: int, k_chunk: int) -> float:
    """Mean key rows a query chunk reads under a causal mask: every key chunk up to the one
    holding its last query's position, none past it (over at most MAX_CHUNKS chunks, evenly
    spaced, for a prompt of millions of rows)."""
    chunks = ceil_div(sq, q_chunk)
    starts = (
        [i * chunks // MAX_CHUNKS * q_chunk for i in range(MAX_CHUNKS)]
        if chunks > MAX_CHUNKS
        else range(0, sq, q_chunk)
    )
    needed = [min(sk, ceil_div(min(sk, offset + min(sq, s + q_chunk)), k_chunk) * k_chunk) for s in starts]
    return sum(needed) / max(1, len(needed))


def _chunks(
    q_chunk: int, k_chunk: int, rows: int, buffers: Callable[[int, int], tuple[CircularBuffer, ...]], budget: L1Budget
) -> tuple[int, int]:
    """Query and key rows per step: the chunks asked for, halved (keys first) until the buffers
    of a step fit in L1, or until both are a tile's rows."""
    while not budget.fits(sum(cb.bytes for cb in buffers(ceil_div(q_chunk, rows), ceil_div(k_chunk, rows)))):
        if k_chunk > rows:
            k_chunk = max(rows, k_chunk // 2)
        elif q_chunk > rows:
            q_chunk = max(rows, q_chunk // 2)
        else:
            break  # the smallest steps: check-l1 reports what does not fit
    return q_chunk, k_chunk
