"""Multi-device models: meshes, shardings and collectives read from Shardy, GSPMD and TTIR."""

from __future__ import annotations

import time
import pytest

from tilescope.compiler.ir.meta import LINES, LOCAL, MESH
from tilescope.compiler.ir import opset
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.mlir_import import import_mlir, strip_unparsable
from tilescope.compiler.frontend.model_refs import EXAMPLES, load_model
from tilescope.compiler.passes.normalize import Normalize
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sharding.mesh import Mesh, Sharding

EXAMPLE = EXAMPLES / "sharded_attention.mlir"


def graph_level(text: str, ref: str = "m.mlir"):
    graph = import_mlir(text, ref).graph
    return graph, Normalize().run(graph.with_level("graph"))


def sdy_module(body: str, args: str = "%arg0: tensor<16x8xf32>", mesh: str = '<["x"=2, "y"=4]>') -> str:
    return f"""module {{
  sdy.mesh @mesh = {mesh}
  func.func @main({args}) -> tensor<16x8xf32> {{
{body}
  }}
}}"""


def test_the_corpus_sdy_model_has_its_two_device_mesh(corpus):
    graph = load_model(str(corpus / "sdy_autoencoder_linear.mlir")).graph
    assert graph.meta[MESH] == Mesh((("model", 1), ("batch", 2)), "mesh")
    assert graph.meta[MESH].devices == 2


def test_the_example_shardings_land_on_their_tensors():
    graph = load_model(str(EXAMPLE)).graph
    mesh = graph.meta[MESH]
    assert mesh.axes == (("batch", 2), ("model", 4))
    x, wq, _, _, wo = (graph.tensors[name] for name in graph.inputs)
    assert x.sharding == Sharding((("batch",), (), ()))
    assert wq.sharding == Sharding(((), ("model",)))
    assert wo.sharding == Sharding((("model",), ()))
    constraint = next(op for op in graph.ops if op.kind == "sdy.sharding_constraint")
    assert graph.tensors[constraint.outputs[0]].sharding == Sharding((("batch",), ("model",), (), ()))
    reduce = next(op for op in graph.ops if op.kind == "sdy.all_reduce")
    partial = graph.tensors[reduce.inputs[0]]
    assert partial.sharding == Sharding((("batch",), (), ()), partial=("model",))  # unreduced={"model"}
    assert graph.tensors[graph.outputs[0]].sharding == Sharding((("batch",), (), ()))
    assert sum(op.kind == "sdy.constant" for op in graph.ops) == 2
    lines = EXAMPLE.read_text().split("\n")
    assert "sdy.all_reduce" in lines[reduce.meta[LINES][0] - 1]  # ops keep their lines


def test_the_example_compiles_on_one_device_and_every_level_keeps_the_mesh(wormhole):
    compiled = compile_model(load_model(str(EXAMPLE)), wormhole)
    graph = compiled.levels["graph"]
    assert graph.meta[MESH].devices == 8
    for level in ("graph", "layout", "kernel"):
        graph = compiled.levels[level]
        assert graph.tensors[graph.inputs[0]].sharding == Sharding((("batch",), (), ()))
    # on one device the levels from partition on run whole, and say so
    assert all(compiled.levels[level].meta[MESH].devices == 1 for level in ("partition", "layout", "kernel"))
    assert any("runs whole on wormhole_n150's one device" in w for w in compiled.warnings)
    reduce = next(op for op in compiled.levels["graph"].ops if op.kind == "all_reduce")
    assert (reduce.attrs["axes"], reduce.attrs["reduce"]) == (("model",), "sum")
    assert opset.op_class("all_reduce") == opset.OpClass(opset.COLLECTIVE, "link", 0)


