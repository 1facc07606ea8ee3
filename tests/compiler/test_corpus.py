"""Every real model of the corpus loads, compiles and prints at every level; facts checked by hand
against the files (op counts per kind, names, shapes, attributes)."""

from __future__ import annotations

from collections import Counter

import pytest

from tilescope.compiler.ir.meta import DIAGNOSTICS, KERNEL, L1_PEAK, MESH
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import LEVELS
from tilescope.compiler.frontend.mlir_import import import_mlir, parse_module, strip_unparsable
from tilescope.compiler.frontend.mlir_text import make_parsable
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.ir.opset import EXCHANGES
from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.analysis.matrix_dims import gemm_dims
from tilescope.compiler.sim.flops import flops
from tilescope.compiler.sim.simulator import simulate

CORPUS_OPS = {  # file -> ops in the entry function (counted with grep on '= "ttir.' and friends)
    "mnist.mlir": 8,
    "llama_attention.mlir": 58,
    "resnet50_xla.mlir": 676,
    "bert_encoder_layer.mlir": 197,
    "llama_3_2_1b_prefill_layer.mlir": 290,
    "llama_3_2_1b_decode_layer.mlir": 151,
    "gather_op.mlir": 1,
    "sdy_autoencoder_linear.mlir": 97,
}
ZOO = [
    "zoo:mlp",
    "zoo:bert-base?layers=2",
    "zoo:llama-3.2-1b?layers=2",
    "zoo:llama-3.2-1b?mode=decode&layers=2",
    "zoo:resnet50",
]


@pytest.fixture(scope="module")
def compiled(corpus, wormhole):
    return {name: compile_model(load_model(str(corpus / name)), wormhole) for name in CORPUS_OPS}


def test_every_corpus_file_is_in_the_table(corpus):
    assert sorted(p.name for p in corpus.glob("*.mlir")) == sorted(CORPUS_OPS)


@pytest.mark.parametrize("name", sorted(CORPUS_OPS))
def test_corpus_file_loads_with_every_op(compiled, name):
    graph = compiled[name].model.graph
    assert len(graph.ops) == CORPUS_OPS[name]
    assert len({op.name for op in graph.ops}) == len(graph.ops)  # names are unique
    # nothing falls out of the vocabulary: no opaque op in the corpus
    assert all(op.kind != opset.OPAQUE for op in compiled[name].levels["graph"].ops)


def test_wrappers_become_warnings_and_meshes_are_read(compiled):
    assert "unwrapped ttcore.device_module" in " ".join(compiled["bert_encoder_layer.mlir"].warnings)
    sdy = compiled["sdy_autoencoder_linear.mlir"]
    assert sdy.model.graph.meta[MESH].devices == 2  # the mesh is read, not dropped
    assert sdy.levels["graph"].meta[MESH] == sdy.model.graph.meta[MESH]
    assert sdy.levels["kernel"].meta[MESH].devices == 1  # a single chip runs it whole, and says so
    assert "runs whole on wormhole_n150's one device" in " ".join(sdy.warnings)
    gather = compiled["gather_op.mlir"]
    assert "showing @gather_0" in " ".join(gather.warnings)
    assert gather.model.graph.ops[0].kind == "stablehlo.gather"


def test_the_sharded_autoencoder_on_two_chips_gathers_its_batch_and_every_level_parses(corpus):
    """sdy_autoencoder_linear.mlir declares a 1x2 mesh ("model"=1, "batch"=2) and no shardings
    (tt-mlir's automatic argument analysis chooses them): the batch is split over the two chips,
    every op runs on half of it, and the result is gathered whole."""
    compilation = compile_model(load_model(str(corpus / "sdy_autoencoder_linear.mlir")), load_target("wormhole_n300"))
    partition = compilation.levels["partition"]
    image = partition.inputs[-1]
    assert partition.tensors[image].shape == (16, 1, 1, 784)  # 32 images, 16 per chip
    collectives = [op for op in partition.ops if op.kind in EXCHANGES]
    assert [(op.kind, op.attrs["axes"], op.attrs["dim"]) for op in collectives] == [("all_gather", ("batch",), 0)]
    assert partition.outputs == collectives[0].outputs
    for level in LEVELS:  # MLIR's parser reads every level back (the input as the importer reads it)
        text = compilation.mlir(level)
        parse_module(make_parsable(text)[0] if level == "input" else text, level)
    sim = simulate(compilation.kernel, compilation.target, "trace")
    gather = next(o for o in sim.ops if o.kind == "all_gather")
    assert gather.bytes["link"] == 32 * 784 * 2 / 2  # each chip sends its half of the bf16 result


def test_a_function_is_picked_by_name(corpus):
    graph = load_model(f"{corpus}/gather_op.mlir#gather_3").graph
    assert graph.tensors[graph.outputs[0]].shape == (38809, 12)  # @gather_3's result type


