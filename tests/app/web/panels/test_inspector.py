"""The op inspector and the form it fills."""

from __future__ import annotations

from tilescope.compiler.targets.catalog import load_target

from .conftest import FC1, shown_run


def test_inspector_shows_timings_and_fills_the_form_with_the_current_layout(cb):
    run_id = shown_run(cb)
    text = str(cb["inspect"](FC1, run_id, "graph"))
    assert FC1 in text and "duration" in text and "bound" in text
    # the time with the band its measurements fall within: matmul's held-out error on Wormhole
    band = load_target("wormhole_n150").error_band("matmul")
    assert "us +- " in text and f"matmul's held-out error: +-{band:.0%}" in text
    filled = cb["fill_form"](FC1, run_id)
    assert filled["form"] == {
        "memory": "dram",
        "memory_layout": "interleaved",
        "rows": 8,
        "cols": 8,
        "layout": "tile",
        "dtype": "bf16",
        "fidelity": "default",
        "applies_to": "output",
        "tile": "default",
        "block": "",
        "subblock": "",
        "inner_tiles": "",
        "double_buffer": "default",
        "sharding": "",  # the compiler's (and a run on one device has no sharding field)
        "fuse": "default",  # the graph's fusions as the compiler makes them
    }
    parts = ["output", "operand 0", "operand 1", "operand 2"]  # activation, weight, bias
    assert filled["applies_to_options"] == [{"label": p, "value": p} for p in parts]
    assert filled["apply_disabled"] is False and filled["stage_disabled"] is False
    nothing = cb["fill_form"](None, run_id)
    assert nothing["apply_disabled"] is True and nothing["stage_disabled"] is True
    assert cb["fill_form"](None, run_id, [f"{FC1}=8x8:l1:block_sharded"])["apply_disabled"] is False  # pending alone
    assert "Click an op" in str(cb["inspect"](None, run_id, "graph"))


def test_an_op_moved_to_load_time_shows_its_load_time(app, cb):
    from tilescope.app.workbench.load_time import duration_text
    from tests.perfdb.load_work import store_hoisted

    from .conftest import MODEL

    plain = shown_run(cb)
    run_id, sim = store_hoisted(app.explorer.sessions, {FC1}, ref=MODEL)
    (loaded,) = [op for op in sim.load_ops if op.name == FC1]
    text = str(cb["inspect"](FC1, run_id, "graph"))
    assert "once per model load (const-eval), not in each step" in text
    assert duration_text(loaded.duration_ns) in text and "start" not in text  # no place in the step
    assert "once per model load" not in str(cb["inspect"](FC1, plain, "graph"))


def test_the_inspector_shows_an_iree_programs_encodings_and_an_mmt4ds_inner_tiles():
    """IREE's dispatch-creation output of a matmul: at the graph level the matmul's operands carry
    their encodings; materialized for x86_avx512, the mmt4d says its inner tiles."""
    from pathlib import Path

    from iree.compiler import tools

    from tilescope.app.web.panels.inspector import inspector_children
    from tilescope.compiler.frontend.mlir_import import import_mlir
    from tilescope.compiler.pipeline.stages import compile_model

    source = Path(__file__).parents[3] / "compiler" / "frontend" / "iree_inputs" / "matmul.mlir"
    flags = ["--iree-opt-data-tiling", "--compile-to=dispatch-creation", *load_target("x86_avx512").iree_flags]
    text = tools.compile_str(source.read_text(), extra_args=flags).decode()
    compilation = compile_model(import_mlir(text, "mm.mlir"), load_target("x86_avx512"))
    graph_view = str(inspector_children(compilation, "graph", "dispatch_0.matmul_0", None))
    assert "#iree_encoding.encoding<operand_index = 0 : index, op_type = matmul" in graph_view
    layout_view = str(inspector_children(compilation, "layout", "dispatch_0.matmul_0", None))
    assert "mmt4d" in layout_view and "16x16x1" in layout_view and "tensor<8x512x16x1xf32" in layout_view