def test_sdy_constant_loads_plain_and_with_a_sharding():
    text = sdy_module(
        """    %0 = sdy.constant dense<1.000000e+00> : tensor<16x8xf32>
    %1 = sdy.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} dense<2.0> : tensor<16x8xf32>
    %2 = stablehlo.add %0, %1 : tensor<16x8xf32>
    return %2 : tensor<16x8xf32>"""
    )
    graph, normal = graph_level(text)
    assert [op.kind for op in normal.ops] == ["constant", "constant", "add"]
    assert graph.tensors[graph.ops[1].outputs[0]].sharding == Sharding((("x",), ()))
    assert [op.meta[LINES][0] for op in graph.ops] == [4, 5, 6]


COLLECTIVES = [
    ('sdy.all_gather [{}, {"y"}] %arg0 out_sharding=<@mesh, [{"x"}, {}]>', "all_gather", ("y",), 1, None),
    ('sdy.all_slice [{"y"}, {}] %arg0 out_sharding=<@mesh, [{"y"}, {}]>', "all_slice", ("y",), 0, None),
    ('sdy.reduce_scatter [{}, {"y"}] %arg0 out_sharding=<@mesh, [{}, {"y"}]>', "reduce_scatter", ("y",), 1, "sum"),
    ('sdy.all_reduce {"x", "y"} %arg0 out_sharding=<@mesh, [{}, {}]>', "all_reduce", ("x", "y"), None, "sum"),
    ('sdy.all_to_all [{"x"}: 0->1] %arg0 out_sharding=<@mesh, [{}, {"x"}]>', "all_to_all", ("x",), 1, None),
    ('sdy.collective_permute %arg0 out_sharding=<@mesh, [{"y"}, {"x"}]>', "collective_permute", ("y", "x"), None, None),
    ('sdy.sharding_constraint %arg0 <@mesh, [{"x", ?}, {?}]>', "sharding_constraint", ("x",), None, None),
]


@pytest.mark.parametrize(("source", "kind", "axes", "dim", "reduce"), COLLECTIVES)
def test_each_shardy_collective_normalizes_with_its_axes(source, kind, axes, dim, reduce):
    text = sdy_module(f"    %0 = {source} : tensor<16x8xf32>\n    return %0 : tensor<16x8xf32>")
    graph, normal = graph_level(text)
    (op,) = normal.ops
    assert (op.kind, op.attrs["axes"], op.attrs.get("dim"), op.attrs.get("reduce")) == (kind, axes, dim, reduce)
    assert normal.tensors[op.outputs[0]].sharding is not None
    assert opset.op_class(kind).kind_class in (opset.COLLECTIVE, opset.SHARDING)


def test_a_manual_computation_is_inlined_between_full_to_shard_and_shard_to_full():
    text = """module {
  sdy.mesh @mesh = <["x"=1, "y"=2]>
  func.func @main(%arg0: tensor<64x32xf32>, %arg1: tensor<32x128xf32>) -> tensor<64x128xf32> {
    %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"x"}, {"y"}]>, <@mesh, [{"y"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"y", "x"} (%arg2: tensor<64x16xf32>, %arg3: tensor<16x128xf32>) {
      %1 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0] : (tensor<64x16xf32>, tensor<16x128xf32>) -> tensor<64x128xf32>
      %2 = sdy.all_reduce {"y"} %1 out_sharding=<@mesh, [{"x"}, {}]> : tensor<64x128xf32>
      sdy.return %2 : tensor<64x128xf32>
    } : (tensor<64x32xf32>, tensor<32x128xf32>) -> tensor<64x128xf32>
    return %0 : tensor<64x128xf32>
  }
}"""
    graph, normal = graph_level(text)
    kinds = [op.kind for op in normal.ops]
    assert kinds == ["full_to_shard", "full_to_shard", "matmul", "all_reduce", "shard_to_full"]
    first, second, matmul, reduce, back = normal.ops
    assert normal.tensors[first.outputs[0]].shape == (64, 16)  # the body's argument, as written
    assert normal.tensors[first.outputs[0]].sharding == Sharding((("x",), ("y",)))
    assert first.attrs["axes"] == ("y", "x")
    assert normal.meta[LOCAL] == {first.outputs[0], second.outputs[0], matmul.outputs[0], reduce.outputs[0]}
    assert back.inputs == reduce.outputs and back.outputs == normal.outputs
    assert normal.tensors[back.outputs[0]].sharding == Sharding((("x",), ()))
    assert [op.meta[LINES][0] for op in graph.ops] == [4, 4, 5, 6, 4]


