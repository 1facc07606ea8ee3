"""MLIR text -> the `input` level, through MLIR's own parser; zoo models go the same way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tilescope.compiler.frontend import zoo
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.model_refs import count_ops, load_model, read_source

MNIST_ARGS = [
    "input_1",
    "linear_relu_stack.0.weight",
    "linear_relu_stack.0.bias",
    "linear_relu_stack.2.weight",
    "linear_relu_stack.2.bias",
    "linear_relu_stack.4.weight",
    "linear_relu_stack.4.bias",
]


def _shape(graph, tensor):
    t = graph.tensors[tensor]
    return t.shape, t.dtype


# --- mnist from the corpus ------------------------------------------------------------------------


def test_mnist_op_names_are_kind_counters(mnist_path):
    graph = load_model(mnist_path).graph
    assert [op.name for op in graph.ops] == [
        "matmul_0",
        "add_0",
        "relu_0",
        "matmul_1",
        "add_1",
        "relu_1",
        "matmul_2",
        "add_2",
    ]
    assert [op.kind for op in graph.ops] == ["ttir.matmul", "ttir.add", "ttir.relu"] * 2 + ["ttir.matmul", "ttir.add"]
    assert graph.level == "input"


def test_mnist_inputs_are_named_by_ttir_name(mnist_path):
    graph = load_model(mnist_path).graph
    assert graph.inputs == MNIST_ARGS
    assert _shape(graph, "input_1") == ((1, 784), "f32")
    assert _shape(graph, "linear_relu_stack.0.weight") == ((784, 512), "f32")
    assert _shape(graph, "linear_relu_stack.4.weight") == ((512, 10), "f32")
    assert _shape(graph, "linear_relu_stack.4.bias") == ((1, 10), "f32")


def test_mnist_op_shapes_and_wiring(mnist_path):
    graph = load_model(mnist_path).graph
    assert _shape(graph, "matmul_0") == ((1, 512), "f32")
    assert _shape(graph, "relu_1") == ((1, 512), "f32")
    assert _shape(graph, "matmul_2") == ((1, 10), "f32")
    assert _shape(graph, "add_2") == ((1, 10), "f32")
    assert graph.op("matmul_0").inputs == ["input_1", "linear_relu_stack.0.weight"]
    assert graph.op("add_0").inputs == ["matmul_0", "linear_relu_stack.0.bias"]
    assert graph.op("matmul_1").inputs == ["relu_0", "linear_relu_stack.2.weight"]
    assert graph.op("add_2").outputs == ["add_2"]


def test_mnist_output_is_the_returned_value(mnist_path):
    model = load_model(mnist_path)
    assert model.graph.outputs == ["add_2"]
    assert model.name == "mnist"


def test_names_are_stable_across_imports(mnist_path):
    text = Path(mnist_path).read_text()
    first = import_mlir(text, "a.mlir").graph
    second = import_mlir(text, "b.mlir").graph
    assert [op.name for op in first.ops] == [op.name for op in second.ops]
    assert list(first.tensors) == list(second.tensors)


# --- bundled examples -----------------------------------------------------------------------------


def test_tiny_model_imports(tiny_path):
    graph = load_model(tiny_path).graph
    assert [op.name for op in graph.ops] == ["matmul_0", "add_0", "relu_0", "matmul_1"]
    assert graph.inputs == ["x", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert graph.outputs == ["matmul_1"]
    assert _shape(graph, "add_0") == ((32, 128), "f32")


def test_loc_names_are_taken_and_duplicates_stay_distinct():
    graph = load_model(str(Path(__file__).parents[1] / "data" / "named_dps.mlir")).graph
    names = [op.name for op in graph.ops if op.kind != "tensor.empty"]
    assert names[0] == "block.0.add"
    assert names[1] != "block.0.add" and names[1].startswith("block.0.add")
    assert len(set(names)) == len(names)
    # the second add reads the first one's result, by its (distinct) name
    assert graph.op(names[1]).inputs[0] == "block.0.add"
    assert "block.0.act" in names
    # an unnamed op still gets a <kind>_<n> name
    assert "frobnicate_0" in names


def test_unnamed_counter_skips_a_name_taken_by_a_loc():
    text = """
