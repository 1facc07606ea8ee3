"""Hostile input to the importer: each case is one line naming the cause, in bounded work, and the
process survives (cases that crashed MLIR's parser or its bindings run in-process on purpose)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilescope.compiler.frontend import dialect_stubs
from tilescope.compiler.frontend import mlir_import
from tilescope.compiler.frontend import mlir_text
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.mlir_import import MAX_NAME_CHARS, MAX_NESTING, import_mlir, parse_module
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate

ROOT = Path(__file__).resolve().parents[2]


def _func(body: str, args: str = "%a: tensor<32x32xf32>", ret: str = "tensor<32x32xf32>") -> str:
    return f"func.func @forward({args}) -> {ret} {{\n{body}\n}}\n"


def _relu(loc: str = "", attrs: str = "", ty: str = "tensor<32x32xf32>") -> str:
    return _func(
        f'  %0 = "ttir.relu"(%a) {attrs}: ({ty}) -> {ty}{" loc(" + loc + ")" if loc else ""}\n  return %0 : {ty}',
        args=f"%a: {ty}",
        ret=ty,
    )


def _error(text: str, ref: str = "t.mlir") -> str:
    with pytest.raises(ModelLoadError) as err:
        import_mlir(text, ref)
    message = str(err.value)
    assert "\n" not in message and message.startswith(ref)
    return message


def _in_subprocess(code: str, timeout: float) -> dict:
    """Run `code` (which prints one JSON line) in a fresh interpreter: a generous timeout is a hang
    detector for work that used to grow quadratically, not a speed assertion."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- long names: linear work -----------------------------------------------------------------------

_LONG_LOC = """
import json, resource, sys
from tilescope.compiler.frontend.mlir_import import import_mlir
def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
name = ".".join(["a"] * {parts})
text = ('func.func @forward(%a: tensor<32x32xf32>) -> tensor<32x32xf32> {{\\n'
        '  %0 = "ttir.relu"(%a) : (tensor<32x32xf32>) -> tensor<32x32xf32> loc("' + name + '")\\n'
        '  return %0 : tensor<32x32xf32>\\n}}\\n')
import_mlir("func.func @f() {{\\n  return\\n}}\\n", "warm.mlir")
before = rss()
graph = import_mlir(text, "long.mlir").graph
print(json.dumps({{"chars": len(text), "grew": rss() - before, "names": [op.name for op in graph.ops]}}))
"""


def test_a_long_dotted_loc_name_imports_without_quadratic_work():
    # a 400 KB name took minutes when the dialect scan backtracked over it at every dot (80 KB: 22 s)
    result = _in_subprocess(_LONG_LOC.format(parts=200_000), timeout=60)
    (name,) = result["names"]
    assert len(name) == MAX_NAME_CHARS and name.startswith("a.a.a")


def test_a_long_loc_name_costs_memory_in_proportion_to_it():
    # a string matched as (?:[^"]|\\.)* keeps state per character in Python's re: about 100 bytes
    # each, gigabytes for a 60 MB name; unrolled, the import grows by a few times the text
    result = _in_subprocess(_LONG_LOC.format(parts=5_000_000), timeout=120)
    assert result["grew"] < 20 * result["chars"]


def test_long_names_are_shortened_distinct_and_said():
    prefix = "encoder." * 100
    text = _func(
        f'  %0 = "ttir.relu"(%a) : (tensor<32x32xf32>) -> tensor<32x32xf32> loc("{prefix}first")\n'
        f'  %1 = "ttir.relu"(%0) : (tensor<32x32xf32>) -> tensor<32x32xf32> loc("{prefix}second")\n'
        "  return %1 : tensor<32x32xf32>"
    )
    graph = import_mlir(text, "t.mlir").graph
    first, second = (op.name for op in graph.ops)
    assert first != second and len(first) == len(second) == MAX_NAME_CHARS
    assert graph.ops[1].inputs == [first]
    assert "2 names longer than 512 characters shortened" in graph.warnings[-1]
    assert import_mlir(text, "again.mlir").graph.ops[0].name == first  # stable across imports


