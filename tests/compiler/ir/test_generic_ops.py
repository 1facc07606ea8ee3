"""A linalg.generic's kind, from the ops of its body and its iterators."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.generic_ops import generic_kind
from tilescope.compiler.ir.graph import Op, Tensor

TENSORS = {"x": Tensor("x", (4, 8), "f32"), "row": Tensor("row", (8,), "f32"), "y": Tensor("y", (4, 8), "f32")}


def generic(body: str, iterators: str = '["parallel", "parallel"]', inputs=("x",), kind="linalg.generic") -> Op:
    return Op("g", kind, list(inputs), ["y"], {"body": body, "iterator_types": iterators})


@pytest.mark.parametrize(
    ("body", "kind", "fused"),
    [
        ("arith.addf", "add", ()),
        ("arith.subf math.exp", "exp", ("subtract",)),
        ("arith.divf arith.addf math.rsqrt", "rsqrt", ("divide", "add")),
        ("arith.mulf arith.mulf arith.addf math.tanh arith.mulf", "tanh", ("multiply", "multiply", "add", "multiply")),
        ("arith.truncf", "typecast", ()),
        ("arith.extf arith.mulf", "multiply", ()),
    ],
)
def test_a_parallel_body_is_its_heaviest_op_with_the_rest_fused(body, kind, fused):
    assert generic_kind(generic(body), TENSORS) == (kind, fused)


@pytest.mark.parametrize(
    ("body", "kind"), [("arith.addf", "sum"), ("arith.maximumf", "max"), ("arith.subf arith.mulf arith.addf", "sum")]
)
def test_a_reduction_is_its_combiner(body, kind):
    assert generic_kind(generic(body, '["parallel", "reduction"]'), TENSORS)[0] == kind


def test_linalg_reduce_is_a_reduction_without_iterators():
    assert generic_kind(generic("arith.maximumf", "", kind="linalg.reduce"), TENSORS) == ("max", ())


def test_an_empty_body_copies_broadcasting_a_smaller_operand_else_permuting():
    assert generic_kind(generic("", inputs=("row",)), TENSORS) == ("broadcast", ())
    assert generic_kind(generic(""), TENSORS) == ("permute", ())