func.func @forward(%a: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %0 = "ttir.relu"(%a) : (tensor<32x32xf32>) -> tensor<32x32xf32> loc("relu_0")
  %1 = "ttir.relu"(%0) : (tensor<32x32xf32>) -> tensor<32x32xf32>
  return %1 : tensor<32x32xf32>
}
"""
    graph = import_mlir(text, "t.mlir").graph
    assert [op.name for op in graph.ops] == ["relu_0", "relu_1"]
    assert graph.inputs == ["arg0"]  # no ttir.name: positional name


def test_op_attributes_are_imported():
    text = """
func.func @forward(%a: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %0 = "ttir.softmax"(%a) {dimension = 1 : si32} : (tensor<32x64xf32>) -> tensor<32x64xf32>
  return %0 : tensor<32x64xf32>
}
"""
    graph = import_mlir(text, "t.mlir").graph
    assert graph.op("softmax_0").attrs["dimension"] == "1 : si32"


def test_corpus_model_with_op_attributes_imports(corpus):
    graph = load_model(str(corpus / "llama_attention.mlir")).graph
    assert any(op.attrs for op in graph.ops)


# --- errors ---------------------------------------------------------------------------------------


def test_unparsable_mlir_names_line_and_column(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @forward(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %b : tensor<2xf32>\n}\n")
    with pytest.raises(ModelLoadError) as err:
        load_model(str(path))
    message = str(err.value)
    assert f"{path}:2:10:" in message
    assert "undeclared" in message
    assert "\n" not in message


def test_truncated_mlir_names_line_and_column():
    text = (
        "func.func @forward(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        '  %0 = "ttir.relu"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n'
        "  return %0 : tensor<2xf32>\n"
    )
    with pytest.raises(ModelLoadError, match=r"^x\.mlir:\d+:\d+: "):
        import_mlir(text, "x.mlir")


def test_module_without_function_is_an_error():
    with pytest.raises(ModelLoadError, match="no func.func"):
        import_mlir("module {}", "empty.mlir")


def test_missing_file(tmp_path):
    with pytest.raises(ModelLoadError, match="no such file"):
        load_model(str(tmp_path / "nope.mlir"))


def test_directory_is_not_a_model(tmp_path):
    with pytest.raises(ModelLoadError, match="is a directory"):
        load_model(str(tmp_path))


def test_binary_file_is_not_a_model(tmp_path):
    path = tmp_path / "blob.mlir"
    path.write_bytes(b"\xff\xfe\x00\x81" * 10)
    with pytest.raises(ModelLoadError, match="not a text file"):
        load_model(str(path))


# --- zoo ------------------------------------------------------------------------------------------


def test_zoo_mlp_has_hierarchical_names():
    model = load_model("zoo:mlp")
    names = [op.name for op in model.graph.ops]
    assert names[:5] == [
        "mlp.layer.0.fc1.matmul",
        "mlp.layer.0.fc1.bias_add",
        "mlp.layer.0.gelu",
        "mlp.layer.0.fc2.matmul",
        "mlp.layer.0.fc2.bias_add",
    ]
    assert len(names) == 10  # 2 layers by default
    assert model.graph.inputs[:3] == ["input", "mlp.layer.0.fc1.weight", "mlp.layer.0.fc1.bias"]
    assert _shape(model.graph, "mlp.layer.0.fc1.matmul") == ((128, 4096), "bf16")
    assert _shape(model.graph, "mlp.layer.1.fc2.bias_add") == ((128, 1024), "bf16")
    assert model.graph.outputs == ["mlp.layer.1.fc2.bias_add"]
    assert model.name == "zoo:mlp"


def test_zoo_mlp_parameters():
    graph = load_model("zoo:mlp?batch=64&hidden=2048&layers=3&dtype=f32").graph
    assert len(graph.ops) == 15
    assert _shape(graph, "mlp.layer.2.fc1.matmul") == ((64, 2048), "f32")


def test_zoo_matmul():
    graph = load_model("zoo:matmul:64x128x256").graph
    assert len(graph.ops) == 1
    (op,) = graph.ops
    assert op.kind == "ttir.matmul"
    assert _shape(graph, op.outputs[0]) == ((64, 256), "bf16")
    assert _shape(graph, graph.inputs[0]) == ((64, 128), "bf16")
    assert _shape(graph, graph.inputs[1]) == ((128, 256), "bf16")


def test_zoo_names_all_load():
    for ref in zoo.names():
        assert load_model(ref).graph.ops


@pytest.mark.parametrize(
    "ref", [*zoo.names(), "zoo:resnet50?layers=101", "zoo:mlp?layers=7", "ffn.mlir", "classifier.mlir"]
)
def test_ops_are_counted_as_the_import_finds_them(ref):
    """The count a server checks against its limit before importing is the import's own."""
    assert count_ops(ref, read_source(ref)) == len(load_model(ref).graph.ops)


