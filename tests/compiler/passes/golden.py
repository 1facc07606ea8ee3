"""Golden tests of the passes: a small MLIR function in, the passes up to the one a test is about,
and what that pass makes, which the test states as text: one line per op at the graph level
(`lines`), the level as MLIR prints it from the partition level on (`printed`, of the level or
one op). What every pass
makes is verified (compiler/ir/verifier.py) and parses as MLIR."""

from __future__ import annotations

from collections.abc import Sequence

from tilescope.compiler.frontend.mlir_import import import_mlir, parse_module
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.printer import print_graph
from tilescope.compiler.ir.verifier import verify
from tilescope.compiler.passes.normalize import Normalize
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.options import DEFAULT_POLICY, CompileOptions
from tilescope.compiler.pipeline.stages import stages
from tilescope.compiler.targets.chip import Target

SHOWN = (
    "permutation",
    "contract_dims_lhs",
    "contract_dims_rhs",
    "transpose_a",
    "transpose_b",
    "const_eval",
    "folded",
    "fused",
    "source_op",
)


def run(text: str, *passes) -> Graph:
    """The graph level of `text` after normalize and `passes`, each run and verified in turn."""
    graph = import_mlir(text, "golden.mlir").graph.with_level("graph")
    for compiler_pass in (Normalize(), *passes):
        graph = compiler_pass.run(graph)
        verify(graph, after=compiler_pass.name)
    parse_module(print_graph(graph)[0], "golden:graph")  # what the passes leave still parses as MLIR
    return graph


def lines(graph: Graph) -> list[str]:
    """`name = kind(inputs) {attrs}` per op, with the attributes the rewrites change."""
    shown = []
    for op in graph.ops:
        attrs = ", ".join(f"{k}={op.attrs[k]}" for k in SHOWN if k in op.attrs)
        shown.append(f"{op.name} = {op.kind}({', '.join(op.inputs)})" + (f" {{{attrs}}}" if attrs else ""))
    return shown


def through(
    text: str,
    target: Target,
    last: str,
    policy: str = DEFAULT_POLICY,
    overrides: Sequence[OpOverride] = (),
    data_tiling: bool = False,
) -> tuple[Graph, Graph]:
    """What the pass named `last` is given, as compiling `text` for `target` makes it, and what the
    pass makes of it; every pass up to it run as compile_model runs them, and verified."""
    graph = import_mlir(text, "golden.mlir").graph
    for level, passes in stages(target, CompileOptions(overrides, policy, data_tiling=data_tiling)):
        graph = graph.with_level(level)
        for compiler_pass in passes:
            given = graph.with_level(level)  # a copy: a pass changes the level it is given
            graph = compiler_pass.run(graph)
            verify(graph, after=compiler_pass.name)
            if compiler_pass.name == last:
                return given, graph
    raise ValueError(f"no pass {last!r} in the compiler's stages")


def printed(graph: Graph, op: str | None = None) -> str:
    """The level as MLIR text, which MLIR's parser reads back; or only the lines of `op` in it."""
    text, spans = print_graph(graph)
    parse_module(text, f"golden:{graph.level}")
    if op is None:
        return text
    first, last = spans[op]
    return "\n".join(text.splitlines()[first - 1 : last]) + "\n"
