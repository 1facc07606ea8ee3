"""Printed levels are real MLIR: checked by walking what MLIR's own parser reads back."""

from __future__ import annotations

import pytest
from iree.compiler import ir

from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.frontend.mlir_import import import_mlir, new_context, parse_module
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.overrides import parse_item


def _walk(op):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _walk(inner.operation)


def _parsed(text):
    ctx = new_context()
    module = parse_module(text, "printed", ctx)
    return ctx, module


def _func(module):
    (func,) = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
    return func


def _top_ops(func):
    return [op.operation for op in func.regions[0].blocks[0].operations if op.operation.name != "func.return"]


@pytest.fixture(params=["mnist", "zoo:mlp", "tiny"])
def compiled(request, wormhole, tiny_path):
    ref = {"zoo:mlp": "zoo:mlp", "tiny": tiny_path}.get(request.param) or request.getfixturevalue("mnist_path")
    return compile_model(load_model(ref), wormhole)


def test_layout_level_types_all_carry_a_layout_encoding(compiled):
    ctx, module = _parsed(compiled.mlir("layout"))
    with ctx:
        func = _func(module)
        types = [arg.type for arg in func.regions[0].blocks[0].arguments]
        for op in _top_ops(func):
            types += [v.type for v in op.operands] + [r.type for r in op.results]
        assert len(types) > len(compiled.levels["layout"].ops)
        for t in types:
            encoding = ir.RankedTensorType(t).encoding
            assert encoding is not None and "#ts.layout<" in str(encoding), str(t)


def test_graph_level_types_have_no_encoding(compiled):
    text = compiled.mlir("graph")
    assert "#ts.layout" not in text
    parse_module(text, "graph")


def test_layout_encoding_spells_the_layout(compiled):
    text = compiled.mlir("layout")
    first = compiled.levels["layout"].ops[0]
    dtype = compiled.levels["layout"].tensors[first.outputs[0]].dtype
    assert f"#ts.layout<dram, interleaved, grid 8x8, {dtype}, tile 32x32>" in text


def test_kernel_level_has_cores_reads_compute_writes(compiled):
    ctx, module = _parsed(compiled.mlir("kernel"))
    kernel = compiled.kernel
    with ctx:
        tops = _top_ops(_func(module))
        assert len(tops) == len(kernel.ops)
        for printed, op in zip(tops, kernel.ops):
            assert printed.name == f"ts.{op.kind}"
            inner = list(_walk(printed))
            names = [o.name for o in inner]
            groups = [o for o in inner if o.name == "ts.cores"]
            assert len(groups) == len(op.meta[KERNEL].groups)
            assert names.count("ts.compute") == len(groups)
            assert "ts.read" in names and "ts.write" in names
            cores = sum(len(ir.DenseI64ArrayAttr(g.attributes["cores"])) // 2 for g in groups)
            assert cores == op.meta[KERNEL].cores_used
            read_bytes = sum(
                ir.IntegerAttr(o.attributes["bytes"]).value * len(ir.DenseI64ArrayAttr(g.attributes["cores"])) // 2
                for g in groups
                for o in _walk(g)
                if o.name == "ts.read"
            )
            expected = sum(round(t.bytes) * len(g.cores) for g in op.meta[KERNEL].groups for t in g.reads)
            assert read_bytes == expected


def test_provenance_and_loc_names(compiled):
    for level in ("graph", "layout", "kernel"):
        ctx, module = _parsed(compiled.mlir(level))
        with ctx:
            tops = _top_ops(_func(module))
            names = [op.location.name_str for op in tops]
            assert names == [op.name for op in compiled.levels[level].ops]
            for op, ours in zip(tops, compiled.levels[level].ops):
                sources = [ir.StringAttr(s).value for s in ir.ArrayAttr(op.attributes["ts.from"])]
                assert sources[0] == op.location.name_str  # a fused op keeps its producer's name
                assert sources == list(ours.source)


def test_function_arguments_keep_their_names(compiled):
    ctx, module = _parsed(compiled.mlir("graph"))
    with ctx:
        func = _func(module).opview
        names = [ir.StringAttr(ir.DictAttr(a)["ttir.name"]).value for a in func.arg_attrs]
    assert names == compiled.model.graph.inputs


def test_printed_graph_level_reimports_with_the_same_names(compiled):
    again = import_mlir(compiled.mlir("graph"), "printed.mlir").graph
    assert {op.name for op in again.ops} == {op.name for op in compiled.levels["graph"].ops}


def test_override_changes_the_layout_text_of_that_op(tiny_path, wormhole):
    model = load_model(tiny_path)
    plain = compile_model(model, wormhole).mlir("layout")
    tuned = compile_model(model, wormhole, CompileOptions([parse_item("matmul_0=1x4:l1:block_sharded")])).mlir("layout")

    def line_of(text, name):
        (line,) = [ln for ln in text.splitlines() if ln.rstrip().endswith(f'loc("{name}")')]
        return line

    assert line_of(plain, "matmul_0").endswith(
        '-> tensor<32x128xf32, #ts.layout<dram, interleaved, grid 8x8, f32, tile 32x32>> loc("matmul_0")'
    )
    assert line_of(tuned, "matmul_0").endswith(
        '-> tensor<32x128xf32, #ts.layout<l1, block_sharded, grid 1x4, f32, tile 32x32, addr 0x0>> loc("matmul_0")'
    )
    # the consumer sees the new operand type too
    assert "#ts.layout<l1, block_sharded" in line_of(tuned, "matmul_1")


def test_core_group_lines_are_written_as_mlir_prints_those_ops(tiny_path, wormhole):
    """The kernel level's ts.cores lines are spelled out directly (a million of them in a 100k-op
    model): each is exactly what MLIR itself prints for the op it parses, fidelity and single
    buffering included."""
    tuned = [parse_item("matmul_0=8x8:dram:interleaved:fidelity#hifi2:double_buffer#false")]
    text = compile_model(load_model(tiny_path), wormhole, CompileOptions(tuned)).mlir("kernel")
    ctx, module = _parsed(text)
    lines = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip().startswith(('"ts.read"', '"ts.cb"', '"ts.compute"', '"ts.write"'))
    ]
    lines += [ln.strip() for ln in text.splitlines() if ln.strip().startswith("}) {blocks")]
    assert any("fidelity = " in ln for ln in lines) and any("double_buffer = false" in ln for ln in lines)
    with ctx:
        printed = [str(o) for top in _top_ops(_func(module)) for o in _walk(top) if o.name != "ts.cores"]
        groups = [
            str(o).rsplit("})", 1)[1].strip()
            for top in _top_ops(_func(module))
            for o in _walk(top)
            if o.name == "ts.cores"
        ]
    assert sorted(ln for ln in lines if not ln.startswith("})")) == sorted(printed)
    assert sorted(ln.removeprefix("})").strip() for ln in lines if ln.startswith("})")) == sorted(groups)
