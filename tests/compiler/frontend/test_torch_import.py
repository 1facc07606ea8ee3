"""The PyTorch import: models written in plain torch imported at the `input` level, each op named
by its module path and located at its line of Python, compiled and simulated on every family of
target; every level prints as MLIR that parses again."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")

from tilescope.compiler.errors import ModelLoadError  # noqa: E402
from tilescope.compiler.frontend import torch_graph  # noqa: E402
from tilescope.compiler.frontend.mlir_import import import_mlir  # noqa: E402
from tilescope.compiler.frontend.torch_models import import_pt2, import_torch  # noqa: E402
from tilescope.compiler.ir.meta import CODE_LINE  # noqa: E402
from tilescope.compiler.pipeline.options import CompileOptions  # noqa: E402
from tilescope.compiler.pipeline.stages import compile_model  # noqa: E402
from tilescope.compiler.sim.simulator import simulate  # noqa: E402
from tilescope.compiler.targets.catalog import load_target  # noqa: E402

from tests.compiler.frontend import plain_torch  # noqa: E402

TARGETS = ("wormhole_n150", "blackhole_p150", "mtia_v1", "corsair")
FAMILIES = {
    "bert": (plain_torch.BertLayer, plain_torch.bert_inputs),
    "llama": (plain_torch.LlamaDecoderLayer, plain_torch.llama_inputs),
    "resnet": (plain_torch.Bottleneck, plain_torch.bottleneck_inputs),
}


@pytest.fixture(scope="module")
def imported() -> dict:
    torch.manual_seed(0)
    return {name: import_torch(make(), inputs(), "bf16") for name, (make, inputs) in FAMILIES.items()}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("target", TARGETS)
def test_each_family_compiles_and_simulates_on_every_target(imported, family, target):
    compiled = compile_model(imported[family], load_target(target), CompileOptions())
    sim = simulate(compiled.kernel, compiled.target, "trace")
    assert sim.total_ns > 0 and sim.ops
    for level in compiled.levels:  # each level parses again as MLIR
        import_mlir(compiled.mlir(level), f"{family}.{level}")


def test_the_families_keep_what_their_layers_compute(imported):
    kinds = {name: {op.kind for op in model.graph.ops} for name, model in imported.items()}
    assert {"ttir.dot_general", "ttir.softmax", "ttir.layer_norm", "ttir.gelu"} <= kinds["bert"]
    # attention kept whole, with its grouped KV heads and its causal mask
    assert "ttir.scaled_dot_product_attention" in kinds["llama"]
    (attention,) = [op for op in imported["llama"].graph.ops if op.kind.endswith("attention")]
    assert (attention.attrs["heads"], attention.attrs["kv_heads"]) == ("32 : i64", "8 : i64")
    assert attention.attrs["causal"] == "true"
    assert {"ttir.conv2d", "ttir.batch_norm_inference", "ttir.relu"} <= kinds["resnet"]


def test_each_op_is_named_by_its_module_path_and_located_at_its_line_of_python(imported):
    source = plain_torch.__file__
    for model in imported.values():
        for op in model.graph.ops:
            line = op.meta[CODE_LINE]
            assert line.file == source and line.code, op.name
    ops = {op.name: op for op in imported["bert"].graph.ops}
    query = ops["attention.query.linear"]
    assert query.meta[CODE_LINE].code.startswith("q, k, v = self.split(self.query(x)), ")
    assert "output_norm.layer_norm" in ops and "intermediate.linear" in ops
    names = [op.name for op in imported["resnet"].graph.ops]
    assert "conv2.conv2d" in names and "downsample.0.conv2d" in names


def test_activations_stay_channels_last_between_convolutions(imported):
    # one permute in (the block's input, shared by its conv and its shortcut), one out
    permutes = [op.name for op in imported["resnet"].graph.ops if op.kind == "ttir.permute"]
    assert len(permutes) == 2, permutes


def test_bert_layer_matches_the_zoo_s_within_ten_percent(imported):
    """The same encoder layer, from torch and from the zoo (built as tt-xla exports it), on the
    same shapes: the zoo model's embeddings and mask ops aside, their layers' device times."""
    target = load_target("wormhole_n150")
    torch_sim = _device_ns(imported["bert"], target)
    from tilescope.compiler.frontend.model_refs import load_model

    zoo = _device_ns(load_model("zoo:bert-base?layers=1&batch=8&seq=128"), target, "encoder.layer.0.")
    assert torch_sim == pytest.approx(zoo, rel=0.10)


def _device_ns(model, target, prefix: str = "") -> float:
    compiled = compile_model(model, target, CompileOptions())
    sim = simulate(compiled.kernel, compiled.target, "trace")
    return sum(op.duration_ns for op in sim.ops if op.name.startswith(prefix))


class _Cumsum(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=-1)


def test_an_op_the_import_lacks_is_one_line_naming_it_and_where_it_comes_from():
    with pytest.raises(ModelLoadError) as err:
        import_torch(_Cumsum(), (torch.randn(4, 32),))
    message = str(err.value)
    assert "\n" not in message and "aten.cumsum" in message
    assert "test_torch_import.py:" in message  # the line of Python that made it


def test_an_exported_program_saved_as_pt2_imports_as_the_module_does(tmp_path):
    model, inputs = plain_torch.Bottleneck(64, 32, 128, 1).eval(), plain_torch.bottleneck_inputs(1, 64, 14)
    path = tmp_path / "block.pt2"
    torch.export.save(torch.export.export(model, inputs), str(path))
    assert import_pt2(path).text == import_torch(model, inputs).text


def test_a_malformed_pt2_is_one_line(tmp_path):
    path = tmp_path / "bad.pt2"
    path.write_bytes(b"not a zip archive")
    with pytest.raises(ModelLoadError, match=r"bad\.pt2: not a torch\.export program") as err:
        import_pt2(path)
    assert "\n" not in str(err.value)


def test_a_program_over_the_import_s_size_is_one_line(monkeypatch):
    monkeypatch.setattr(torch_graph, "MAX_NODES", 10)
    with pytest.raises(ModelLoadError, match="nodes, over the 10 this import takes"):
        import_torch(plain_torch.BertLayer(64, 2, 128), plain_torch.bert_inputs(1, 32, 64))


def test_without_torch_a_torch_model_is_one_line_saying_to_install_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails, as where it is not installed
    with pytest.raises(ModelLoadError, match=r"pip install 'tilescope\[torch\]'"):
        import_pt2(tmp_path / "model.pt2")


class _Pooler(torch.nn.Module):
    """A BERT pooler's first token, a ReLU6, a mask of the positives and where it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = torch.nn.Linear(64, 64)

    def forward(self, x):
        first = torch.nn.functional.relu6(self.dense(x[:, 0]))
        return torch.where(first > 0.5, first, torch.zeros_like(first))


