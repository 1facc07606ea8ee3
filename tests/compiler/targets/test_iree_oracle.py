"""IREE as the oracle of data-tiling's inner tiles: for each target IREE compiles for (a CPU whose
file gives iree-compile's flags) and each operand element type, the inner tiles the target file
declares are those IREE's own encoding materialization picks for a matmul."""

from __future__ import annotations

import re

import pytest
from iree.compiler import tools

from tilescope.compiler.analysis.matmul_encoding import MatmulEncoding
from tilescope.compiler.passes.materialize_encodings import narrowed
from tilescope.compiler.targets.catalog import builtin_names, load_target

# operand type -> (result type, its zero): IREE keys its tiles by all three element types
ELEMENT_TYPES = {"f32": ("f32", "0.0"), "f16": ("f32", "0.0"), "bf16": ("f32", "0.0"), "i8": ("i32", "0")}
IREE_TARGETS = [name for name in builtin_names() if load_target(name).iree_flags]
MMT4D = re.compile(r"linalg\.mmt4d ins\([^:]*: tensor<(\d+)x(\d+)x(\d+)x(\d+)x\w+>, tensor<(\d+)x(\d+)x(\d+)x(\d+)x")


def matmul(operand: str, rows: int = 256) -> str:
    result, zero = ELEMENT_TYPES[operand]
    a, b, c = f"tensor<{rows}x512x{operand}>", f"tensor<512x256x{operand}>", f"tensor<{rows}x256x{result}>"
    return f"""func.func @mm(%a: {a}, %b: {b}) -> {c} {{
  %zero = arith.constant {zero} : {result}
  %init = tensor.empty() : {c}
  %acc = linalg.fill ins(%zero : {result}) outs(%init : {c}) -> {c}
  %r = linalg.matmul ins(%a, %b : {a}, {b}) outs(%acc : {c}) -> {c}
  return %r : {c}
}}"""


def iree_inner_tile(flags: tuple[str, ...], operand: str, rows: int = 256) -> tuple[int, int, int]:
    """(M0, N0, K0) of the mmt4d IREE makes of a matmul on `operand`s for the CPU `flags` name."""
    args = [*flags, "--iree-global-opt-data-tiling", "--compile-to=global-optimization"]
    found = MMT4D.search(tools.compile_str(matmul(operand, rows), extra_args=args).decode())
    assert found, "IREE did not data-tile the matmul"
    _, _, m0, k0, _, _, n0, _ = (int(g) for g in found.groups())  # [M1, K1, M0, K0] and [N1, K1, N0, K0]
    return m0, n0, k0


def test_the_cpu_targets_give_iree_their_flags():
    assert {"x86_avx512", "aarch64_sve"} <= set(IREE_TARGETS)


@pytest.mark.parametrize("operand", ELEMENT_TYPES)
@pytest.mark.parametrize("name", IREE_TARGETS)
def test_a_targets_inner_tiles_are_the_ones_iree_picks(name, operand):
    target = load_target(name)
    assert target.inner_tile(operand) == iree_inner_tile(target.iree_flags, operand)


@pytest.mark.parametrize("rows", [1, 3, 8, 12])
def test_a_matmul_of_few_rows_takes_the_narrow_tile_iree_picks(rows):
    """Fewer rows than M0 (a decode step's): IREE narrows M0 to the power of two that holds them."""
    target = load_target("x86_avx512")
    encoding = MatmulEncoding(1, rows, 256, 512, ("f32", "f32", "f32"))
    assert narrowed(target.inner_tile("f32"), encoding) == iree_inner_tile(target.iree_flags, "f32", rows)