_MANY = """
import json
from tilescope.compiler.frontend.mlir_import import import_mlir, strip_unparsable
n = 40_000
relu = '"ttir.relu"(%{a}) : (tensor<32x32xf32>) -> tensor<32x32xf32>'
head = 'func.func @forward(%a: tensor<32x32xf32>) -> tensor<32x32xf32> {\\n'
same_loc = head + "".join(f'  %v{i} = {relu.format(a=f"v{i-1}" if i else "a")} loc("x")\\n' for i in range(n))
one_line = head + " ".join(f'%v{i} = {relu.format(a=f"v{i-1}" if i else "a")}' for i in range(n))
tail = f"\\n  return %v{n-1} : tensor<32x32xf32>\\n}}\\n"
names = [op.name for op in import_mlir(same_loc + tail, "same.mlir").graph.ops]
ops = len(import_mlir(one_line + tail, "line.mlir").graph.ops)
wrapped = strip_unparsable("ttcore.device_module {\\n}\\n" * n)
print(json.dumps({"names": names[:3] + names[-1:], "ops": ops, "warnings": wrapped[1]}))
"""


def test_many_ops_of_one_loc_on_one_line_or_in_many_wrappers_take_linear_work():
    # each was quadratic: a loc's #k tried from 1 per op, the line's properties re-read per op, the
    # text copied per unwrapped wrapper (10k ops or wrappers: 5-15 s; 40k here)
    result = _in_subprocess(_MANY, timeout=120)
    assert result["names"] == ["x", "x#1", "x#2", "x#39999"]
    assert result["ops"] == 40_000
    assert result["warnings"] == ["unwrapped ttcore.device_module x40000 (their bodies are the model)"]


def test_tensor_names_stay_distinct_across_results_arguments_and_locs():
    text = _func(
        '  %0 = "ttir.relu"(%a) : (tensor<32x32xf32>) -> tensor<32x32xf32> loc("x:0")\n'
        '  %1:2 = "ttir.split"(%0) : (tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>) loc("x")\n'
        '  %2 = "ttir.add"(%1#0, %b) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>\n'
        "  return %2 : tensor<32x32xf32>",
        args='%a: tensor<32x32xf32> {ttir.name = "in"}, %b: tensor<32x32xf32> {ttir.name = "in"}',
    )
    graph = import_mlir(text, "t.mlir").graph
    assert graph.inputs == ["in", "in#1"]
    assert [op.outputs for op in graph.ops] == [["x:0"], ["x#1:0", "x#1:1"], ["add_0"]]
    assert graph.ops[2].inputs == ["x#1:0", "in#1"]


# --- nesting: checked before the parser ------------------------------------------------------------

_TAIL = _func("  return %a : tensor<32x32xf32>")


def _regions(n: int) -> str:
    return '"t.r"() ({\n' * n + "}) : () -> ()\n" * n + _TAIL


def _arrays(n: int) -> str:
    return _relu(attrs="{x = " + "[" * n + "]" * n + "} ")


def _modules(n: int) -> str:
    return "module {\n" * n + _TAIL + "}\n" * n


def _types(n: int) -> str:
    return _relu(attrs="{x = " + "tuple<" * n + "f32" + ">" * n + "} ")


@pytest.mark.parametrize(
    "text, where",
    [
        (_regions(2150), "129:6"),  # segfaulted in MLIR's parser (C++ stack)
        (_arrays(6640), "2:283"),  # segfaulted
        (_types(20000), "2:1558"),  # segfaulted
        (_modules(977), "257:8"),  # RecursionError in _functions
    ],
    ids=["regions", "arrays", "types", "modules"],
)
def test_nesting_past_the_limit_is_one_line_before_the_parser(text, where):
    assert _error(text) == f"t.mlir:{where}: nesting deeper than 256 levels (brackets, braces, regions)"


def test_nesting_up_to_the_limit_imports():
    # the function's body and the attribute dictionary are two levels of the 256
    assert import_mlir(_arrays(MAX_NESTING - 2), "t.mlir").graph.ops[0].attrs["x"].startswith("[[[")
    _error(_arrays(MAX_NESTING - 1))


def test_nesting_in_strings_and_comments_does_not_count_and_arrows_do_not_close():
    deep = "[" * 300
    assert import_mlir(f"// {deep}\n" + _relu(loc=f'"{deep}"'), "t.mlir").graph.ops[0].name == deep
    # `->` is not a closing `>`: counted as one, each level here would net zero
    arrows = _relu(attrs="{x = " + "[(i32) -> i32, " * 300 + "]" * 300 + "} ")
    assert "nesting deeper than 256 levels" in _error(arrows)


_PIECES = ["{", "}", "[", "]", "(", ")", "<", ">", "->", ">=", "=", "-", '"', "\\", "\\FF", "\\C3\\A9", "//", "/"]
_PIECES += ["\n", " ", "a", "\u00e9", "\u2028", '"x>"', "[[[[", "<<<<", ">>>>"]