def test_meshes_empty_with_device_ids_and_several():
    text = """module {
  sdy.mesh @empty = <[]>
  sdy.mesh @mesh = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>
  func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x":(1)2}, {"y", ?}], replicated={"z"}>}) -> tensor<16x8xf32> {
    return %arg0 : tensor<16x8xf32>
  }
}"""
    graph = import_mlir(text, "m.mlir").graph
    assert graph.meta[MESH] == Mesh((("x", 2), ("y", 2)), "mesh")  # the one the shardings use
    assert graph.tensors["arg0"].sharding == Sharding((("x",), ("y",)))  # the sub-axis is all of x
    warnings = " ".join(graph.warnings)
    assert "@empty not" in warnings and "another order" in warnings


GSPMD = """module attributes {mhlo.num_partitions = 4 : i32} {
  func.func @main(%arg0: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"},
                  %arg1: tensor<8x16xf32> {mhlo.sharding = "{replicated}"},
                  %arg2: tensor<8x16xf32> {mhlo.sharding = "{maximal device=1}"}) -> tensor<8x16xf32> {
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{devices=[2,2]0,1,2,3}"} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {mhlo.sharding = "{manual}"} : (tensor<8x16xf32>) -> tensor<4x8xf32>
    %2 = stablehlo.negate %1 : tensor<4x8xf32>
    %3 = stablehlo.custom_call @SPMDShardToFullShape(%2) {mhlo.sharding = "{devices=[2,2]<=[4]}"} : (tensor<4x8xf32>) -> tensor<8x16xf32>
    %4 = stablehlo.add %3, %arg1 {mhlo.sharding = "{devices=[2,2]<=[2,2]T(1,0)}"} : tensor<8x16xf32>
    return %4 : tensor<8x16xf32>
  }
}"""


def test_gspmd_strings_become_shardings_on_a_mesh_of_the_tile_factors():
    graph, normal = graph_level(GSPMD)
    assert graph.meta[MESH] == Mesh((("axis_0", 2), ("axis_1", 2)))
    t = graph.tensors
    assert t["arg0"].sharding == Sharding((("axis_0",), ()))  # the replicated last tile dim uses no axis
    assert t["arg1"].sharding == Sharding.replicated(2) and t["arg2"].sharding == Sharding.replicated(2)
    assert [op.kind for op in normal.ops] == ["sharding_constraint", "full_to_shard", "neg", "shard_to_full", "add"]
    constraint, to_shard, neg, to_full, add = normal.ops
    assert normal.tensors[constraint.outputs[0]].sharding == Sharding((("axis_0",), ("axis_1",)))
    assert to_shard.attrs["axes"] == to_full.attrs["axes"] == ("axis_0", "axis_1")
    assert normal.meta[LOCAL] == {to_shard.outputs[0], neg.outputs[0]}
    assert normal.tensors[add.outputs[0]].sharding is None  # a transposed device order: not modelled
    assert any("device order" in w and "maximal" not in w for w in graph.warnings)


