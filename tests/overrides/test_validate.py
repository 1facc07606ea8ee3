"""check_op_names: every override names an op of the graph; the error suggests close names. validate and
check_overrides: every problem of a batch at once."""

from __future__ import annotations

import pytest

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.overrides import check_op_names, parse_item


def test_known_names_pass_and_one_unknown_name_fails_the_batch(model_file):
    path, names = model_file
    graph = load_model(path).graph
    known = [parse_item(f"{name}=l1") for name in names]
    assert check_op_names(known, graph) is None
    assert check_op_names([], graph) is None
    with pytest.raises(OverrideError, match="'nope=l1': no such op"):
        check_op_names([*known, parse_item("nope=l1")], graph)


def test_typo_suggests_the_right_name(model_file):
    path, _ = model_file
    graph = load_model(path).graph
    with pytest.raises(OverrideError) as err:
        check_op_names([parse_item("matmul_l=2x2")], graph)
    message = str(err.value)
    assert "override 'matmul_l=2x2': no such op in" in message
    assert "did you mean" in message and "matmul_1" in message
    assert "override 'matmul_l=2x2'" in message
    assert graph.name in message


def test_far_off_name_has_no_suggestion(tiny_path):
    graph = load_model(tiny_path).graph
    with pytest.raises(OverrideError) as err:
        check_op_names([parse_item("zzzzzzzz=l1")], graph)
    assert "did you mean" not in str(err.value)


def test_first_bad_override_is_reported(tiny_path):
    graph = load_model(tiny_path).graph
    items = [parse_item("matmul_0=l1"), parse_item("relu_9=l1"), parse_item("nope=l1")]
    with pytest.raises(OverrideError, match="relu_9"):
        check_op_names(items, graph)


def test_hierarchical_names(wormhole):
    graph = load_model("zoo:mlp").graph
    check_op_names([parse_item("mlp.layer.1.gelu=l1")], graph)
    with pytest.raises(OverrideError, match=r"mlp\.layer\.1\.gelu"):
        check_op_names([parse_item("mlp.layer.1.gelux=l1")], graph)


# --- batch validation ------------------------------------------------------------------------------

BAD_FILE = (
    "override-output-layout=mlp.layer.0.fc1.matmul=8x8:l1:block_sharded,mlp.layer.0.fc2.matmul=9x9,nope=l1,"
    "mlp.layer.1.gelu=zz,mlp.layer.0.fc2.matmul=bf16,mlp.layer.0.fc1.matmul=operand#1:fidelity#lofi,"
    "mlp.layer.1.fc1.matmul=4x8:l1:block_sharded\n"
    "tensor-l1-usage-cap=2\n"
)


def test_validate_lists_every_problem_of_a_file_at_once(wormhole):
    from tilescope.overrides import validate
    from tilescope.overrides.formats import parse_text

    errors: list[str] = []
    loaded = parse_text(BAD_FILE, "o.txt", errors)
    report = validate(CompileOptions(loaded.items), load_model("zoo:mlp"), wormhole, problems=errors)
    assert not report.ok
    assert report.problems == [
        "override 'mlp.layer.1.gelu=zz': unknown token 'zz' (expected " + report.problems[0].split("(expected ")[1],
        "override 'mlp.layer.0.fc1.matmul=operand#1:fidelity#lofi': fidelity# applies to the op, not to one operand",
        "tensor-l1-usage-cap=2: L1 usage cap must be in (0, 1], got 2",
        "override for 'mlp.layer.0.fc2.matmul' given twice; give each op one override",
        "override 'nope=l1': no such op in zoo:mlp",
        "override 'mlp.layer.0.fc1.matmul=8x8:l1:block_sharded' rejected: block_sharded over 8x8 cores needs a "
        "shard on each core, more than the result has (4x128 tiles of 32x32); grids that would: 4x8, 4x7, 3x8, "
        "4x6, 3x7, 4x5",
        "override 'mlp.layer.0.fc2.matmul=9x9' rejected: grid 9x9 outside wormhole_n150's 8x8 grid",
    ]
    # the good one still compiles and is reported
    assert [(o.op, o.status) for o in report.outcomes if o.status == "applied"] == [
        ("mlp.layer.1.fc1.matmul", "applied")
    ]


def test_a_clean_batch_validates(wormhole):
    from tilescope.overrides import validate

    options = CompileOptions([parse_item("mlp.layer.1.fc1.matmul=4x8:l1:block_sharded")])
    report = validate(options, load_model("zoo:mlp"), wormhole)
    assert report.ok and report.as_dict()["overrides"][0]["status"] == "applied"