def test_llama_attention_facts(compiled):
    c = compiled["llama_attention.mlir"]
    graph = c.model.graph
    kinds = Counter(op.kind.removeprefix("ttir.") for op in graph.ops)
    assert kinds == {
        "transpose": 16,
        "matmul": 11,
        "multiply": 7,
        "unsqueeze": 6,
        "squeeze": 5,
        "reshape": 4,
        "concat": 3,
        "add": 3,
        "cos": 1,
        "sin": 1,
        "softmax": 1,
    }
    # the only function is the entry even though it is named neither main nor forward
    assert graph.inputs == [f"arg{i}" for i in range(15)]
    q = graph.op("matmul_0")
    assert q.inputs == ["squeeze_0", "arg11"]
    assert graph.tensors["matmul_0"].shape == (12, 3200) and graph.tensors["arg11"].shape == (3200, 3200)
    softmax = graph.op("softmax_0")
    assert softmax.attrs["dimension"] == "-1 : si32"
    assert graph.tensors["softmax_0"].shape == (1, 32, 12, 12)
    assert graph.tensors[graph.outputs[0]].shape == (1, 12, 3200)
    assert flops(c.levels["graph"], c.levels["graph"].op("matmul_0")) == 2 * 12 * 3200 * 3200


def test_resnet50_facts(compiled):
    c = compiled["resnet50_xla.mlir"]
    graph = c.model.graph
    kinds = Counter(op.kind.removeprefix("ttir.") for op in graph.ops)
    assert (kinds["reshape"], kinds["permute"], kinds["conv2d"], kinds["batch_norm_inference"], kinds["maximum"]) == (
        429,
        56,
        53,
        53,
        49,
    )
    pool = graph.op("max_pool2d_0")
    assert pool.attrs["kernel"] == "array<i32: 3, 3>" and pool.attrs["stride"] == "array<i32: 2, 2>"
    assert graph.tensors["max_pool2d_0"].shape == (8, 56, 56, 64)
    assert graph.tensors["sum_0"].shape == (8, 2048)
    assert graph.tensors[graph.outputs[0]].shape == (8, 1000)
    fc = c.levels["graph"].op("dot_general_0")
    assert fc.kind == "matmul" and gemm_dims(c.levels["graph"], fc) == (8, 2048, 1000)
    # the stem convolution: 8x3x224x224 input, 64x3x7x7 weights, stride 2 -> 8x64x112x112
    stem = c.levels["graph"].op("conv2d_0")
    assert gemm_dims(c.levels["graph"], stem) == (8 * 112 * 112, 3 * 7 * 7, 64)
    assert stem.attrs["stride"] == "array<i32: 2, 2>"


@pytest.mark.parametrize("level", LEVELS)
def test_every_level_of_every_corpus_file_reparses(compiled, level):
    for name, c in compiled.items():
        # the input level is the file as written: it reparses the way it was first read, with
        # custom-syntax wrappers of unregistered dialects blanked out
        text = strip_unparsable(c.mlir(level))[0] if level == "input" else c.mlir(level)
        assert "func.func" in str(parse_module(text, f"{name}:{level}"))
        # and reading it back gives the level's ops, by name
        again = import_mlir(c.mlir(level), f"{name}:{level}", function=c.model.graph.name.partition("#")[2] or None)
        expected = c.graph_at(level).ops
        assert [op.name for op in again.graph.ops] == [op.name for op in expected], (name, level)


@pytest.mark.parametrize("ref", ZOO)
def test_every_level_of_zoo_models_reparses_and_simulates(ref, wormhole):
    c = compile_model(load_model(ref), wormhole)
    for level in LEVELS:
        parse_module(c.mlir(level), f"{ref}:{level}")  # zoo text needs no unwrapping
    sim = simulate(c.kernel, wormhole)
    # every op with a kernel is timed once: in the step, or at load when it works on weights only
    assert len(sim.ops) + len(sim.load_ops) == sum(1 for op in c.kernel.ops if op.meta[KERNEL] is not None)
    assert {t.name for t in sim.load_ops} == {
        op.name for op in c.kernel.ops if op.attrs.get("const_eval") and op.meta[KERNEL]
    }
    assert all(o.duration_ns >= o.roofline_ns * (1 - 1e-9) for o in sim.ops)


@pytest.mark.parametrize("ref", ["zoo:llama-3.2-1b?mode=decode&layers=2", "zoo:bert-large?layers=2"])
def test_every_level_reparses_under_the_optimizer_policy(ref, wormhole):
    c = compile_model(load_model(ref), wormhole, CompileOptions(policy="optimizer"))
    for level in LEVELS:
        again = import_mlir(c.mlir(level), f"{ref}:{level}")
        assert [op.name for op in again.graph.ops] == [op.name for op in c.graph_at(level).ops], level
    assert "bfp8" in c.mlir("layout")  # the weights the policy stores in block floating point


def test_greedy_l1_fits_and_speeds_up_resnet(compiled, corpus, wormhole):
    greedy = compile_model(load_model(str(corpus / "resnet50_xla.mlir")), wormhole, CompileOptions(policy="greedy-l1"))
    assert greedy.levels["kernel"].meta[DIAGNOSTICS] == []
    assert greedy.levels["layout"].meta[L1_PEAK].bytes <= 0.8 * wormhole.core_memory.capacity_bytes
    base = simulate(compiled["resnet50_xla.mlir"].kernel, wormhole, "trace")
    tuned = simulate(greedy.kernel, wormhole, "trace")
    assert tuned.device_ns < base.device_ns
