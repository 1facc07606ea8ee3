"""What a `linalg.generic` computes, read from the ops of its body.

A generic's body is the work per element: `arith.subf`, `arith.mulf`, `math.exp` ... The import
names them on the op (`body`); one of them becomes the op's kind and the others are fused into it,
as a fused element-wise kernel runs them. With a reduction iterator the last is the combiner (an
`arith.addf` sums). A body of casts alone is a typecast; an empty one copies: a broadcast when an
operand is smaller than the result, else a permute (a transpose written as a generic).

    linalg.generic {iterator_types = ["parallel", ...]} { arith.subf; math.exp }  -> exp, fused (subtract,)
    linalg.generic {iterator_types = [..., "reduction"]} { arith.addf }          -> sum
"""

from __future__ import annotations

from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import Op, Tensor

GENERICS = frozenset({"linalg.generic", "linalg.map", "linalg.reduce"})
COMBINERS = {"add": "sum", "maximum": "max", "minimum": "min", "multiply": "prod"}


def generic_kind(op: Op, tensors: dict[str, Tensor]) -> tuple[str, tuple[str, ...]]:
    """(kind, fused kinds) of a generic, from its body and iterators."""
    body = [opset.kind_of(name) for name in str(op.attrs.get("body", "")).split()]
    work = [k for k in body if k is not None and k != "typecast" and opset.op_class(k).engine == "vector"]
    if op.kind == "linalg.reduce" or "reduction" in str(op.attrs.get("iterator_types", "")):
        combiner = COMBINERS.get(work[-1], "sum") if work else "sum"
        return combiner, tuple(work[:-1])
    if not work:
        if "typecast" in body:
            return "typecast", ()
        return ("broadcast" if _broadcasts(op, tensors) else "permute"), ()
    unary = [k for k in work if opset.op_class(k).kind_class == opset.ELTWISE_UNARY]
    main = unary[0] if unary else work[0]  # a transcendental sets a fused kernel's pace
    rest = list(work)
    rest.remove(main)
    return main, tuple(rest)


def _broadcasts(op: Op, tensors: dict[str, Tensor]) -> bool:
    if not op.outputs or op.outputs[0] not in tensors:
        return False
    out = tensors[op.outputs[0]].numel
    return any(tensors[t].numel < out for t in op.inputs if t in tensors)
