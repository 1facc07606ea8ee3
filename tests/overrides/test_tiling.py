"""Tiling overrides (block#MxNxK, subblock#HxW, double_buffer#) are checked against the work they
tile and move the simulated time the way physics says."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.overrides import format_item, parse_item

MATMUL = "zoo:matmul:2048x2048x2048"  # 64x64x64 tiles; 8x8 output tiles per core on an 8x8 grid


def _run(wormhole, *items):
    c = compile_model(load_model(MATMUL), wormhole, CompileOptions([parse_item(i) for i in items]))
    return c, simulate(c.kernel, wormhole, "trace").ops[0]


def test_tokens_parse_and_print():
    ov = parse_item("mm=block#4x2x8:subblock#2x2:double_buffer#false")
    assert (ov.block, ov.subblock, ov.double_buffer) == ((4, 2, 8), (2, 2), False)
    assert format_item(ov) == "mm=block#4x2x8:subblock#2x2:double_buffer#false"


def test_the_default_is_one_pass_per_core(wormhole):
    c, _ = _run(wormhole)
    kernel = c.kernel.op("matmul").meta[KERNEL]
    assert kernel.block == (8, 8, 8)  # the whole 8x8 share, K in steps of 8 tiles
    assert all(g.blocks == 8 for g in kernel.groups)


def test_smaller_blocks_read_operands_again_and_take_longer(wormhole):
    _, base = _run(wormhole)
    c, small = _run(wormhole, "matmul=block#4x4x8")
    assert c.override_outcomes[0].status == "applied"
    assert c.kernel.op("matmul").meta[KERNEL].groups[0].cbs[0].pages == 2 * 4 * 8
    assert small.bytes["dram"] + small.bytes.get("mcast", 0) > base.bytes["dram"] + base.bytes.get("mcast", 0)
    assert small.duration_ns > base.duration_ns


def test_single_buffering_stops_the_engines_overlapping(wormhole):
    _, base = _run(wormhole)
    c, single = _run(wormhole, "matmul=double_buffer#false")
    group = c.kernel.op("matmul").meta[KERNEL].groups[0]
    assert not group.double_buffered and group.cbs[0].pages == 8 * 8  # one K step of A, not two
    assert single.duration_ns > 1.5 * base.duration_ns
    assert "double_buffer = false" in c.mlir("kernel")


def test_a_subblock_is_recorded_in_the_kernel(wormhole):
    c, _ = _run(wormhole, "matmul=subblock#2x4")
    assert c.kernel.op("matmul").meta[KERNEL].subblock == (2, 4)
    assert "subblock = array<i64: 2, 4>" in c.mlir("kernel")


@pytest.mark.parametrize(
    "item, reason",
    [
        ("matmul=block#8x8x3", "block K 3 does not divide K = 64 tiles; would: 1, 2, 4, 8, 16, 32, 64"),
        (
            "matmul=block#3x8x8",
            "block 3x8 does not divide the 8x8 output tiles per core; would: rows 1, 2, 4, 8, columns 1, 2, 4, 8",
        ),
        ("matmul=subblock#4x4", "subblock 4x4 holds 16 tiles; the destination registers hold 8"),
        (
            "matmul=block#8x8x8:subblock#3x1",
            "subblock 3x1 does not divide the 8x8 block; would: h 1, 2, 4, 8, w 1, 2, 4, 8",
        ),
        (
            "matmul=1x1:block#64x64x64",
            "block 64x64x64 needs 40960 KiB of circular buffers per core, 1464 KiB available",
        ),
    ],
)
def test_tilings_that_do_not_fit_the_work_are_rejected_with_what_would(wormhole, item, reason):
    c, _ = _run(wormhole, item)
    (outcome,) = c.override_outcomes
    assert (outcome.status, outcome.reason) == ("rejected", reason)


def test_blocks_apply_to_matrix_ops_only(wormhole):
    from tilescope.compiler.frontend.mlir_import import import_mlir

    text = """
func.func @forward(%x: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %0 = "ttir.exp"(%x) : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("e")
  return %0 : tensor<64x64xbf16>
}
"""
    c = compile_model(import_mlir(text, "e.mlir"), wormhole, CompileOptions([parse_item("e=block#1x1x1")]))
    assert c.override_outcomes[0].reason == "block and subblock apply to matmuls and convolutions, not exp"
