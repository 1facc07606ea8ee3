"""Data-tiling's view of one matmul: which operand is which, the sizes it iterates over, the
encoding IREE would put on each operand, and the shapes its operands pack into for inner tiles.

An encoding says what a tensor is for, not how it is laid out: `operand_index` (0 the LHS, 1 the
RHS, 2 the result), the element types and the iteration sizes. Materialized for a target, it
becomes a pack into inner tiles (M0, N0, K0):

    LHS    [B,] M x K  ->  [B,] M1 x K1 x M0 x K0        (M1 = ceil(M / M0), K1 = ceil(K / K0))
    RHS    [B,] K x N  ->  [B,] N1 x K1 x N0 x K0        (transposed: each N0 x K0 tile as the kernel reads it)
    result [B,] M x N  <-  [B,] M1 x N1 x M0 x N0

A matmul whose RHS is one matrix for all of its LHS's leading dims (a linear layer on
[batch, tokens, features]) folds those dims into M, as IREE collapses them; one whose RHS has a
matrix per batch keeps the batch (a batch_mmt4d).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.analysis.matrix_dims import gemm_dims
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.tiles import ceil_div

LHS, RHS, RESULT = 0, 1, 2
ROLES = ("lhs", "rhs", "result")
TRANSPOSED = "transposed"  # a set_encoding's attribute: its LHS is read transposed (its pack transposes)


@dataclass(frozen=True)
class MatmulEncoding:
    """A matmul's iteration: `batch` matrices of M x K times K x N (batch 1: one matmul with any
    leading dims folded into M), and its operands' and result's element types."""

    batch: int
    m: int
    n: int
    k: int
    element_types: tuple[str, str, str]

    def text(self, operand: int) -> str:
        """The `#iree_encoding.encoding<...>` of operand `operand` (LHS, RHS or RESULT), as IREE's
        set-encoding pass writes it for a matmul of these sizes."""
        if self.batch > 1:
            loops, maps = "(d0, d1, d2, d3)", ("(d0, d1, d3)", "(d0, d3, d2)", "(d0, d1, d2)")
            sizes: tuple[int, ...] = (self.batch, self.m, self.n, self.k)
        else:
            loops, maps = "(d0, d1, d2)", ("(d0, d2)", "(d2, d1)", "(d0, d1)")
            sizes = (self.m, self.n, self.k)
        indexing = ", ".join(f"affine_map<{loops} -> {m}>" for m in maps)
        return (
            f"#iree_encoding.encoding<operand_index = {operand} : index, op_type = matmul, "
            f"element_types = [{', '.join(self.element_types)}], user_indexing_maps = [{indexing}], "
            f"iteration_sizes = [{', '.join(map(str, sizes))}]>"
        )

    def packed_shape(self, operand: int, tile: tuple[int, int, int]) -> tuple[int, ...]:
        """The shape operand `operand` packs into for inner tiles (M0, N0, K0)."""
        m0, n0, k0 = tile
        rows, cols, inner = {
            LHS: ((self.m, m0), (self.k, k0), (m0, k0)),
            RHS: ((self.n, n0), (self.k, k0), (n0, k0)),
            RESULT: ((self.m, m0), (self.n, n0), (m0, n0)),
        }[operand]
        outer = (ceil_div(rows[0], rows[1]), ceil_div(cols[0], cols[1]))
        return ((self.batch,) if self.batch > 1 else ()) + outer + inner


def tiles_attr(tile: tuple[int, ...]) -> str:
    """Inner tiles as the ops that use them hold them: `array<i64: 16, 16, 1>`."""
    return f"array<i64: {', '.join(map(str, tile))}>"


def matmul_encoding(graph: Graph, op: Op) -> MatmulEncoding | None:
    """The encoding of a plain or batched matmul, or None for one data-tiling leaves alone: not two
    operands, or operands whose batch is neither one matrix nor the result's."""
    if op.kind != "matmul" or len(op.inputs) < 2 or not op.outputs:
        return None
    a, b = (graph.tensors[t] for t in op.inputs[:2])
    out = graph.tensors[op.outputs[0]]
    if len(a.shape) < 2 or len(b.shape) < 2 or len(out.shape) < 2:
        return None
    rows, k, cols = gemm_dims(graph, op)
    matrices = b.numel // max(1, k * cols)
    if matrices * k * cols != b.numel or rows % matrices or a.numel != rows * k:
        return None  # an LHS broadcast over the RHS's batch: its pack would copy it per matrix
    if matrices > 1 and a.shape[:-2] != b.shape[:-2]:
        return None  # batches matched by broadcasting: the LHS's rows do not fold per matrix
    return MatmulEncoding(matrices, rows // matrices, cols, k, (a.dtype, b.dtype, out.dtype))


def reads_transposed(graph: Graph, op: Op) -> bool:
    """Whether a matmul reads its LHS transposed (contracting other than its last dim): its pack
    transposes, so its bytes are no result's packed alike."""
    if str(op.attrs.get("transpose_a", "")).startswith("true"):
        return True
    contract = attributes.ints(op.attrs.get("contract_dims_lhs"))
    return bool(contract) and contract != (len(graph.tensors[op.inputs[0]].shape) - 1,)
