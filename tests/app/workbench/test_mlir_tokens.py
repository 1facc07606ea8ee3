"""The MLIR tokenizer: each kind on the lines the levels print, brackets read as one token, and
bounded work on pathological lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tilescope.app.workbench.mlir_tokens import KINDS, line_tokens, page_tokens

ROOT = Path(__file__).resolve().parents[3]


def _kinds(line: str) -> list[tuple[str, str]]:
    return [(line[start:end], kind) for start, end, kind in line_tokens(line)]


def test_a_generic_op_line_of_the_input_level():
    line = (
        '    %0 = "ttir.matmul"(%arg0, %arg1) : (tensor<128x1024xbf16>, tensor<1024x4096xbf16>)'
        ' -> tensor<128x4096xbf16> loc("mlp.layer.0.fc1.matmul")'
    )
    assert _kinds(line) == [
        ("%0", "ssa"),
        ('"ttir.matmul"', "op"),
        ("%arg0", "ssa"),
        ("%arg1", "ssa"),
        ("tensor<128x1024xbf16>", "type"),
        ("tensor<1024x4096xbf16>", "type"),
        ("tensor<128x4096xbf16>", "type"),
        ('loc("mlp.layer.0.fc1.matmul")', "loc"),
    ]


def test_pretty_ops_symbols_dtypes_numbers_and_block_labels():
    assert _kinds("  %3 = stablehlo.add %1, %2 : tensor<4xf32> loc(#loc3)") == [
        ("%3", "ssa"),
        ("stablehlo.add", "op"),
        ("%1", "ssa"),
        ("%2", "ssa"),
        ("tensor<4xf32>", "type"),
        ("loc(#loc3)", "loc"),
    ]
    assert _kinds("func.func @forward(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {")[:3] == [
        ("func.func", "op"),
        ("@forward", "sym"),
        ("%arg0", "ssa"),
    ]
    assert _kinds("  %c = arith.constant 1.5e-3 : f32") == [
        ("%c", "ssa"),
        ("arith.constant", "op"),
        ("1.5e-3", "num"),
        ("f32", "type"),
    ]
    assert _kinds("^bb0(%a: bf16):") == [("^bb0", "ssa"), ("%a", "ssa"), ("bf16", "type")]
    assert _kinds("  return %4 : tensor<8xbf16>") == [("return", "op"), ("%4", "ssa"), ("tensor<8xbf16>", "type")]
    # results as a pack, or several
    assert _kinds('  %0:2 = "a.split"(%x) : (i32) -> (i32, i32)')[:2] == [("%0", "ssa"), ('"a.split"', "op")]
    assert _kinds("  %a, %b = x.two %c : i1")[:3] == [("%a", "ssa"), ("%b", "ssa"), ("x.two", "op")]


def test_dialect_attributes_and_types_are_one_token_bracket_to_bracket():
    line = (
        '  %1 = "ttnn.to_layout"(%0) <{layout = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, '
        "memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>}> : (tensor<32x32xbf16>) -> !ttnn.device"
    )
    assert _kinds(line) == [
        ("%1", "ssa"),
        ('"ttnn.to_layout"', "op"),
        ("%0", "ssa"),
        (
            "#ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, "
            "memref<1x1x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>",
            "attr",
        ),
        ("tensor<32x32xbf16>", "type"),
        ("!ttnn.device", "type"),
    ]
    # a kernel level's core list: one token, however many cores
    cores = ", ".join(str(i % 8) for i in range(128))
    assert _kinds(f"      }}) {{blocks = 4 : i64, cores = array<i64: {cores}>}} : () -> ()") == [
        ("4", "num"),
        ("i64", "type"),
        (f"array<i64: {cores}>", "attr"),
    ]


def test_strings_comments_and_names_that_are_not_ops():
    line = r'        "ts.read"() {path = "dr\"am", tensor = "a.b // c"} : () -> ()  // read it'
    assert _kinds(line) == [
        ('"ts.read"', "op"),
        (r'"dr\"am"', "str"),
        ('"a.b // c"', "str"),
        ("// read it", "cmt"),
    ]
    # an attribute dictionary that goes on from the line before: its keys are not op names
    assert _kinds('    ttir.name = "x",') == [('"x"', "str")]
    assert _kinds("    }) {blocks = 4 : i64} : () -> ()") == [("4", "num"), ("i64", "type")]


def test_an_unclosed_bracket_colours_its_head_alone():
    assert _kinds("  %0 = x.y %a : tensor<4xf32") == [("%0", "ssa"), ("x.y", "op"), ("%a", "ssa"), ("tensor", "type")]
    assert _kinds('  %1 = "a.b"() : () -> () loc("unclosed')[1:] == [('"a.b"', "op"), ("loc", "loc")]


def test_every_kind_has_a_token_on_a_line_that_holds_it():
    line = '%0 = "d.op"(%a) {s = "t", n = 3, m = #d.attr<1>} : (!d.type) -> tensor<2xf32> loc("x") @sym // done'
    assert {kind for _, _, kind in line_tokens(line)} == set(KINDS)


def test_a_page_stops_colouring_at_its_token_and_character_budgets():
    line = "  %0 = x.add %a, %b : f32"  # 5 tokens in 25 characters
    by_tokens = list(page_tokens([line] * 4, 12, 10_000))
    assert [len(t) for t in by_tokens] == [5, 5, 2, 0]
    by_chars = list(page_tokens([line] * 4, 1_000, 40))
    assert [len(t) for t in by_chars] == [5, 3, 0, 0]
    assert by_chars[1] == [(2, 4, "ssa"), (7, 12, "op"), (13, 15, "ssa")]  # its first 15 characters read


_PATHOLOGICAL = """
import json
from tilescope.app.workbench.mlir_tokens import line_tokens
n = 200_000
lines = ["tensor<" * n, '"' + "a" * 5 * n, "%x, " * n + "%y", "(" * n + ")" * n, "#a<" * n + ">"]
print(json.dumps([len(line_tokens(line)) for line in lines]))
"""


def test_pathological_lines_take_work_in_proportion_to_them():
    """Unclosed brackets, an unclosed string, a long result list, deep nesting: each read in one
    pass. The timeout detects work that grows quadratically (hours at these sizes); it is not a
    speed assertion."""
    done = subprocess.run(
        [sys.executable, "-c", _PATHOLOGICAL], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    counts = json.loads(done.stdout)
    assert counts == [200_000, 0, 200_001, 0, 200_000]  # heads alone, but the last `#a<>`
