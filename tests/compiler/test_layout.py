"""The layout pass applies overrides or rejects them with a reason; applied ones change the level."""

from __future__ import annotations

import re

import pytest

from compiler.models import load_model
from compiler.override import APPLIED, REJECTED, OpOverride
from compiler.pipeline import compile_model
from overrides import parse_item


def _outcome(compilation):
    (outcome,) = compilation.override_outcomes
    return outcome


def _compile(ref, target, *items):
    return compile_model(load_model(ref), target, [parse_item(i) for i in items])


def test_applied_override_sets_layout_and_grid(tiny_path, wormhole):
    c = _compile(tiny_path, wormhole, "matmul_1=2x2:l1:block_sharded")
    outcome = _outcome(c)
    assert (outcome.op, outcome.status, outcome.reason) == ("matmul_1", APPLIED, "")
    assert outcome.spec == "matmul_1=2x2:l1:block_sharded"
    layout = c.levels["layout"]
    out = layout.tensors["matmul_1"].layout
    assert (out.memory, out.memory_layout, out.grid, out.dtype, out.layout) == ("l1", "block_sharded", (2, 2), "f32", "tile")
    assert layout.op("matmul_1").attrs["grid"] == (2, 2)
    assert c.kernel.op("matmul_1").meta["kernel"].grid == (2, 2)
    # other ops keep the defaults; the graph level is untouched
    assert layout.tensors["relu_0"].layout.memory == "dram"  # matmul_0's output (relu_0 fused)
    assert c.levels["graph"].tensors["matmul_1"].layout is None


def test_dtype_and_layout_override(tiny_path, wormhole):
    c = _compile(tiny_path, wormhole, "matmul_0=bf16:row_major")
    assert _outcome(c).status == APPLIED
    out = c.levels["layout"].tensors["relu_0"].layout
    assert (out.dtype, out.layout, out.memory) == ("bf16", "row_major", "dram")


def test_override_of_a_fused_op_is_adjusted_to_its_host(tiny_path, wormhole):
    c = _compile(tiny_path, wormhole, "add_0=l1:block_sharded")
    outcome = _outcome(c)
    assert (outcome.op, outcome.status) == ("add_0", "adjusted")
    assert outcome.reason == "add_0 was fused into matmul_0; applied to matmul_0"
    assert c.levels["layout"].tensors["relu_0"].layout.memory == "l1"


def test_memory_not_on_target_is_rejected(tiny_path, wormhole):
    c = _compile(tiny_path, wormhole, "matmul_1=2x2:lls")
    outcome = _outcome(c)
    assert outcome.status == REJECTED
    assert "'lls' not on wormhole_n150" in outcome.reason
    assert "l1" in outcome.reason and "dram" in outcome.reason
    # a rejected override leaves the default layout
    layout = c.levels["layout"]
    assert layout.tensors["matmul_1"].layout.memory == "dram"
    assert layout.op("matmul_1").attrs["grid"] == (8, 8)


@pytest.mark.parametrize("grid", ["9x9", "8x9", "16x1"])
def test_grid_larger_than_target_is_rejected(tiny_path, wormhole, grid):
    outcome = _outcome(_compile(tiny_path, wormhole, f"matmul_1={grid}"))
    assert outcome.status == REJECTED
    assert f"grid {grid} outside wormhole_n150's 8x8 grid" == outcome.reason


def test_sharding_in_dram_is_rejected(tiny_path, wormhole):
    outcome = _outcome(_compile(tiny_path, wormhole, "add_0=dram:block_sharded"))
    assert outcome.status == REJECTED
    assert "block_sharded needs a per-core memory" in outcome.reason


def test_l1_overflow_is_rejected_with_kib_needed_and_available(wormhole):
    # 2048x2048 bf16 on one core: 64x64 tiles x 2 KiB = 8192 KiB > 1464 KiB of L1
    outcome = _outcome(_compile("zoo:matmul:2048x2048x2048", wormhole, "matmul=1x1:l1:block_sharded"))
    assert outcome.status == REJECTED
    assert outcome.reason == "matmul needs 8192 KiB per core in l1, 1464 KiB available"


def test_l1_shard_that_fits_is_applied(wormhole):
    # the same tensor over 8x8 cores: 128 KiB per core
    outcome = _outcome(_compile("zoo:matmul:2048x2048x2048", wormhole, "matmul=8x8:l1:block_sharded"))
    assert outcome.status == APPLIED


def test_override_for_a_missing_op_is_rejected_by_the_pass(tiny_path, wormhole):
    c = compile_model(load_model(tiny_path), wormhole, [OpOverride("nope", memory="l1", spec="nope=l1")])
    assert _outcome(c).status == REJECTED
    assert re.search(r"no op named 'nope'", _outcome(c).reason)


def test_outcome_as_dict(tiny_path, wormhole):
    d = _outcome(_compile(tiny_path, wormhole, "matmul_1=2x2:lls")).as_dict()
    assert set(d) == {"op", "spec", "status", "reason"}
    assert d["status"] == "rejected" and d["op"] == "matmul_1"
