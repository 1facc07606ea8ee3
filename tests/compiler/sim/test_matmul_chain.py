"""ttnn's minimal matmul as it runs: every core of the grid an even share of the padded output,
and each operand's blocks passed core to core down a chain, not multicast."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.core_work import NOC
from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import compiled_op, replay

from tests.compiler.profiles.replay_reports import op, report_text, t
from tests.compiler.sim.replayed import BLACKHOLE, changed, ns

CONFIG = (
    "MinimalMatmulConfig(M_block_size=2;K_block_size=8;N_block_size=8;subblock_h=2;subblock_w=2;"
    "compute_with_storage_grid_size=(x=8;y=8))"
)


def _row(m: int, k: int, n: int, config: str = CONFIG) -> dict:
    a, w = t(1, 1, m, k), t(1, 1, k, n)
    return op("MinimalMatmulOp", [a, w], [t(1, 1, m, n)], cores=64, arch="blackhole", config=config)


def _kernel(row: dict):
    built = compiled_op(read_ops_report(report_text(row), "r.csv").ops[0], "matmul", BLACKHOLE)
    return next(o.meta[KERNEL] for o in built[0].ops if o.kind == "matmul")


def _group(kernel, core):
    return next(g for g in kernel.groups if core in g.cores)


def test_every_core_computes_an_even_share_of_the_padded_output():
    # M 1 tile padded to one a grid row, N 40 tiles to 5 a grid column, K 40 in blocks of 8
    kernel = _kernel(_row(19, 1280, 1280))
    assert kernel.program == "matmul_chain" and kernel.cores_used == 64
    assert {g.compute.tiles for g in kernel.groups} == {1 * 5 * 40}
    assert {g.blocks for g in kernel.groups} == {40 // 8}


def test_a_passes_along_each_row_and_b_down_each_column():
    kernel = _kernel(_row(19, 1280, 1280))
    first, last = _group(kernel, (0, 0)), _group(kernel, (7, 7))
    # the first core fetches both from DRAM a block a step, waiting on each, and writes each on
    # to the next core: A (1 x 40 tiles) by the output's writer, B (40 x 5 tiles) by the reader
    a, b = 40 * 2048, 40 * 5 * 2048
    assert [(r.path, r.bytes, r.hops, r.by_writer, r.pages) for r in first.reads] == [
        ("dram", a, 0, True, 5),
        (NOC, a, 0, True, 0),
        ("dram", b, 0, False, 5),
        (NOC, b, 0, False, 0),
    ]
    # the last gets both from the core before it, seven cores down each chain, and passes nothing on
    assert [(r.path, r.bytes, r.hops) for r in last.reads] == [(NOC, a, 7), (NOC, b, 7)]
    middle = _group(kernel, (3, 4))
    assert sorted((r.hops, r.by_writer) for r in middle.reads) == [(0, False), (0, True), (6, False), (6, True)]


def test_a_tall_output_swaps_the_chains():
    # M 40 tiles > N 1 on a grid of 4 rows of 8: M across the 8 columns (5 tiles a core), N down
    # the 4 rows (padded to 4, a tile a core); A, the larger, down each column by the reader
    config = CONFIG.replace("(x=8;y=8)", "(x=8;y=4)")
    row = op(
        "MinimalMatmulOp",
        [t(1, 1, 1280, 1280), t(1, 1, 1280, 32)],
        [t(1, 1, 1280, 32)],
        cores=32,
        arch="blackhole",
        config=config,
    )
    kernel = _kernel(row)
    assert kernel.grid == (4, 8) and kernel.cores_used == 32
    assert {g.compute.tiles for g in kernel.groups} == {5 * 1 * 40}
    # 5 M tiles in blocks of 2 (3 passes), each over K in blocks of 8 (5 steps), whatever N's size
    assert {g.blocks for g in kernel.groups} == {3 * 5}
    corner = _group(kernel, (3, 7))  # last of its column's chain (A) and of its row's (B)
    assert sorted((r.hops, r.by_writer) for r in corner.reads) == [(3, False), (7, True)]


def test_the_last_core_waits_for_the_blocks_to_pass_the_chain():
    row = _row(19, 768, 768)
    slow = changed(step_sync_cycles=BLACKHOLE.pipeline.step_sync_cycles + 1000)
    steps = 768 // 32 // 8
    # a step's handshake is paid by every core each step, and by the block at each of six hops
    assert ns(row, "matmul", slow) - ns(row, "matmul") == pytest.approx((steps + 6) * 1000 / 1.35, rel=0.02)


@pytest.mark.parametrize(
    "config",
    [
        "MinimalMatmulConfig(M_block_size=0;K_block_size=8;N_block_size=8)",
        "x" * 10_000,
        "MinimalMatmulConfig(M_block_size=99999999;K_block_size=8;N_block_size=8)",
    ],
)
def test_a_padded_block_config_that_is_not_one_is_not_taken(config):
    assert _kernel(_row(32, 256, 256, config)).program != "matmul_chain"


CLIP = ("bh_64_clip_encoder_1.csv", "wh_clip_encoder_2.csv")


@pytest.mark.parametrize("name", CLIP)
def test_the_clip_encoders_minimal_matmuls_are_within_a_fifth_of_the_chip(perf_reports, name):
    report = read_ops_report((perf_reports / name).read_text(encoding="utf-8-sig"), name)
    rows = [r for r in replay(report).ops if r.op.op_code == "MinimalMatmulOp" and r.timing]
    assert len(rows) >= 100
    errors = sorted(abs(r.op.kernel_ns / r.timing.duration_ns - 1) for r in rows)
    assert errors[-1] <= 0.2, errors[-5:]
