"""How shardings flow through an op: which dimension of each operand becomes which of the result.

An op's rule is a `DimMap`: per operand, the result dimension each of its dimensions becomes, or
None where the dimension does not survive (contracted, reduced, normalized over, sliced). The
result is split wherever an operand's dimension that survives is split, first operand first
(Shardy's propagation, one op at a time, in program order). A dimension that does not survive must
be whole on every device, except where `summed` says the op adds over it: there each device adds
its own piece and the result is a partial sum over those axes (a matmul's contracted K split the
same way on both sides, a sum over a split dimension, a vocabulary-split embedding).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from tilescope.compiler.analysis.heads import MERGE, SPLIT, SWAP_HEADS
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.sharding.mesh import Mesh, Sharding

# reductions whose partial results add up (a mean is a sum scaled once the pieces are added)
SUMMING = frozenset({"sum", "mean"})
_MAXIMAL = {"max": "max", "min": "min", "argmax": "max"}


@dataclass
class DimMap:
    maps: list[list[int | None]]  # per operand, per dimension: the result dimension, or None
    rank: int  # the result's rank
    summed: list[list[tuple[int, int]]] = field(default_factory=list)  # groups of (operand, dim) added over


@dataclass
class Plan:
    inputs: list[Sharding]  # what each operand must be on every device before the op runs
    output: Sharding  # the op's result (every result of the same rank; others whole)
    reduce: str = "sum"  # how the result's partial pieces combine


def _aligned(in_rank: int, out_rank: int, in_shape, out_shape) -> list[int | None]:
    """Implicit broadcasting: dimensions line up from the right; a dimension of extent 1 that the
    result widens is not carried."""
    shift = out_rank - in_rank
    return [
        None if shift + d < 0 or (in_shape[d] == 1 and out_shape[shift + d] != 1) else shift + d for d in range(in_rank)
    ]


def _reshape(src: tuple[int, ...], dst: tuple[int, ...]) -> list[int | None]:
    """Each source dimension's result dimension: in every group of dimensions whose extents
    multiply to the same size, the group's major dimension (of extent > 1) becomes the result
    group's major one; the other dimensions of the group must be whole."""
    out: list[int | None] = [None] * len(src)
    i = j = 0
    while i < len(src) and j < len(dst):
        i0, j0, a, b = i, j, src[i], dst[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b and i < len(src):
                a, i = a * src[i], i + 1
            elif j < len(dst):
                b, j = b * dst[j], j + 1
            else:
                break
        majors_in = [d for d in range(i0, i) if src[d] > 1]
        majors_out = [d for d in range(j0, j) if dst[d] > 1]
        if majors_in and majors_out:
            out[majors_in[0]] = majors_out[0]
    return out


def _broadcast(op: Op, src: tuple[int, ...], out: tuple[int, ...]) -> list[int | None]:
    """StableHLO's broadcast_in_dim names the result dimension of each operand dimension; TTIR's
    broadcast keeps the rank and repeats dimensions of extent 1."""
    placed = attributes.ints(op.attrs.get("broadcast_dimensions"))
    if len(src) != len(out) and len(placed) == len(src) and all(0 <= o < len(out) for o in placed):
        return [o if src[d] == out[o] else None for d, o in enumerate(placed)]
    return _aligned(len(src), len(out), src, out)


def _reduced_dims(graph: Graph, op: Op, rank: int) -> set[int]:
    dims = attributes.ints(op.attrs.get("dim_arg") or op.attrs.get("dimensions"))
    if not dims:  # a reduction of everything
        return set(range(rank))
    return {d % rank for d in dims}


def _matmul(graph: Graph, op: Op) -> DimMap:
    lhs, rhs = (graph.tensors[t].shape for t in op.inputs[:2])
    out_shape = graph.tensors[op.outputs[0]].shape
    out_rank = len(out_shape)
    numbers = _stablehlo_dot(op.attrs.get("dot_dimension_numbers"))
    contract_l = attributes.ints(op.attrs.get("contract_dims_lhs")) or numbers.get("lhs_contracting", ())
    if contract_l:
        batch_l = attributes.ints(op.attrs.get("batch_dims_lhs")) or numbers.get("lhs_batching", ())
        batch_r = attributes.ints(op.attrs.get("batch_dims_rhs")) or numbers.get("rhs_batching", ())
        contract_r = attributes.ints(op.attrs.get("contract_dims_rhs")) or numbers.get("rhs_contracting", ())
    else:  # matmul: [..., M, K] x [..., K, N], either side transposed
        k_l = len(lhs) - 2 if op.attrs.get("transpose_a", "").startswith("true") else len(lhs) - 1
        k_r = len(rhs) - 1 if op.attrs.get("transpose_b", "").startswith("true") else len(rhs) - 2
        contract_l, contract_r = (k_l,), (max(k_r, 0),)
        batch = min(len(lhs), len(rhs)) - 2 if len(rhs) > 2 else 0
        batch_l = batch_r = tuple(range(max(batch, 0)))
    free_l = [d for d in range(len(lhs)) if d not in batch_l and d not in contract_l]
    free_r = [d for d in range(len(rhs)) if d not in batch_r and d not in contract_r]
    order_l = [*batch_l, *free_l]
    map_l: list[int | None] = [None] * len(lhs)
    map_r: list[int | None] = [None] * len(rhs)
    for o, d in enumerate(order_l):
        map_l[d] = o
    for o, d in enumerate(batch_r):
        map_r[d] = o
    for o, d in enumerate(free_r, start=len(order_l)):
        map_r[d] = o if o < out_rank else None
    summed = [[(0, cl), (1, cr)] for cl, cr in zip(contract_l, contract_r)]
    # operands fused in after A and B (a bias): added to the result, so split as it is
    extra = [_aligned(len(s), out_rank, s, out_shape) for s in (graph.tensors[t].shape for t in op.inputs[2:])]
    return DimMap([map_l, map_r, *extra], out_rank, summed)


def _stablehlo_dot(text: str | None) -> dict[str, tuple[int, ...]]:
    """StableHLO's `#stablehlo.dot<lhs_batching_dimensions = [0], ..., rhs_contracting_dimensions = [1]>`
    as {"lhs_batching": (0,), ..., "rhs_contracting": (1,)}."""
    found = re.findall(r"(\w+)_dimensions\s*=\s*\[([^\]]*)\]", text or "")
    return {key: attributes.ints(f"[{values}]") for key, values in found}


def _attention(graph: Graph, op: Op) -> DimMap | None:
    q, *rest = (graph.tensors[t].shape for t in op.inputs)
    out = graph.tensors[op.outputs[0]].shape
    if len(q) != 4 or len(out) != 4 or any(len(s) != 4 for s in rest[:2]):
        return None  # heads side by side in one dimension: split only whole
    maps: list[list[int | None]] = [[0, 1, 2, None]]
    for i, shape in enumerate(rest):
        if i < 2:  # keys and values: batch and heads split as the queries' are; positions and head dim whole
            maps.append([0, 1, None, None])
        else:  # a mask, broadcast over what it lacks; key positions whole
            aligned = _aligned(len(shape), len(out), shape, (*out[:-1], shape[-1]))
            maps.append([*aligned[:-1], None])
    return DimMap(maps, len(out))


def dim_map(graph: Graph, op: Op) -> DimMap | None:
    """The op's rule; None for an op whose operands must all be whole (an unknown op, a window)."""
    ins = [graph.tensors[t].shape for t in op.inputs]
    if op.outputs:
        out = graph.tensors[op.outputs[0]].shape
    elif ins:  # an in-place write (a cache update): the result is the first operand
        out = ins[0]
    else:
        return DimMap([], 0)
    kind, cls = op.kind, opset.op_class(op.kind).kind_class
    rank = len(out)
    if cls in opset.ELTWISE_CLASSES or kind in opset.STATEFUL:
        return DimMap([_aligned(len(s), rank, s, out) for s in ins], rank)
    if cls == opset.NORM:  # normalized over the last dimension (softmax: its `dimension`)
        given = attributes.ints(op.attrs.get("dimension")) if kind == "softmax" else ()
        dim = given[0] % rank if given else rank - 1
        maps = [_aligned(len(s), rank, s, out) for s in ins]
        return DimMap([[None if o == dim else o for o in m] for m in maps], rank)
    if cls == opset.REDUCE and ins:
        reduced = _reduced_dims(graph, op, len(ins[0]))
        kept = [d for d in range(len(ins[0])) if d not in reduced]
        same_rank = rank == len(ins[0])
        m: list[int | None] = [None] * len(ins[0])
        for o, d in enumerate(kept):
            m[d] = d if same_rank else o
        summed = [[(0, d) for d in sorted(reduced)]] if kind in SUMMING or kind in _MAXIMAL else []
        return DimMap([m], rank, summed)
    if cls in opset.MATRIX_CLASSES and kind == "matmul" and len(ins) >= 2:
        return _matmul(graph, op)
    if cls == opset.ATTENTION and len(ins) >= 3:
        return _attention(graph, op)
    if kind == "reshape" and ins:
        return DimMap([_reshape(ins[0], out)], rank)
    if kind == SPLIT and ins and len(out) == 4:  # a reshape into (B, S, H, D), then heads swapped
        into = _reshape(ins[0], tuple(out[d] for d in SWAP_HEADS))
        return DimMap([[None if m is None else SWAP_HEADS[m] for m in into]], rank)
    if kind == MERGE and ins and len(ins[0]) == 4:  # heads swapped back, then merged by a reshape
        into = _reshape(tuple(ins[0][d] for d in SWAP_HEADS), out)
        return DimMap([[into[SWAP_HEADS[d]] for d in range(4)]], rank)
    if kind in ("permute", "transpose") and ins:
        perm = attributes.ints(op.attrs.get("permutation"))
        if sorted(perm) != list(range(rank)):
            return None
        return DimMap([[perm.index(d) for d in range(rank)]], rank)
    if kind in ("concat", "slice", "pad", "reverse", "repeat") and ins:
        # the dimensions whose extent changes (or that are joined) must be whole
        maps = [
            [d if s[d] == out[d] else None for d in range(len(s))] if len(s) == rank else [None] * len(s) for s in ins
        ]
        if kind == "concat":
            dim = attributes.ints(op.attrs.get("dim"))
            joined = dim[0] % rank if dim else None
            maps = [[None if d == joined else o for d, o in enumerate(m)] for m in maps]
        return DimMap(maps, rank)
    if kind == "broadcast" and ins:
        return DimMap([_broadcast(op, ins[0], out)], rank)
    if kind == "embedding" and len(ins) >= 2 and len(ins[1]) == 2:
        ids = ins[0]
        ids_map = [d if d < rank - 1 and ids[d] == out[d] else None for d in range(len(ids))]
        # a table split by rows: each device looks up its rows, zeros for the others', then a sum
        return DimMap([ids_map, [None, rank - 1]], rank, [[(1, 0)]])
    if kind in ("conv2d", "max_pool2d", "avg_pool2d") and ins:
        maps = [[0] + [None] * (len(ins[0]) - 1)] + [[None] * len(s) for s in ins[1:]]
        return DimMap(maps, rank)
    return None


def _divides(extent: int, axes: tuple[str, ...], mesh: Mesh) -> bool:
    return extent % mesh.ways(axes) == 0


def plan(graph: Graph, op: Op, current: list[Sharding], mesh: Mesh, fixed: Collection[int] = ()) -> Plan:
    """What the op needs of its operands and what it gives, from their current shardings.
    Operands in `fixed` (read as an override says) decide first, and a sum over a dimension one
    of them splits is kept split: the others are cut to match."""
    ins = [graph.tensors[t].shape for t in op.inputs]
    rule = dim_map(graph, op)
    out_shape = graph.tensors[op.outputs[0]].shape if op.outputs else (ins[0] if ins else ())
    if rule is None:
        return Plan([Sharding.replicated(len(s)) for s in ins], Sharding.replicated(len(out_shape)))
    out_dims: list[tuple[str, ...]] = [()] * rule.rank
    used: set[str] = set()

    def fits(o: int, axes: tuple[str, ...]) -> bool:
        if not _divides(out_shape[o], axes, mesh):
            return False
        return all(_divides(ins[i][d], axes, mesh) for i, m in enumerate(rule.maps) for d, t in enumerate(m) if t == o)

    order = [*sorted(fixed), *(i for i in range(len(current)) if i not in fixed)]
    for i in order:
        for d, axes in enumerate(current[i].dims):
            o = rule.maps[i][d] if i < len(rule.maps) and d < len(rule.maps[i]) else None
            if axes and o is not None and not out_dims[o] and used.isdisjoint(axes) and fits(o, axes):
                out_dims[o] = axes
                used.update(axes)
    partial: list[str] = []
    kept_summed: dict[tuple[int, int], tuple[str, ...]] = {}
    for group in rule.summed:
        axes = _summed_axes(group, current, fixed)
        if axes and used.isdisjoint(axes):
            partial += [a for a in axes if a not in partial]
            used.update(axes)
            kept_summed.update(dict.fromkeys(group, axes))
    wanted = []
    for i, m in enumerate(rule.maps):
        dims = []
        for d, o in enumerate(m):
            if o is not None:
                dims.append(out_dims[o])
            else:
                dims.append(kept_summed.get((i, d), ()))
        wanted.append(Sharding(tuple(dims)))
    # an operand the rule does not name is read whole, never dropped
    wanted += [Sharding.replicated(len(s)) for s in ins[len(wanted) :]]
    reduce = _MAXIMAL.get(op.kind, "sum")
    return Plan(wanted, Sharding(tuple(out_dims), tuple(partial)), reduce)


def _summed_axes(group: list[tuple[int, int]], current: list[Sharding], fixed: Collection[int]) -> tuple[str, ...]:
    """The axes a summed group adds over: those its members are all split along alike, or those
    its fixed members agree on; () when none."""
    pinned = {current[i].dims[d] for i, d in group if i in fixed}
    if pinned:
        return pinned.pop() if len(pinned) == 1 else ()
    axes = {current[i].dims[d] for i, d in group}
    return axes.pop() if len(axes) == 1 else ()