def test_uneven_shards_validate_as_ttnn_takes_them(wormhole):
    from tilescope.overrides import validate

    # 4x128 output tiles: 3 rows of cores hold 2, 1 and 1 tile rows; 48 columns over 3x8 cores
    items = ["mlp.layer.0.fc1.matmul=3x8:l1:block_sharded", "mlp.layer.1.fc1.matmul=3x1:l1:height_sharded"]
    report = validate(CompileOptions([parse_item(i) for i in items]), load_model("zoo:mlp"), wormhole)
    assert report.ok, report.problems
    assert [o["status"] for o in report.as_dict()["overrides"]] == ["applied", "applied"]


def test_json_file_problems_are_all_reported():
    import json

    from tilescope.overrides.formats import parse_text

    data = {
        "version": 1,
        "l1_usage_cap": 3,
        "overrides": [
            {"op": "a", "grid": [0, 2]},
            {"op": "b", "memory": "l1"},
            {"op": "c", "fidelity": "max"},
            {"op": "d", "operand": 1, "block": [1, 1, 1]},
        ],
    }
    errors: list[str] = []
    loaded = parse_text(json.dumps(data), "o.json", errors)
    assert [o.op for o in loaded.items] == ["b"]
    assert loaded.l1_usage_cap is None  # globals of an invalid file are not used
    assert len(errors) == 4, errors
    assert any("overrides/0/grid/0" in e for e in errors) and any("overrides/2/fidelity" in e for e in errors)
    assert any("l1_usage_cap" in e for e in errors)
    assert any("block# applies to the op, not to one operand" in e for e in errors)


# --- checking a re-run's overrides against a compiled model ----------------------------------------

MLP = "zoo:mlp?layers=1"
FC1, FC2 = "mlp.layer.0.fc1.matmul", "mlp.layer.0.fc2.matmul"  # fc1 has the bias add and gelu fused in


def _compiled(target: str):
    from tilescope.compiler.pipeline.stages import compile_model
    from tilescope.compiler.targets.catalog import load_target

    return compile_model(load_model(MLP), load_target(target))


def test_check_overrides_names_every_impossible_override_in_order(wormhole):
    from tilescope.overrides import check_overrides

    items = [
        "no.such.op=l1",
        f"{FC2}=9x9",
        "mlp.layer.0.gelu=8x8:dram:interleaved",  # fused into fc1: applied there
        f"{FC1}=1x1:l1:interleaved:f32",
        f"{FC2}=operand#5:l1",
        f"{FC2}=4x4:dram:interleaved:fidelity#lofi",
    ]
    problems = check_overrides(CompileOptions([parse_item(i) for i in items]), _compiled("wormhole_n150"))
    assert problems.count == 4 and problems.more == 0
    assert problems.lines == [
        f"override 'no.such.op=l1': no such op in {MLP}",
        f"override '{FC2}=9x9' rejected: grid 9x9 outside wormhole_n150's 8x8 grid",
        f"override '{FC1}=1x1:l1:interleaved:f32' rejected: the result needs 2048 KiB per core in l1, "
        "1464 KiB available",
        f"override '{FC2}=operand#5:l1' rejected: the op has 3 operand(s); operand#5 is not one",
    ]


def test_check_overrides_knows_what_a_target_lacks():
    from tilescope.overrides import check_overrides

    items = [f"{FC1}=fidelity#lofi", f"{FC1}=result#0:tile#16x32", f"{FC2}=bfp8", f"{FC2}=result#0:lls:interleaved"]
    problems = check_overrides(CompileOptions([parse_item(i) for i in items]), _compiled("mtia_v1"))
    assert problems.lines == [
        f"override '{FC1}=fidelity#lofi' rejected: mtia_v1 has no math fidelity setting "
        "(its engine costs the same at each)",
        f"override '{FC1}=result#0:tile#16x32' rejected: tile 16x32 not supported on mtia_v1; tiles: 32x32",
        f"override '{FC2}=bfp8' rejected: mtia_v1 cannot compute in bfp8 (its matrix engine takes bf16, f16, i8)",
    ]


def test_check_overrides_rejects_what_a_compile_rejects(wormhole):
    """The check is the layout pass's: a compile with the same overrides rejects the same ones."""
    from tilescope.compiler.pipeline.stages import compile_model
    from tilescope.overrides import check_overrides
    from tilescope.overrides.validate import rejection

    items = [
        parse_item(i)
        for i in (f"{FC1}=8x8:l1:block_sharded", f"{FC2}=2x2:l1:height_sharded", f"{FC1}=block#3x1x1", f"{FC2}=9x1")
    ]
    compiled = compile_model(load_model(MLP), wormhole, CompileOptions(items))
    rejected = [rejection(o) for o in compiled.override_outcomes if o.status == "rejected"]
    assert len(rejected) == 3
    assert check_overrides(CompileOptions(items), _compiled("wormhole_n150")).lines == rejected