def _scanned(text: str, limit: int) -> str | None:
    """The nesting and escape check as a plain scan, token by token, left to right."""
    depth = 0
    for token in re.finditer(rf'"{mlir_text.STRING_BODY}"?|//[^\n]*|->|>=|[{{}}\[\]()<>]', text):
        if token.group() in "{[(<":
            depth += 1
            if depth > limit:
                return f"nesting at {token.start()}"
        elif token.group() in "}])>":
            depth = max(depth - 1, 0)
        elif token.group()[0] == '"' and not mlir_text._is_utf8(token.group()):
            return f"escapes at {token.start()}"
    return None


@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.sampled_from([7, 1 << 22]))
@settings(max_examples=300, deadline=None)
def test_the_vectorised_nesting_check_finds_what_a_token_scan_finds(pieces, chunk):
    text, limit = "".join(pieces), 6
    expected = _scanned(text, limit)
    with (
        patch.object(mlir_text, "MAX_NESTING", limit),
        patch.object(mlir_text, "_DEPTH_CHUNK", chunk),
        pytest.raises(ModelLoadError) if expected else nullcontext() as raised,
    ):
        mlir_text.check_text(text, "t.mlir")
    if expected:
        line, col = (int(n) for n in str(raised.value).split(":")[1:3])
        index = sum(len(line) + 1 for line in text.split("\n")[: line - 1]) + col - 1
        kind = "nesting" if "nesting deeper than 6 levels" in str(raised.value) else "escapes"
        assert f"{kind} at {index}" == expected


def test_functions_are_found_in_modules_nested_past_the_recursion_limit():
    # the parser takes 1,100 levels of modules (it crashes near 2,000); finding the function must not recurse
    text = _modules(1100)
    with mlir_import.new_context() as ctx:
        module = parse_module(text, "t.mlir", ctx)
        assert [f.attributes["sym_name"].value for f in mlir_import._functions(module.body)] == ["forward"]


# --- text the parser or its bindings cannot take ---------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        (_TAIL + "// \x00\n", "t.mlir:4:4: NUL character (MLIR is text)"),
        (_TAIL + "// \ud800\n", "t.mlir:4:4: not UTF-8 text (a lone surrogate)"),
        # \FF escapes are bytes that are not UTF-8: reading such a loc or op name aborted the process
        (_relu(loc=r'"a\FFb"'), "t.mlir:2:71: string escapes are not UTF-8 text"),
        (_relu().replace('"ttir.relu"', r'"ttir.re\FFlu"'), "t.mlir:2:8: string escapes are not UTF-8 text"),
        (
            _TAIL.replace("%a: tensor<32x32xf32>)", r'%a: tensor<32x32xf32> {ttir.name = "\C3"})'),
            "t.mlir:1:55: string escapes are not UTF-8 text",
        ),
    ],
    ids=["nul", "surrogate", "loc-escape", "op-escape", "arg-escape"],
)
def test_text_that_crashed_the_parser_or_bindings_is_one_line(text, message):
    assert _error(text) == message


def test_valid_escapes_in_strings_import():
    graph = import_mlir(_relu(loc=r'"caf\C3\A9 \"q\""'), "t.mlir").graph
    assert graph.ops[0].name == 'café "q"'


@pytest.mark.parametrize(
    "text, message",
    [
        (_relu(loc=r'"a\00b"'), r"t.mlir: op name 'a\x00b' has a control character or line break (U+0000)"),
        (_relu(loc=r'"a\0Ab"'), r"t.mlir: op name 'a\nb' has a control character or line break (U+000A)"),
        (
            _TAIL.replace("%a: tensor<32x32xf32>)", r'%a: tensor<32x32xf32> {ttir.name = "x\01"})'),
            r"t.mlir:1:20: argument name 'x\x01' has a control character or line break (U+0001)",
        ),
        (
            _relu().replace('"ttir.relu"', r'"ttir.re\1Blu"'),
            r"t.mlir:2:8: op name 'ttir.re\x1blu' has a control character or line break (U+001B)",
        ),
        (_relu(loc='"a\u2028b"'), r"t.mlir: op name 'a\u2028b' has a control character or line break (U+2028)"),
    ],
    ids=["nul-loc", "newline-loc", "arg", "kind", "line-separator"],
)
def test_control_characters_in_names_are_one_line(text, message):
    assert _error(text) == message


def test_a_non_string_ttir_name_falls_back_to_the_position():
    text = _TAIL.replace("%a: tensor<32x32xf32>)", "%a: tensor<32x32xf32> {ttir.name = 3 : i32})")
    assert import_mlir(text, "t.mlir").graph.inputs == ["arg0"]


