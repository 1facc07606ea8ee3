"""split-kernels: each op's work split over its grid into reads, compute and writes per core; an
op shaped like one split before takes that kernel under its own tensors' names, and gets what
splitting it on its own gives."""

import pytest

from tilescope.compiler.analysis.l1_budget import L1Budget
from tilescope.compiler.ir.meta import KERNEL, KERNELS, L1_LIVE
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.passes.split_kernels import SplitKernels
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.targets.catalog import load_target

from .golden import printed, through


@pytest.mark.parametrize(
    "ref, target",
    [
        ("zoo:bert-base?layers=3", "wormhole_n150"),
        ("zoo:llama-3.2-1b?mode=decode&layers=3", "wormhole_n150"),  # caches written in place, attention
        ("zoo:resnet50", "blackhole_p150"),
        ("zoo:llama-3.2-1b?layers=2&devices=8", "t3k"),  # collectives, each device's piece
    ],
)
def test_every_kernel_equals_the_ops_own_split(ref, target):
    compiled = compile_model(load_model(ref), load_target(target))
    layout = compiled.levels["layout"]
    alone = SplitKernels(compiled.target)
    shared = 0
    for op in compiled.kernel.ops:
        at = layout.op(op.name)
        own = alone._split(layout, at, L1Budget.of(at, compiled.target))
        assert op.meta[KERNEL] == own, op.name
        shared += own is not None
    assert shared > 0


def test_a_renamed_kernel_is_timed_as_its_own_op():
    """The simulator times a kernel and takes the time for its renamings (kernel.like): the same
    timings, zones and counters as timing every op on its own."""
    from dataclasses import replace

    from tilescope.compiler.sim.simulator import simulate

    target = load_target("wormhole_n150")
    compiled = compile_model(load_model("zoo:bert-base?layers=3"), target)
    split = [op for op in compiled.kernel.ops if op.meta[KERNEL] is not None]
    renamed = [op for op in split if op.meta[KERNEL].like]
    assert len(renamed) > len(split) // 3  # layers 2 and 3 take layer 1's kernels
    shared = simulate(compiled.kernel, target)
    alone_graph = compiled.kernel.with_level("kernel")
    for op in alone_graph.ops:
        if op.meta[KERNEL] is not None:
            op.meta[KERNEL] = replace(op.meta[KERNEL], like=None)
    alone = simulate(alone_graph, target)

    def rows(sim):
        ops = [(o.name, o.start_ns, o.duration_ns, o.bound, o.why, o.bytes, o.flops, o.tensors) for o in sim.ops]
        return ops, list(sim.zones), list(sim.counters)

    assert rows(shared) == rows(alone)


MATMUL_ADD_VIEW = """
func.func @f(%x: tensor<64x64xbf16> {ttir.name = "x"}, %w: tensor<64x64xbf16> {ttir.name = "w"}) -> tensor<1x64x64xbf16> {
  %0 = "ttir.matmul"(%x, %w) : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("mm")
  %1 = "ttir.add"(%0, %x) : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("residual")
  %2 = "ttir.reshape"(%1) <{shape = [1 : i32, 64 : i32, 64 : i32]}> : (tensor<64x64xbf16>) -> tensor<1x64x64xbf16> loc("view")
  return %2 : tensor<1x64x64xbf16>
}
"""