TTIR = """module attributes {ttcore.meshes = #ttcore.meshes<[<"mesh" = 1x2>]>} {
  func.func @forward(%arg0: tensor<1x1x32x128xf32>) -> tensor<1x1x32x128xf32> {
    %0 = "ttir.empty"() : () -> tensor<1x1x32x64xf32>
    %1 = "ttir.mesh_shard"(%arg0, %0) <{shard_dims = array<i64: -1, 3>, shard_direction = #ttcore.shard_direction<full_to_shard>, shard_shape = array<i64: 1, 1, 1, 2>, shard_type = #ttcore.shard_type<devices>}> : (tensor<1x1x32x128xf32>, tensor<1x1x32x64xf32>) -> tensor<1x1x32x64xf32>
    %2 = "ttir.all_reduce"(%1) <{cluster_axis = 1 : ui32, reduce_type = #ttcore.reduce_type<sum>}> : (tensor<1x1x32x64xf32>) -> tensor<1x1x32x64xf32>
    %3 = "ttir.all_gather"(%2) <{all_gather_dim = 3 : si32, cluster_axis = 1 : ui32}> : (tensor<1x1x32x64xf32>) -> tensor<1x1x32x128xf32>
    %4 = "ttir.mesh_shard"(%3) <{shard_dims = array<i64: -1>, shard_direction = #ttcore.shard_direction<shard_to_full>, shard_shape = array<i64: 1>, shard_type = #ttcore.shard_type<replicate>}> : (tensor<1x1x32x128xf32>) -> tensor<1x1x32x128xf32>
    return %4 : tensor<1x1x32x128xf32>
  }
}"""


def test_ttir_mesh_shard_and_collectives_in_generic_form():
    _, normal = graph_level(TTIR)
    assert normal.meta[MESH] == Mesh((("axis_0", 1), ("axis_1", 2)))
    assert [op.kind for op in normal.ops] == ["full_to_shard", "all_reduce", "all_gather", "shard_to_full"]
    shard, reduce, gather, full = normal.ops
    assert shard.inputs == ["arg0"]  # the destination operand is dropped
    assert normal.tensors[shard.outputs[0]].sharding == Sharding(((), (), (), ("axis_1",)))
    assert (reduce.attrs["axes"], reduce.attrs["reduce"]) == (("axis_1",), "sum")
    assert (gather.attrs["axes"], gather.attrs["dim"]) == (("axis_1",), 3)
    assert full.attrs["axes"] == ()
    assert normal.meta[LOCAL] == {shard.outputs[0], reduce.outputs[0], gather.outputs[0]}


ERRORS = [
    ('[{"z"}, {}]', 'm.mlir:3:.*mesh has no axis "z"'),
    ('[{"x"}]', "m.mlir:3:.*1 dimensions given for a rank-2 tensor"),
    ("[{x}, {}]", "m.mlir:3:.*malformed sharding.*axis name in quotes"),
]


@pytest.mark.parametrize(("dims", "message"), ERRORS)
def test_a_bad_sharding_is_one_line_naming_file_line_and_cause(dims, message):
    text = f"""module {{
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%arg0: tensor<16x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, {dims}>}}) -> tensor<16x8xf32> {{
    return %arg0 : tensor<16x8xf32>
  }}
}}"""
    with pytest.raises(ModelLoadError, match=message) as err:
        import_mlir(text, "m.mlir")
    assert "\n" not in str(err.value)


def test_a_dimension_that_does_not_divide_names_its_op_line():
    text = """module {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main() -> tensor<6x8xf32> {
    %0 = sdy.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}, {}]>]>} dense<1.0> : tensor<6x8xf32>
    return %0 : tensor<6x8xf32>
  }
}"""
    expected = r"^m\.mlir:4:\d+: sharding \[\{y\}, \{\}\] of constant_0: dimension 0 \(6\) does not divide into 4$"
    with pytest.raises(ModelLoadError, match=expected):
        import_mlir(text, "m.mlir")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('mhlo.sharding = "{devices=[2,1}"', r"m\.mlir:2:\d+: malformed sharding"),
        ('mhlo.sharding = "{devices=[3,1]0,1,2}"', "dimension 0 \\(8\\) does not divide into 3|cannot express"),
        ("sdy.sharding = #sdy.sharding<@other, [{}, {}]>", "names mesh @other, which is not declared"),
    ],
)
def test_malformed_strings_and_unknown_meshes_are_one_line(source, message):
    text = f"""module attributes {{mhlo.num_partitions = 3 : i32}} {{
  func.func @main(%arg0: tensor<8x16xf32> {{{source}}}) -> tensor<8x16xf32> {{
    return %arg0 : tensor<8x16xf32>
  }}
}}"""
    with pytest.raises(ModelLoadError, match=message) as err:
        import_mlir(text, "m.mlir")
    assert "\n" not in str(err.value)