def test_ops_of_the_function_picked_by_name_are_counted():
    text = """module {
  func.func @small(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "ttir.abs"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @big(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "ttir.abs"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "ttir.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = "ttir.exp"(%1) : (tensor<4xf32>) -> tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
"""
    assert count_ops("two.mlir#big", text) == len(load_model("two.mlir#big", text).graph.ops) == 3
    assert count_ops("two.mlir#small", text) == 1


def test_unknown_zoo_model():
    with pytest.raises(ModelLoadError, match=r"unknown zoo model 'zoo:resnet'.*zoo:mlp"):
        load_model("zoo:resnet")


@pytest.mark.parametrize(
    "ref, fragment",
    [
        ("zoo:mlp?layers=0", "layers must be a positive integer"),
        ("zoo:mlp?batch=abc", "batch must be a positive integer"),
        ("zoo:mlp?colour=red", "unknown parameter 'colour'"),
        ("zoo:matmul:64x128", "MxKxN"),
        ("zoo:matmul:0x2x3", "MxKxN"),
        ("zoo:matmul:axbxc", "MxKxN"),
    ],
)
def test_bad_zoo_parameters(ref, fragment):
    with pytest.raises(ModelLoadError, match=re.escape(fragment)):
        load_model(ref)


def test_bad_zoo_matmul_parameter_is_a_model_error():
    with pytest.raises(ModelLoadError, match="colour"):
        load_model("zoo:matmul:64x64x64?colour=red")


def test_shipped_example_loads_by_file_name():
    from tilescope.compiler.frontend.model_refs import example_names

    assert "classifier.mlir" in example_names()
    graph = load_model("classifier.mlir").graph
    assert [op.name for op in graph.ops] == ["matmul_0", "add_0", "relu_0", "matmul_1", "head.logits", "head.probs"]
    assert graph.inputs[0] == "features"
    assert _shape(graph, "head.probs") == ((32, 1000), "bf16")


def test_shipped_ffn_example_names_every_op_by_its_loc():
    graph = load_model("ffn.mlir").graph
    assert [op.name for op in graph.ops] == [
        "ffn.fc1",
        "ffn.fc1.bias_add",
        "ffn.act",
        "ffn.fc2",
        "ffn.fc2.bias_add",
        "ffn.residual",
        "ffn.norm",
    ]
    assert _shape(graph, "ffn.norm") == ((256, 1024), "bf16")


def test_a_parse_error_quoting_a_deep_type_is_one_short_line():
    """The parser's message spells out what it read: a type nested 200 deep, cut (found by the fuzzer)."""
    nested = "tuple<" * 200 + ">" * 200
    text = (
        "module { func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        f"  %0 = stablehlo.dot_general %a, %a, contracting_dims = [0] x [0] : {nested}\n"
        "  return %0 : tensor<4xf32> } }"
    )
    with pytest.raises(ModelLoadError) as err:
        import_mlir(text, "deep.mlir")
    message = str(err.value)
    assert message.startswith("deep.mlir:2:") and message.endswith("...") and len(message) < 500
    assert "\n" not in message
