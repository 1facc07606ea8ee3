"""Grouping a graph by name scope: few enough nodes to read, every op in exactly one node."""

from __future__ import annotations

import pytest

from tilescope.app.workbench.grouping import CHUNK, DEFAULT_BUDGET, GROUP, MAX_NODES, RUN_LENGTH, ScopeTree
from tilescope.app.workbench.parameter_scopes import module_path
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.frontend.model_refs import load_model


def _chain(names: list[str]) -> Graph:
    """Ops in a line, each reading the one before."""
    graph = Graph("chain", "graph", {"in": Tensor("in", (32, 32), "bf16")}, [], ["in"], [])
    previous = "in"
    for name in names:
        out = f"{name}.out"
        graph.tensors[out] = Tensor(out, (32, 32), "bf16")
        graph.ops.append(Op(name, "relu", [previous], [out]))
        previous = out
    graph.outputs.append(previous)
    return graph


def _compiled(path):
    return compile_model(load_model(str(path)), load_target("wormhole_n150"))


@pytest.fixture(scope="module")
def bert():
    return load_model("zoo:bert-base").graph


def test_the_default_view_of_a_large_model_fits_the_budget_and_holds_every_op_once(bert):
    tree = ScopeTree(bert)
    view = tree.view(tree.default_expansion())
    assert len(bert.ops) > 1000
    assert 20 < len(view.nodes) <= DEFAULT_BUDGET
    held = [op for node in view.nodes for op in node.ops]
    assert sorted(held) == sorted(op.name for op in bert.ops)
    assert all(view.node_of[op] == node.id for node in view.nodes for op in node.ops)


def test_edges_join_the_nodes_holding_producer_and_consumer_and_never_loop(bert):
    tree = ScopeTree(bert)
    view = tree.view([])  # everything closed: the top-level groups and ops
    ids = {n.id for n in view.nodes}
    assert all(e.src in ids and e.dst in ids and e.src != e.dst for e in view.edges)
    producer = {t: op.name for op in bert.ops for t in op.outputs}
    crossing = {
        (view.node_of[producer[t]], view.node_of[op.name])
        for op in bert.ops
        for t in op.inputs
        if t in producer and view.node_of[producer[t]] != view.node_of[op.name]
    }
    assert crossing == {(e.src, e.dst) for e in view.edges}


def test_opening_a_group_shows_its_children_labelled_relative_to_it(bert):
    tree = ScopeTree(bert)
    layers = GROUP + "encoder.layer"  # `encoder` alone holds nothing else, so it is skipped
    assert GROUP + "encoder" not in tree.members
    assert tree.children(None)[-1] == layers
    inner = tree.children(layers)
    assert len(inner) == 12 and tree.label(inner[3]) == "layer.3"
    view = tree.view([layers])
    assert {n.id for n in view.nodes} >= set(inner) and layers not in {n.id for n in view.nodes}


def test_a_scope_with_one_op_is_not_a_group():
    tree = ScopeTree(_chain(["a.x.only", "b.one", "b.two"]))
    assert tree.groups == [GROUP + "b"]
    assert tree.children(None) == ["a.x.only", GROUP + "b"]


def test_names_thousands_of_scopes_deep_group_without_recursing():
    deep = ".".join(f"s{i}" for i in range(5000))
    tree = ScopeTree(_chain([f"{deep}.a", f"{deep}.b", "top"]))
    assert tree.groups == [GROUP + deep]  # the only scope that adds something: its 4,999 parents hold the same ops
    assert tree.children(None) == [GROUP + deep, "top"]


def test_an_op_in_an_open_group_is_labelled_relative_to_it():
    tree = ScopeTree(_chain(["a.x.only", "b.one", "b.two", "b.3"]))
    labels = {n.id: n.label for n in tree.view([GROUP + "b"]).nodes}
    # outside any group an op keeps its name; a bare index keeps its parent's word
    assert labels == {"a.x.only": "a.x.only", "b.one": "one", "b.two": "two", "b.3": "b.3"}


def test_a_large_graph_without_scopes_folds_into_runs_of_consecutive_ops():
    names = [f"relu_{i}" for i in range(2 * RUN_LENGTH + 50)]
    tree = ScopeTree(_chain(names))
    assert len(tree.groups) == 3 and tree.label(tree.groups[0]) == f"ops 1-{RUN_LENGTH}"
    view = tree.view([])
    assert [len(n.ops) for n in view.nodes] == [RUN_LENGTH, RUN_LENGTH, 50]
    assert [(e.src, e.dst) for e in view.edges] == [(tree.groups[0], tree.groups[1]), (tree.groups[1], tree.groups[2])]
    assert ScopeTree(_chain(names[:RUN_LENGTH])).groups == []  # small enough to show as it is