def test_a_malformed_mesh_names_its_line():
    with pytest.raises(ModelLoadError, match=r"^m\.mlir:2: malformed mesh @mesh: "):
        import_mlir(sdy_module("    return %arg0 : tensor<16x8xf32>", mesh='<["x"=two]>'), "m.mlir")


def test_rewriting_keeps_every_line_and_the_corpus_input_parses():
    text = EXAMPLE.read_text()
    rewritten, warnings = strip_unparsable(text)
    assert rewritten.count("\n") == text.count("\n") and warnings == []
    assert "sdy.mesh" not in rewritten and '"sdy.all_reduce"' in rewritten


@pytest.mark.parametrize(
    "line",
    [
        "    %0 = sdy.all_gather " + "[{" * 200 + " %arg0 : tensor<16x8xf32>",
        "    %0 = sdy.constant " + "dense<" * 100 + "> : tensor<16x8xf32>" * 20_000,
        '    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"' + "x" * 200_000 + '"}, {}]> : tensor<16x8xf32>',
    ],
)
def test_hostile_sdy_lines_fail_in_bounded_time(line):
    text = sdy_module(line + "\n    return %0 : tensor<16x8xf32>")
    start = time.perf_counter()
    with pytest.raises(ModelLoadError) as err:
        import_mlir(text, "m.mlir")
    assert time.perf_counter() - start < 5
    assert "\n" not in str(err.value) and len(str(err.value)) < 400


@pytest.mark.parametrize(
    "module",
    [
        sdy_module(
            "    return %arg0 : tensor<16x8xf32>", mesh="<[" + ", ".join(f'"a{i}"=2' for i in range(100_000)) + "]>"
        ),
        'module attributes {ttcore.meshes = #ttcore.meshes<[<"mesh" = ' + "x".join(["2"] * 20_000) + ">]>} {"
        "\n  func.func @main(%arg0: tensor<16x8xf32>) -> tensor<16x8xf32> {\n    return %arg0 : tensor<16x8xf32>\n  }\n}",
        'module attributes {mhlo.num_partitions = 8 : i32} {\n  func.func @main(%arg0: tensor<16x8xf32> {mhlo.sharding = "'
        "{devices=["
        + ",".join(["2"] * 5000)
        + ']<=[8]}"}) -> tensor<16x8xf32> {\n    return %arg0 : tensor<16x8xf32>\n  }\n}',
    ],
    ids=["sdy", "ttcore", "gspmd"],
)
def test_a_mesh_of_absurdly_many_devices_is_one_short_line(module):
    with pytest.raises(ModelLoadError, match=r"more than 4294967296 (devices|tiles)") as err:
        import_mlir(module, "m.mlir")
    assert "\n" not in str(err.value) and len(str(err.value)) < 400


def test_a_ttir_mesh_with_an_empty_axis_is_one_line():
    text = TTIR_OTHERS.replace("2x4", "0x4")
    with pytest.raises(ModelLoadError, match=r"^m\.mlir: mesh @mesh has an axis of size < 1$"):
        import_mlir(text, "m.mlir")