def test_many_functions_are_listed_in_a_bounded_line():
    text = "".join(_TAIL.replace("@forward", f"@f{i}") for i in range(50)).replace("@f0(", '@"f\\0A0"(')
    with pytest.raises(ModelLoadError) as err:
        import_mlir(text, "t.mlir", function="no\nne")
    listed = r"f\n0, f1, f2, f3, f4, f5, f6, f7, f8, f9 and 40 more"
    assert str(err.value) == rf"t.mlir: no function @no\nne; functions: {listed}"


# --- shapes and dimension attributes ---------------------------------------------------------------


@pytest.mark.parametrize(
    "ty, message",
    [
        ("tensor<?x4xf32>", "dynamic shapes are not supported: arg0 is tensor<?x4xf32>"),
        ("tensor<0x4xf32>", "zero-size tensors are not supported: arg0 is tensor<0x4xf32>"),
        (
            "tensor<99999999999x99999999999xf32>",
            "tensors of more than 2^48 elements are not supported: arg0 is tensor<99999999999x99999999999xf32>",
        ),
        ("tensor<*xf32>", "unranked tensors are not supported: arg0 is tensor<*xf32>"),
    ],
    ids=["dynamic", "zero", "huge", "unranked"],
)
def test_shapes_tilescope_cannot_model_are_one_line(ty, message):
    assert _error(_relu(ty=ty)) == f"t.mlir:1:20: {message}"


def test_a_result_shape_error_names_the_op_line():
    text = _func('  %0 = "ttir.relu"(%a) : (tensor<32x32xf32>) -> tensor<?x32xf32>\n  return %a : tensor<32x32xf32>')
    assert _error(text) == "t.mlir:2:8: dynamic shapes are not supported: relu_0 is tensor<?x32xf32>"


def _dot(contract: str, ty: str = "tensor<32x32xf32>") -> str:
    return _func(
        f'  %0 = "ttir.dot_general"(%a, %a) <{{batch_dims_lhs = array<i64>, batch_dims_rhs = array<i64>, '
        f"contract_dims_lhs = array<i64: {contract}>, contract_dims_rhs = array<i64: 0>}}> : ({ty}, {ty}) -> {ty} "
        f'loc("mm")\n  return %0 : {ty}',
        args=f"%a: {ty}",
        ret=ty,
    )


@pytest.mark.parametrize("contract", ["7", "-1", "1, 1"])
def test_bad_contract_dims_name_the_op(contract, wormhole):
    model = import_mlir(_dot(contract), "t.mlir")
    with pytest.raises(ModelLoadError) as err:
        compile_model(model, wormhole)
    assert str(err.value).startswith(f"op mm: contract_dims_lhs [{contract}] are not distinct dimensions")
    assert str(err.value).endswith("of its rank-2 first operand")


def test_the_largest_tensors_compile_but_flops_past_64_bits_are_one_line(wormhole):
    side = "tensor<16777216x16777216xf32>"  # 2^48 elements: the most a tensor may have
    relu = compile_model(import_mlir(_relu(ty=side), "t.mlir"), wormhole)
    (timing,) = simulate(relu.kernel, wormhole).ops
    assert timing.flops == 2**48
    matmul = compile_model(import_mlir(_dot("1", side), "t.mlir"), wormhole)
    with pytest.raises(ModelLoadError, match=r"^op mm: 9\.44e\+21 FLOPs, more than tilescope counts \(2\^63\)$"):
        simulate(matmul.kernel, wormhole)


# --- dialect stubs ---------------------------------------------------------------------------------


def test_random_dialect_names_leave_the_module_registry_bounded():
    stubs = "iree.compiler.dialects."
    before = {name for name in sys.modules if name.startswith(stubs)}
    rng = random.Random(13)
    names = {"".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=12)) for _ in range(10_000)}
    names = sorted(names)
    for start in range(0, len(names), 1000):
        body = "".join(f'  "{d}.op"() : () -> ()\n' for d in names[start : start + 1000])
        import_mlir(_func(body + "  return %a : tensor<32x32xf32>"), "t.mlir")
    added = {name for name in sys.modules if name.startswith(stubs)} - before
    assert len(added) <= dialect_stubs.MAX_OTHER_STUBS
    assert len(dialect_stubs._others) <= dialect_stubs.MAX_OTHER_STUBS
    # a dialect real models use is still stubbed once the cap is reached
    import_mlir(_func('  "d2m.op"() : () -> ()\n  return %a : tensor<32x32xf32>'), "t.mlir")
    assert f"{stubs}d2m" in sys.modules