def test_the_groups_that_fit_are_the_longest_start_of_those_opened(bert):
    """As closing the last opened one at a time would find them, in a few counts: a page may send
    every group of a model."""
    tree = ScopeTree(bert)
    everything = tree.groups
    fits = tree.fitting(everything, limit=150)
    assert fits == everything[: len(fits)] and 0 < len(fits) < len(everything)
    assert len(tree.view(fits).nodes) <= 150 < len(tree.view(everything[: len(fits) + 1]).nodes)
    assert tree.node_count(fits) == len(tree.view(fits).nodes)
    assert tree.fitting(everything[:3], limit=10_000) == everything[:3]  # what fits stays open
    assert tree.fitting(everything, limit=0) == []


def test_a_group_of_more_children_than_a_view_draws_opens_in_chunks_of_consecutive_children():
    # 250 layers of two ops each: `model.layer` holds 250 groups
    names = [f"model.layer.{i}.{op}" for i in range(250) for op in ("matmul", "add")]
    tree = ScopeTree(_chain(names))
    layer = GROUP + "model.layer"
    chunks = tree.children(layer)
    assert chunks == [f"{layer}[0-99]", f"{layer}[100-199]", f"{layer}[200-249]"]
    assert [tree.label(c) for c in chunks] == ["layer[0-99]", "layer[100-199]", "layer[200-249]"]
    assert len(tree.children(chunks[2])) == 50 and tree.label(tree.children(chunks[2])[0]) == "layer.200"
    # any op is reached by opening its chain, within the view's budget
    chain = tree.ancestors_of("model.layer.137.add")
    assert chain[-2:] == (f"{layer}[100-199]", GROUP + "model.layer.137")
    view = tree.view(chain)
    assert "model.layer.137.add" in {n.id for n in view.nodes} and len(view.nodes) <= MAX_NODES
    assert sorted(op for n in view.nodes for op in n.ops) == sorted(names)  # every op once


def test_thousands_of_runs_without_scopes_are_chunked_too():
    names = [f"relu_{i}" for i in range(RUN_LENGTH * CHUNK * 2)]  # 200 runs of RUN_LENGTH ops
    tree = ScopeTree(_chain(names))
    assert len(tree.children(None)) == 2 and tree.label(tree.children(None)[0]) == "[0-99]"
    assert len(tree.view(tree.ancestors_of(names[-1])).nodes) <= MAX_NODES


def _layers_without_scopes(count: int) -> Graph:
    """`count` layers of unscoped ops as an exporter names them: each a weight constant and its
    reshape, a matmul reading it, then a bias add and a relu; all the constants come first."""
    graph = Graph("flat", "graph", {"x": Tensor("x", (32, 32), "bf16")}, [], ["x"], [])

    def op(name: str, kind: str, inputs: list[str]) -> str:
        graph.tensors[name + ".out"] = Tensor(name + ".out", (32, 32), "bf16")
        graph.ops.append(Op(name, kind, inputs, [name + ".out"]))
        return name + ".out"

    weights = [op(f"constant_{i}", "constant", []) for i in range(count)]
    previous = "x"
    for i in range(count):
        w = op(f"reshape.{10 * i}", "reshape", [weights[i]])
        previous = op(f"dot.{10 * i + 1}", "matmul", [previous, w])
        previous = op(f"add.{10 * i + 2}", "add", [previous])
        previous = op(f"maximum.{10 * i + 3}", "relu", [previous])
    graph.outputs.append(previous)
    return graph


def test_xla_instruction_names_are_not_scopes():
    """`reshape.78` names the op's kind: grouping by it put every reshape of a model in one node."""
    tree = ScopeTree(_chain(["reshape.1", "reshape.2", "gather.82_permuteInput", "broadcast.90#1", "add.3"]))
    assert tree.groups == []
    assert ScopeTree(_chain(["layer.0.fc.matmul", "layer.0.fc.add"])).groups == [GROUP + "layer.0.fc"]
    # torch's nn.Sequential names its modules by index: scopes, though they look like instructions
    sequential = ScopeTree(_chain(["features.0", "features.1", "classifier.0", "classifier.1"]))
    assert sequential.groups == [GROUP + "features", GROUP + "classifier"]