def test_selects_clamps_comparisons_and_where_import_as_their_ttir_ops():
    imported = import_torch(_Pooler(), (torch.randn(2, 16, 64),), "bf16")
    kinds = [op.kind for op in imported.graph.ops]
    assert {"ttir.slice_static", "ttir.clamp", "ttir.gt", "ttir.where"} <= set(kinds), kinds
    compiled = compile_model(imported, load_target("wormhole_n150"), CompileOptions())
    assert simulate(compiled.kernel, compiled.target, "trace").total_ns > 0


class _Transposed(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x.mT) + x.mT.to(torch.bfloat16).float()


def test_an_element_wise_op_of_a_transposed_view_permutes_it_once():
    imported = import_torch(_Transposed(), (torch.randn(2, 3, 4, 5),))
    permutes = [op for op in imported.graph.ops if op.kind == "ttir.permute"]
    assert len(permutes) == 1 and permutes[0].attrs["permutation"] == "array<i64: 0, 1, 3, 2>"
    assert not [op for op in imported.graph.ops if op.kind == "ttir.reshape"]
    (add,) = [op for op in imported.graph.ops if op.kind == "ttir.add"]
    assert imported.graph.tensors[add.outputs[0]].shape == (2, 3, 5, 4)


class _Compare(torch.nn.Module):
    def forward(self, x, y):
        return torch.where(x > y, x, y)


def test_a_comparison_compares_its_operands_in_their_own_type():
    imported = import_torch(_Compare(), (torch.randn(8, 32), torch.randn(8, 32)), "bf16")
    (gt,) = [op for op in imported.graph.ops if op.kind == "ttir.gt"]
    assert [imported.graph.tensors[t].dtype for t in gt.inputs] == ["bf16", "bf16"]
    assert imported.graph.tensors[gt.outputs[0]].dtype == "i1"
    assert not [op for op in imported.graph.ops if op.kind == "ttir.typecast"]


class _CeilPool(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.max_pool2d(x, 2, 2, ceil_mode=True)


class _Clamped(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=x.mean())


@pytest.mark.parametrize(
    ("module", "inputs", "said"),
    [
        (_CeilPool(), (torch.randn(1, 4, 7, 7),), "a max pool dilated or in ceil mode is not supported"),
        (torch.nn.BatchNorm2d(4, affine=False), (torch.randn(1, 4, 7, 7),), "a batch norm without its weight"),
        (_Clamped(), (torch.randn(4, 8),), "a clamp to tensor bounds is not supported"),
    ],
)
def test_what_a_rule_cannot_express_is_one_line(module, inputs, said):
    with pytest.raises(ModelLoadError) as err:
        import_torch(module, inputs)
    assert said in str(err.value) and "\n" not in str(err.value)
