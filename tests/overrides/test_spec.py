"""tt-mlir `override-output-layout` items: parse, format, and errors that name the problem."""

from __future__ import annotations

import itertools

import pytest

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.sharding.mesh import Sharding
from tilescope.overrides import format_item, parse_item


def test_parse_fields():
    ov = parse_item("matmul_1=2x2:l1:block_sharded")
    assert ov == OpOverride(
        op="matmul_1", grid=(2, 2), memory="l1", memory_layout="block_sharded", spec="matmul_1=2x2:l1:block_sharded"
    )
    assert ov.layout is None and ov.dtype is None


def test_all_five_categories():
    ov = parse_item("add_0=1x4:dram:interleaved:row_major:bf16")
    assert (ov.op, ov.grid, ov.memory, ov.memory_layout, ov.layout, ov.dtype) == (
        "add_0",
        (1, 4),
        "dram",
        "interleaved",
        "row_major",
        "bf16",
    )


@pytest.mark.parametrize("order", list(itertools.permutations(["2x2", "l1", "block_sharded", "bf16"])))
def test_parameters_in_any_order(order):
    ov = parse_item("matmul_1=" + ":".join(order))
    assert (ov.grid, ov.memory, ov.memory_layout, ov.dtype) == ((2, 2), "l1", "block_sharded", "bf16")


def test_aliases_and_case():
    ov = parse_item(" m = 3X5:SYSTEM_MEMORY:bfp_bf8 ")
    assert (ov.op, ov.grid, ov.memory, ov.dtype) == ("m", (3, 5), "system", "bfp8")
    assert parse_item("m=bfloat16").dtype == "bf16"


def test_any_subset():
    assert parse_item("relu_0=l1") == OpOverride(op="relu_0", memory="l1", spec="relu_0=l1")
    assert parse_item("relu_0=height_sharded").memory_layout == "height_sharded"


@pytest.mark.parametrize(
    "ov",
    [
        OpOverride("matmul_1", grid=(2, 2), memory="l1", memory_layout="block_sharded"),
        OpOverride("a.b#1", grid=(8, 1)),
        OpOverride("x", memory="system", memory_layout="width_sharded", layout="row_major", dtype="bfp4"),
        OpOverride("mlp.layer.0.fc1.matmul", dtype="f32", layout="tile"),
    ],
)
def test_format_parse_round_trip(ov):
    text = format_item(ov)
    again = parse_item(text)
    assert again.spec == text
    assert again == OpOverride(**{**ov.__dict__, "spec": text})
    assert format_item(again) == text


def test_format_is_canonical():
    assert format_item(parse_item("m=block_sharded:l1:2x2")) == "m=2x2:l1:block_sharded"
    assert format_item(parse_item("m=system_memory")) == "m=system"


@pytest.mark.parametrize(
    "item, category, token",
    [
        ("matmul_1=2x2:4x4", "grid", "4x4"),
        ("matmul_1=l1:dram", "memory", "dram"),
        ("matmul_1=interleaved:block_sharded", "memory layout", "block_sharded"),
        ("matmul_1=tile:row_major", "layout", "row_major"),
        ("matmul_1=f32:bf16", "dtype", "bf16"),
    ],
)
def test_repeated_category(item, category, token):
    with pytest.raises(OverrideError) as err:
        parse_item(item)
    assert str(err.value) == f"override {item!r}: {category} given twice ({token!r})"


@pytest.mark.parametrize("token", ["bogus", "2x", "l2", "x2"])
def test_unknown_token_is_named(token):
    with pytest.raises(OverrideError) as err:
        parse_item(f"matmul_1=2x2:{token}")
    message = str(err.value)
    assert f"unknown token {token!r}" in message
    assert "matmul_1=2x2:" in message
    assert "block_sharded" in message  # lists what is expected


def test_empty_token():
    with pytest.raises(OverrideError, match="unknown token ''"):
        parse_item("m=2x2::l1")


@pytest.mark.parametrize("item", ["matmul_1", "matmul_1:2x2", "=2x2", ""])
def test_missing_op_or_equals(item):
    with pytest.raises(OverrideError, match="expected OP=PARAMS"):
        parse_item(item)


def test_no_parameters():
    with pytest.raises(OverrideError, match="no parameters after '='"):
        parse_item("matmul_1=")


def test_zero_grid():
    with pytest.raises(OverrideError, match="at least 1"):
        parse_item("matmul_1=0x2")


def test_errors_are_one_line():
    for item in ["m=2x2:zz", "m", "m=l1:l1", "m=0x0"]:
        with pytest.raises(OverrideError) as err:
            parse_item(item)
        assert "\n" not in str(err.value)