def test_a_graph_without_scopes_is_grouped_by_dataflow_into_blocks_closed_by_its_matmuls():
    graph = _layers_without_scopes(20)  # 100 ops
    tree = ScopeTree(graph)
    top = tree.children(None)
    assert top == [f"{GROUP}dot.{10 * i + 1} block" for i in range(20)]  # in the order of the matmuls
    first = tree.members[top[0]]
    # a block holds what leads into its matmul: the weight's constant and reshape with it
    assert set(first) == {"constant_0", "reshape.0", "dot.1"}
    second = tree.members[top[1]]
    assert set(second) == {"constant_1", "reshape.10", "add.2", "maximum.3", "dot.11"}
    # what comes after the last matmul stays with it; every op in exactly one block
    assert {"add.192", "maximum.193"} <= set(tree.members[top[-1]])
    assert sorted(op for g in top for op in tree.members[g]) == sorted(op.name for op in graph.ops)
    view = tree.view([])
    assert [(e.src, e.dst) for e in view.edges] == list(zip(top, top[1:]))


def test_a_small_graph_without_scopes_or_one_without_matmuls_is_not_made_into_blocks():
    assert ScopeTree(_layers_without_scopes(5)).groups == []  # few enough ops to show as they are
    names = [f"relu_{i}" for i in range(2 * RUN_LENGTH)]
    assert ScopeTree(_chain(names)).label(ScopeTree(_chain(names)).groups[0]) == f"ops 1-{RUN_LENGTH}"


def test_parameters_name_the_modules_of_ops_named_by_kind():
    dynamo = "getattr_l__self___resnet_encoder_stages_0_layers_0_layer___2___normalization_running_var"
    assert module_path(dynamo) == "resnet.encoder.stages.0.layers.0.layer.2.normalization.running"
    assert module_path("l__self___classifier_1_weight") == "classifier.1"
    assert module_path("encoder.layer.0.output.LayerNorm.bias") == "encoder.layer.0.output.LayerNorm"
    assert module_path("model.layers.0.self_attn.v_proj.parametrizations.weight.original") == (
        "model.layers.0.self_attn.v_proj"
    )
    assert module_path("arg15_1") == module_path("args_0") == ""  # a name, not a path


def test_xla_resnet50_opens_as_its_modules_not_a_flat_chain(corpus):
    """Its ops are named by kind (`conv2d_16`, `maximum_3`) and its parameters by module: the
    graph level is boxes of stages and layers, each conv with its batch norm, each ReLU and
    residual add in the layer it ends."""
    graph = _compiled(corpus / "resnet50_xla.mlir").levels["graph"]
    tree = ScopeTree(graph)
    assert [tree.label(g) for g in tree.children(None)] == ["resnet", "classifier.1"]
    stages = GROUP + "resnet.encoder.stages"
    assert [tree.label(g) for g in tree.children(stages)] == [f"stages.{i}.layers" for i in range(4)]
    layers = tree.children(GROUP + "resnet.encoder.stages.1.layers")
    assert [tree.label(g).removesuffix(".layer") for g in layers] == [f"layers.{i}" for i in range(4)]  # 3, 4, 6, 3
    first = tree.members[layers[0]]
    kinds = sorted(graph.op(o).kind for o in first if graph.op(o).inputs)
    # a bottleneck with its shortcut: four convs and batch norms, three ReLUs, the residual add
    assert kinds == sorted(["conv2d"] * 4 + ["batchnorm"] * 4 + ["maximum"] * 3 + ["add"])
    view = tree.view(tree.default_expansion())
    assert len(view.nodes) <= DEFAULT_BUDGET and sum(n.is_group for n in view.nodes) >= 4


def test_real_exports_with_named_parameters_are_grouped_by_their_modules(corpus):
    graph = load_model(str(corpus / "bert_encoder_layer.mlir")).graph
    tree = ScopeTree(graph)
    assert [tree.label(g) for g in tree.children(None) if g in tree.members] == [
        "embeddings",
        "encoder.layer.0",
        "pooler",
    ]
    assert len(tree.view(tree.default_expansion()).nodes) <= DEFAULT_BUDGET


def test_blocks_keep_every_op_after_its_producers_with_constants_beside_their_readers(corpus):
    """The order the view lays out: a producer drawn right of its reader would lose the edge."""
    for name in ("llama_3_2_1b_prefill_layer", "bert_encoder_layer", "resnet50_xla"):
        graph = load_model(str(corpus / f"{name}.mlir")).graph
        tree = ScopeTree(graph)
        at = {op: i for i, op in enumerate(tree.order)}
        producer = {t: op.name for op in graph.ops for t in op.outputs}
        assert sorted(at) == sorted(op.name for op in graph.ops)
        assert all(at[producer[t]] < at[op.name] for op in graph.ops for t in op.inputs if t in producer), name
        first = next(op for op in graph.ops if not op.inputs)  # the exporter puts constants first
        reader = next(op.name for op in graph.ops if set(first.outputs) & set(op.inputs))
        # just before its reader: only other sources between them
        assert all(not graph.op(n).inputs for n in tree.order[at[first.name] : at[reader]]), name
