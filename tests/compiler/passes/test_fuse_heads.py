import pytest

from tilescope.compiler.ir.meta import FUSIONS
from tilescope.compiler.passes.fuse_heads import NOT_A_SPLIT, FuseHeads
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import parse_item

from .golden import lines, run

# a projection's columns split into 4 heads of `D`, attended, and merged back: the reshapes and
# permutes a PyTorch or JAX export spells attention's heads with
HEADS = """
func.func @f(%x: tensor<128x{HD}xbf16> {{ttir.name = "x"}}) -> tensor<128x{HD}xbf16> {{
  %h = "ttir.reshape"(%x) <{{shape = [1 : i32, 128 : i32, 4 : i32, {D} : i32]}}> : (tensor<128x{HD}xbf16>) -> tensor<1x128x4x{D}xbf16> loc("q.split_heads")
  %t = "ttir.permute"(%h) <{{permutation = array<i64: 0, 2, 1, 3>}}> : (tensor<1x128x4x{D}xbf16>) -> tensor<1x4x128x{D}xbf16> loc("q.permute_heads")
  %e = "ttir.exp"(%t) : (tensor<1x4x128x{D}xbf16>) -> tensor<1x4x128x{D}xbf16> loc("attend")
  %p = "ttir.permute"(%e) <{{permutation = array<i64: 0, 2, 1, 3>}}> : (tensor<1x4x128x{D}xbf16>) -> tensor<1x128x4x{D}xbf16> loc("context.permute")
  %m = "ttir.reshape"(%p) <{{shape = [128 : i32, {HD} : i32]}}> : (tensor<1x128x4x{D}xbf16>) -> tensor<128x{HD}xbf16> loc("context.merge_heads")
  return %m : tensor<128x{HD}xbf16>
}}
"""
TILED = HEADS.format(D=64, HD=256)
UNTILED = HEADS.format(D=48, HD=192)


@pytest.fixture(scope="module")
def wormhole():
    return load_target("wormhole_n150")


def test_heads_merge_by_default_and_split_only_when_asked(wormhole):
    """tt-mlir's defaults: the merge (ConcatenateHeadsUpdatePattern) is on, the split is not."""
    graph = run(TILED, FuseHeads(wormhole))
    assert lines(graph) == [
        "q.split_heads = reshape(x)",
        "q.permute_heads = permute(q.split_heads) {permutation=array<i64: 0, 2, 1, 3>}",
        "attend = exp(q.permute_heads)",
        "context.merge_heads = concatenate_heads(attend) {fused=('context.permute',)}",
    ]
    assert graph.op("context.merge_heads").attrs["num_heads"] == 4
    assert graph.op("context.merge_heads").source == ("context.permute", "context.merge_heads")
    assert graph.meta[FUSIONS] == {}


def test_asked_the_split_fuses_and_refused_the_merge_stays(wormhole):
    graph = run(TILED, FuseHeads(wormhole, (("context.merge_heads", False), ("q.split_heads", True))))
    assert lines(graph) == [
        "q.split_heads = split_heads(x) {fused=('q.permute_heads',)}",
        "attend = exp(q.permute_heads)",
        "context.permute = permute(attend) {permutation=array<i64: 0, 2, 1, 3>}",
        "context.merge_heads = reshape(context.permute)",
    ]
    assert graph.tensors["q.permute_heads"].shape == (1, 4, 128, 64)  # the split's result, as before
    # refusing the permute of a pair refuses the pair
    graph = run(TILED, FuseHeads(wormhole, (("context.permute", False),)))
    assert "concatenate_heads" not in {op.kind for op in graph.ops}


def test_heads_not_whole_tiles_are_left_and_a_request_says_why(wormhole):
    graph = run(UNTILED, FuseHeads(wormhole, (("q.split_heads", True), ("attend", True))))
    assert {op.kind for op in graph.ops} == {"reshape", "permute", "exp"}
    assert graph.meta[FUSIONS] == {
        "q.split_heads": "head dim 48 is not a whole number of 32-column tiles",
        "attend": NOT_A_SPLIT,
    }