TTIR_OTHERS = """module attributes {ttcore.meshes = #ttcore.meshes<[<"mesh" = 2x4>]>} {
  func.func @forward(%arg0: tensor<8x64xf32>) -> tensor<8x4xf32> {
    %0 = "ttir.mesh_shard"(%arg0) <{shard_dims = array<i64: 0, 1>, shard_direction = #ttcore.shard_direction<full_to_shard>, shard_shape = array<i64: 2, 4>, shard_type = #ttcore.shard_type<devices>}> : (tensor<8x64xf32>) -> tensor<4x16xf32>
    %1 = "ttir.reduce_scatter"(%0) <{cluster_axis = 0 : ui32, reduce_type = #ttcore.reduce_type<sum>, scatter_dim = 1 : si32}> : (tensor<4x16xf32>) -> tensor<4x8xf32>
    %2 = "ttir.all_to_all"(%1) <{concat_dim = 0 : si32, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, split_count = 4 : si32, split_dim = 1 : si32}> : (tensor<4x8xf32>) -> tensor<16x2xf32>
    %3 = "ttir.collective_permute"(%2) <{source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<16x2xf32>) -> tensor<16x2xf32>
    %4 = "stablehlo.all_gather"(%3) <{all_gather_dim = 1 : i64, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>}> : (tensor<16x2xf32>) -> tensor<16x4xf32>
    %5 = "ttir.mesh_shard"(%4) <{shard_dims = array<i64: -1, 0>, shard_direction = #ttcore.shard_direction<shard_to_full>, shard_shape = array<i64: 4, 1>, shard_type = #ttcore.shard_type<devices>}> : (tensor<16x4xf32>) -> tensor<64x4xf32>
    %6 = "stablehlo.slice"(%5) <{limit_indices = array<i64: 8, 4>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<64x4xf32>) -> tensor<8x4xf32>
    return %6 : tensor<8x4xf32>
  }
}"""


def test_ttir_and_stablehlo_collectives_name_their_mesh_axes():
    _, normal = graph_level(TTIR_OTHERS)
    shard, scatter, a2a, permute, gather, full = normal.ops[:6]
    assert normal.tensors[shard.outputs[0]].sharding == Sharding((("axis_0",), ("axis_1",)))
    assert (scatter.kind, scatter.attrs["axes"], scatter.attrs["dim"], scatter.attrs["reduce"]) == (
        "reduce_scatter",
        ("axis_0",),
        1,
        "sum",
    )
    assert (a2a.kind, a2a.attrs["axes"], a2a.attrs["dim"], a2a.attrs["concat_dim"]) == ("all_to_all", ("axis_1",), 1, 0)
    assert (permute.kind, permute.attrs["axes"]) == ("collective_permute", ("axis_0", "axis_1"))
    assert (gather.kind, gather.attrs["axes"], gather.attrs["dim"]) == ("all_gather", ("axis_0",), 1)  # stride 4
    assert full.kind == "shard_to_full" and normal.tensors[full.outputs[0]].sharding == Sharding((("axis_1",), ()))
    local = normal.meta[LOCAL]
    assert {shard.outputs[0], scatter.outputs[0], gather.outputs[0]} <= local
    assert full.outputs[0] not in local and normal.ops[6].outputs[0] not in local


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (
            '%0 = "sdy.all_gather"(%arg0) : (tensor<16x8xf32>) -> tensor<16x8xf32>',
            "sdy.all_gather without its gathering_axes",
        ),
        ('%0 = "sdy.all_to_all"(%arg0) {params = "[]"} : (tensor<16x8xf32>) -> tensor<16x8xf32>', "moves no axes"),
        (
            '%0 = "sdy.manual_computation"(%arg0) ({\n    ^bb0(%a: tensor<16x8xf32>):\n      "sdy.return"() : () -> ()\n    }) {in_shardings = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>, manual_axes = "{}"} : (tensor<16x8xf32>) -> tensor<16x8xf32>',
            "one block taking each operand and returning each result",
        ),
    ],
)
def test_generic_form_sdy_ops_missing_their_parts_are_one_line(op, message):
    with pytest.raises(ModelLoadError, match=message) as err:
        import_mlir(sdy_module(f"    {op}\n    return %0 : tensor<16x8xf32>"), "m.mlir")
    assert "\n" not in str(err.value)