def test_check_overrides_counts_a_huge_batch_and_describes_one_page(monkeypatch):
    """100,000 overrides are each checked once; only the page of lines shown searches for close names."""
    import difflib

    from tilescope.overrides import check_overrides
    from tilescope.overrides.validate import SHOWN_PROBLEMS

    searches = []
    close_matches = difflib.get_close_matches
    monkeypatch.setattr(difflib, "get_close_matches", lambda *a, **k: searches.append(a[0]) or close_matches(*a, **k))
    from tilescope.compiler.pipeline.op_override import OpOverride

    unknown = [OpOverride(f"fc{i}", memory="l1", spec=f"fc{i}=l1") for i in range(99_000)]
    fused = [OpOverride("mlp.layer.0.gelu", grid=(9, 9), spec="mlp.layer.0.gelu=9x9")] * 1_000
    problems = check_overrides(CompileOptions([*fused, *unknown]), _compiled("wormhole_n150"))
    assert problems.count == 100_000 and len(problems.lines) == SHOWN_PROBLEMS
    assert problems.more == 100_000 - SHOWN_PROBLEMS
    assert problems.lines[0] == "override 'mlp.layer.0.gelu=9x9' rejected: grid 9x9 outside wormhole_n150's 8x8 grid"
    assert searches == []  # the page is full of the fused op's rejections before any unknown name
    few = check_overrides(CompileOptions(unknown[:3] + fused[:30]), _compiled("wormhole_n150"))
    assert searches == ["fc0", "fc1", "fc2"] and few.lines[0].startswith("override 'fc0=l1': no such op")


LONG = "model.encoder." + "very_long_scope_name." * 30  # the importer cuts a name at 512 characters
LONG_NAMED = f"""func.func @forward(%x: tensor<32x64xf32>, %w1: tensor<64x128xf32>, %b: tensor<1x128xf32>,
                   %w2: tensor<128x64xf32>) -> tensor<32x64xf32> {{
  %0 = "ttir.exp"(%x) : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("{LONG}exp")
  %1 = "ttir.matmul"(%0, %w1) : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32> loc("{LONG}fc1")
  %2 = "ttir.add"(%1, %b) : (tensor<32x128xf32>, tensor<1x128xf32>) -> tensor<32x128xf32> loc("{LONG}bias")
  %3 = "ttir.matmul"(%2, %w2) : (tensor<32x128xf32>, tensor<128x64xf32>) -> tensor<32x64xf32> loc("{LONG}fc2")
  return %3 : tensor<32x64xf32>
}}
"""


def test_a_long_op_name_is_named_once_and_cut(tmp_path, wormhole):
    """Outcome reasons named the override's op again after its spec: with names of 512 characters,
    235 of 1,500 problem lines ran past 1,000 characters. Each now names an op once, cut."""
    from tilescope.overrides import validate

    path = tmp_path / "long.mlir"
    path.write_text(LONG_NAMED)
    model = load_model(str(path))
    exp, fc1, bias, fc2 = (op.name for op in model.graph.ops)
    assert min(len(exp), len(fc1)) > 500
    items = [
        f"{exp}=fidelity#lofi",  # not a matmul
        f"{exp}=block#1x1x1",
        f"{fc1}=operand#5:l1",  # no such operand
        f"{fc2}=result#3:l1",
        f"{fc1}=8x8:l1:block_sharded",  # 1x4 tiles over 64 cores
        f"{fc2}=operand#0:8x8:l1:height_sharded",
        f"{bias}=dram",  # fused into fc1: applied there
        f"{LONG}fc3=l1",  # no such op; close names suggested
    ]
    report = validate(CompileOptions([parse_item(i) for i in items]), model, wormhole)
    assert len(report.problems) == 7 and any("fused" in o.reason for o in report.outcomes)
    for line in report.problems:
        assert len(line) < 400, line
        for name in (exp, fc1, bias, fc2):
            assert line.count(name[-9:]) <= 1, line  # the name's end: its hash, which a cut keeps
    for outcome in report.outcomes:  # shown beside the override, which names its op
        assert outcome.op[-9:] not in outcome.reason and len(outcome.reason) < 200, outcome