def test_a_fusion_override_is_reported_and_incremental_is_from_scratch(wormhole):
    model = import_mlir(TILED, "heads.mlir")
    plain = compile_model(model, wormhole, CompileOptions(policy="greedy-l1"))
    items = [parse_item("q.split_heads=fuse#true:l1:interleaved"), parse_item("attend=fuse#true")]
    options = CompileOptions(tuple(items), policy="greedy-l1")
    fresh, since = compile_model(model, wormhole, options), compile_model(model, wormhole, options, since=plain)
    assert [(o.op, o.status) for o in fresh.override_outcomes] == [("q.split_heads", "applied"), ("attend", "rejected")]
    assert fresh.override_outcomes[1].reason == NOT_A_SPLIT
    assert fresh.levels["layout"].op("q.split_heads").kind == "split_heads"
    assert fresh.levels["layout"].tensors["q.permute_heads"].layout.memory == "l1"
    for level in ("graph", "partition", "layout", "kernel"):
        assert fresh.mlir(level) == since.mlir(level)
    back = compile_model(model, wormhole, CompileOptions(policy="greedy-l1"), since=fresh)
    assert back.mlir("kernel") == plain.mlir("kernel")


def test_the_fused_ops_move_whole_tiles_faster_than_the_reshapes(wormhole):
    """A reshape changing a tiled tensor's last dim re-tiles it row by row; the fused split and
    merge copy whole tiles (what the Llama layer saves, docs/tuning.md)."""
    from tilescope.compiler.sim.simulator import simulate

    model = import_mlir(TILED, "heads.mlir")
    options = CompileOptions(policy="greedy-l1", dispatch="trace")
    split = CompileOptions((parse_item("q.split_heads=fuse#true"), parse_item("context.merge_heads=fuse#false")))
    by_kind = {}
    for made in (options, split):
        sim = simulate(compile_model(model, wormhole, made).kernel, wormhole, "trace")
        by_kind.update({(t.kind, t.name): t.duration_ns for t in sim.ops})
    assert by_kind[("split_heads", "q.split_heads")] < by_kind[("reshape", "q.split_heads")] / 2
    assert by_kind[("concatenate_heads", "context.merge_heads")] < by_kind[("reshape", "context.merge_heads")] / 2


# a split whose permute feeds a merge straight away: fusing the split must leave the merge seeing
# the fused op, not the permute it replaced
SPLIT_THEN_MERGE = """
func.func @f(%x: tensor<128x256xbf16> {ttir.name = "x"}) -> tensor<128x256xbf16> {
  %h = "ttir.reshape"(%x) <{shape = [1 : i32, 128 : i32, 4 : i32, 64 : i32]}> : (tensor<128x256xbf16>) -> tensor<1x128x4x64xbf16> loc("q.split_heads")
  %t = "ttir.permute"(%h) <{permutation = array<i64: 0, 2, 1, 3>}> : (tensor<1x128x4x64xbf16>) -> tensor<1x4x128x64xbf16> loc("q.permute_heads")
  %m = "ttir.reshape"(%t) <{shape = [128 : i32, 256 : i32]}> : (tensor<1x4x128x64xbf16>) -> tensor<128x256xbf16> loc("flat")
  return %m : tensor<128x256xbf16>
}
"""


def test_a_fused_split_read_by_a_reshape_is_not_taken_for_a_merge(wormhole):
    graph = run(SPLIT_THEN_MERGE, FuseHeads(wormhole, (("q.split_heads", True),)))
    assert [(op.name, op.kind) for op in graph.ops] == [("q.split_heads", "split_heads"), ("flat", "reshape")]


def test_either_op_of_a_pair_names_it_and_an_unknown_op_is_left_to_the_layout_pass(wormhole):
    """fuse#true on a split's permute fuses the split; on a merge's permute, the merge (fused by
    default) is as asked; on no op at all, the layout pass says there is none."""
    asked = (("q.permute_heads", True), ("context.permute", True), ("no.such.op", True))
    graph = run(TILED, FuseHeads(wormhole, asked))
    assert [op.kind for op in graph.ops] == ["split_heads", "exp", "concatenate_heads"]
    assert graph.meta[FUSIONS] == {}
    model = import_mlir(TILED, "heads.mlir")
    outcomes = compile_model(model, wormhole, CompileOptions((parse_item("no.such.op=fuse#true"),))).override_outcomes
    assert [(o.status, o.reason) for o in outcomes] == [("rejected", "no such op in the graph")]


def test_a_target_without_the_fused_kernels_keeps_heads_as_they_are():
    """The fused head ops are ttnn's: a CPU compiles the reshapes and permutes, and says why a
    split asked for is not fused."""
    cpu = load_target("x86_avx512")
    graph = run(TILED, FuseHeads(cpu, (("q.split_heads", True),)))
    assert {op.kind for op in graph.ops} == {"reshape", "permute", "exp"}
    assert graph.meta[FUSIONS] == {"q.split_heads": "x86_avx512 has no fused head split or merge"}