GOLDEN_MATMUL_ADD_VIEW = r"""module @"golden" attributes {ts.level = "kernel"} {
  func.func @forward(%arg0: tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "x"}, %arg1: tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "w"}) -> (tensor<1x64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) {
    %0 = "ts.matmul"(%arg0, %arg1) ({
      "ts.cores"() ({
        "ts.read"() {bytes = 8192 : i64, path = "dram", tensor = "x"} : () -> ()
        "ts.read"() {bytes = 4096 : i64, path = "dram", tensor = "w"} : () -> ()
        "ts.cb"() {bytes = 16384 : i64, name = "in0", pages = 8 : i64, tensor = "x"} : () -> ()
        "ts.cb"() {bytes = 8192 : i64, name = "in1", pages = 4 : i64, tensor = "w"} : () -> ()
        "ts.cb"() {bytes = 4096 : i64, name = "out", pages = 2 : i64, tensor = "mm"} : () -> ()
        "ts.compute"() {cycles = 128 : i64, engine = "matrix", fidelity = "hifi2", tiles = 4 : i64} : () -> ()
        "ts.write"() {bytes = 4096 : i64, path = "dram", tensor = "mm"} : () -> ()
      }) {blocks = 1 : i64, cores = array<i64: 0, 0>} : () -> ()
      "ts.cores"() ({
        "ts.read"() {bytes = 8192 : i64, path = "mcast", tensor = "x"} : () -> ()
        "ts.read"() {bytes = 4096 : i64, path = "dram", tensor = "w"} : () -> ()
        "ts.cb"() {bytes = 16384 : i64, name = "in0", pages = 8 : i64, tensor = "x"} : () -> ()
        "ts.cb"() {bytes = 8192 : i64, name = "in1", pages = 4 : i64, tensor = "w"} : () -> ()
        "ts.cb"() {bytes = 4096 : i64, name = "out", pages = 2 : i64, tensor = "mm"} : () -> ()
        "ts.compute"() {cycles = 128 : i64, engine = "matrix", fidelity = "hifi2", tiles = 4 : i64} : () -> ()
        "ts.write"() {bytes = 4096 : i64, path = "dram", tensor = "mm"} : () -> ()
      }) {blocks = 1 : i64, cores = array<i64: 0, 1>} : () -> ()
    }) {block = array<i64: 2, 1, 2>, grid = array<i64: 8, 8>, program = "matmul_1d_mcast_in0", ts.from = ["mm"]} : (tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>, tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("mm")
    %1 = "ts.add"(%0, %arg0) ({
      "ts.cores"() ({
        "ts.read"() {bytes = 2048 : i64, path = "dram", tensor = "mm"} : () -> ()
        "ts.read"() {bytes = 2048 : i64, path = "dram", tensor = "x", by = "writer"} : () -> ()
        "ts.cb"() {bytes = 4096 : i64, name = "in0", pages = 2 : i64, tensor = "mm"} : () -> ()
        "ts.cb"() {bytes = 4096 : i64, name = "in1", pages = 2 : i64, tensor = "x"} : () -> ()
        "ts.cb"() {bytes = 4096 : i64, name = "out", pages = 2 : i64, tensor = "residual"} : () -> ()
        "ts.compute"() {cycles = 8 : i64, engine = "vector", tiles = 1 : i64} : () -> ()
        "ts.write"() {bytes = 2048 : i64, path = "dram", tensor = "residual"} : () -> ()
      }) {blocks = 1 : i64, cores = array<i64: 0, 0, 0, 1, 0, 2, 0, 3>} : () -> ()
    }) {grid = array<i64: 8, 8>, program = "eltwise", ts.from = ["residual"]} : (tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>, tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("residual")
    %2 = "ts.reshape"(%1) {grid = array<i64: 8, 8>, shape = "[1 : i32, 64 : i32, 64 : i32]", ts.from = ["view"]} : (tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<1x64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("view")
    return %2 : tensor<1x64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>
  }
}
"""


def test_a_thin_matmul_multicasts_a_an_eltwise_op_spreads_its_tiles_and_a_view_does_nothing(wormhole):
    """2x2 output tiles: the 1D program gives each of 2 cores a column, the first fetching all of
    A and multicasting it to the other; the add's 4 tiles go a tile a core, its second operand
    read by the writer (ttnn's binary_ng); the reshape only adds a size-1 dim, so it is a view of
    the add's bytes, with no kernel."""
    _, graph = through(MATMUL_ADD_VIEW, wormhole, "split-kernels")
    assert printed(graph) == GOLDEN_MATMUL_ADD_VIEW


EXP_CHAIN = """
func.func @f(%x: tensor<64x64xbf16> {ttir.name = "x"}) -> tensor<64x64xbf16> {
  %0 = "ttir.exp"(%x) : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("e0")
  %1 = "ttir.exp"(%0) : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("e1")
  %2 = "ttir.exp"(%1) : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("e2")
  return %2 : tensor<64x64xbf16>
}
"""