def test_tile_operand_and_result_tokens():
    assert parse_item("matmul_0=tile#1x32:bf16") == OpOverride(
        "matmul_0", dtype="bf16", tile=(1, 32), spec="matmul_0=tile#1x32:bf16"
    )
    weights = parse_item("matmul_0=operand#1:l1:width_sharded:8x1")
    assert (weights.operand, weights.result, weights.memory, weights.grid) == (1, None, "l1", (8, 1))
    assert weights.target == "matmul_0 operand 1" and weights.key == ("matmul_0", 1, None)
    assert parse_item("split_0=result#1:dram").key == ("split_0", None, 1)


@pytest.mark.parametrize(
    "item, message",
    [
        ("m=operand#1:fidelity#lofi", "fidelity# applies to the op, not to one operand"),
        ("m=operand#0:block#2x2x1", "block# applies to the op, not to one operand"),
        ("m=operand#0:fuse#true", "fuse# applies to the op, not to one operand"),
        ("m=result#0:fuse#false", "fuse# applies to the op, not to one result"),
        ("m=fuse#maybe", "unknown token 'fuse#maybe'"),
        ("m=operand#0:result#0:l1", "give operand# or result#, not both"),
        ("m=operand#1", "no layout parameters besides operand#"),
        ("m=operand#x:l1", "unknown token 'operand#x'"),
        ("m=tile#32:l1", "unknown token 'tile#32'"),
        ("m=operand#1:operand#2:l1", "operand given twice"),
    ],
)
def test_bad_port_and_tile_tokens(item, message):
    with pytest.raises(OverrideError) as err:
        parse_item(item)
    assert message in str(err.value) and item in str(err.value)


def test_sharding_token_per_dimension_axes_with_operand_or_result():
    weight = parse_item("lm_head.matmul=operand#1:sharding#{},{model}")
    assert weight == OpOverride("lm_head.matmul", sharding=Sharding(((), ("model",))), operand=1, spec=weight.spec)
    assert weight.key == ("lm_head.matmul", 1, None) and not weight.lays_out
    assert parse_item("m=sharding#{batch,model},{}").sharding == Sharding((("batch", "model"), ()))
    # Shardy's own spelling, spaces and quotes included; axis names keep their case
    assert parse_item('m=sharding#[{"X", "y"}, {}]').sharding == Sharding((("X", "y"), ()))
    assert parse_item("m=result#0:sharding#{}").sharding == Sharding(((),))
    combined = parse_item("m=L1:sharding#REPLICATED:bf16")
    assert (combined.memory, combined.dtype, combined.sharding) == ("l1", "bf16", Sharding(()))
    assert combined.lays_out


@pytest.mark.parametrize(
    "item",
    [
        "m=sharding#replicated",
        "m=operand#1:sharding#{},{model}",
        "m=result#1:sharding#{batch,model},{},{}",
        "m=2x2:l1:block_sharded:sharding#{Tp}",
        "m=sharding#{}",
    ],
)
def test_sharding_items_round_trip(item):
    ov = parse_item(item)
    assert format_item(ov) == item
    assert parse_item(format_item(ov)) == ov


@pytest.mark.parametrize(
    "item, message",
    [
        ("m=sharding#", "expected {mesh axes} per tensor dimension"),
        ("m=sharding#{model", "expected {mesh axes} per tensor dimension"),
        ("m=sharding#model", "expected {mesh axes} per tensor dimension"),
        ("m=sharding#{a b}", "'a b' is not a mesh axis name"),
        ("m=sharding#{,}", "'' is not a mesh axis name"),
        ("m=sharding#{}:sharding#{}", "sharding given twice"),
    ],
)
def test_bad_sharding_tokens_are_one_line_naming_the_token(item, message):
    with pytest.raises(OverrideError) as err:
        parse_item(item)
    text = str(err.value)
    assert message in text and item.partition("=")[2].split(":")[-1] in text and "\n" not in text


def test_inner_tiles_token_is_a_data_tiled_matmuls_and_bounded():
    ov = parse_item("fc1=inner_tiles#16x16x2")
    assert ov.inner_tiles == (16, 16, 2) and ov.lays_out and format_item(ov) == "fc1=inner_tiles#16x16x2"
    for item, message in (
        ("fc1=inner_tiles#16x16", "unknown token 'inner_tiles#16x16'"),
        ("fc1=inner_tiles#2048x16x1", "unknown token 'inner_tiles#2048x16x1'"),
        ("fc1=operand#0:inner_tiles#16x16x1", "inner_tiles# applies to the op, not to one operand"),
    ):
        with pytest.raises(OverrideError) as err:
            parse_item(item)
        assert message in str(err.value)