GOLDEN_E2 = r"""    %2 = "ts.exp"(%1) ({
      "ts.cores"() ({
        "ts.read"() {bytes = 2048 : i64, path = "dram", tensor = "e1"} : () -> ()
        "ts.cb"() {bytes = 4096 : i64, name = "in0", pages = 2 : i64, tensor = "e1"} : () -> ()
        "ts.cb"() {bytes = 4096 : i64, name = "out", pages = 2 : i64, tensor = "e2"} : () -> ()
        "ts.compute"() {cycles = 1150 : i64, engine = "vector", tiles = 1 : i64} : () -> ()
        "ts.write"() {bytes = 2048 : i64, path = "dram", tensor = "e2"} : () -> ()
      }) {blocks = 1 : i64, cores = array<i64: 0, 0, 0, 1, 0, 2, 0, 3>} : () -> ()
    }) {grid = array<i64: 8, 8>, program = "eltwise", ts.from = ["e2"]} : (tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<64x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("e2")
"""


def test_an_op_shaped_like_one_before_takes_its_kernel_under_its_own_names(wormhole):
    """e1 and e2 read and write tensors laid out alike (e0 reads an input, laid out otherwise):
    e2's kernel is e1's, reading e1 and writing e2."""
    _, graph = through(EXP_CHAIN, wormhole, "split-kernels")
    e0, e1, e2 = (graph.op(name).meta[KERNEL] for name in ("e0", "e1", "e2"))
    assert e0.like is None and e1.like is None and e2.like is e1
    assert printed(graph, "e2") == GOLDEN_E2


def test_a_kernel_holds_for_every_budget_in_its_range_and_only_there():
    """A kernel is kept with the range of L1 budgets over which every fit it tried answers the
    same: split at any budget inside, the op gets the same kernel; just outside, another."""
    target = load_target("wormhole_n150")
    compiled = compile_model(load_model("zoo:bert-base?layers=2&seq=512"), target)
    layout, checked = compiled.levels["layout"], 0
    for key, made in compiled.kernel.meta[KERNELS].items():
        for split in made:
            if split.kernel is None or split.low == float("-inf"):
                continue
            op = next(op for op in layout.ops if op.meta.get(KERNEL) is None and _named(op, key))
            for budget in (split.low, (split.low + min(split.high, 2 * split.low)) / 2):
                assert SplitKernels(target)._split(layout, op, L1Budget(budget)) == split.kernel, op.name
            assert SplitKernels(target)._split(layout, op, L1Budget(split.low - 1)) != split.kernel, op.name
            checked += 1
    assert checked >= 3  # matmuls and streamed ops whose buffers were fitted


def test_a_re_run_that_changes_the_l1_beside_many_ops_resplits_only_those_outside_their_ranges():
    from tilescope.compiler.analysis.l1_allocator import last_uses
    from tilescope.compiler.pipeline.options import GREEDY_L1, CompileOptions
    from tilescope.overrides import parse_item

    target = load_target("wormhole_n150")
    model = load_model("zoo:bert-base?layers=2")
    base = compile_model(model, target, CompileOptions(policy=GREEDY_L1))
    layout = base.levels["layout"]
    last = last_uses(layout)
    # the L1 tensor live longest: moved to DRAM, it leaves more L1 beside every op it spanned
    born = {t: i for i, op in enumerate(layout.ops) for t in op.outputs}
    longest = max(
        (op for op in layout.ops if op.outputs and layout.tensors[op.outputs[0]].layout.memory == "l1"),
        key=lambda op: last[op.outputs[0]] - born[op.outputs[0]],
    )
    options = CompileOptions((parse_item(f"{longest.name}=dram"),), policy=GREEDY_L1)
    again = compile_model(model, target, options, since=base)
    before = {op.name: op.meta.get(L1_LIVE) for op in base.kernel.ops}
    changed = [op for op in again.kernel.ops if op.name in before and op.meta.get(L1_LIVE) != before[op.name]]
    kept = [op for op in changed if op.meta[KERNEL] is base.kernel.op(op.name).meta[KERNEL]]
    assert changed and kept  # L1 live changed beside them, their kernels did not
    scratch = compile_model(model, target, options)
    assert [op.meta[KERNEL] for op in again.kernel.ops] == [op.meta[KERNEL] for op in scratch.kernel.ops]


def _named(op, key: tuple) -> bool:
    return tuple(name for name, _, _ in key[2]) == (*op.inputs, *op.outputs)
