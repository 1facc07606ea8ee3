"""Run a few graph-level passes on a small MLIR function and render the ops one line each, so a
test states the graph it expects as text."""

from __future__ import annotations

from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.frontend.mlir_import import import_mlir, parse_module
from tilescope.compiler.ir.printer import print_graph
from tilescope.compiler.passes.normalize import Normalize

SHOWN = ("permutation", "contract_dims_lhs", "contract_dims_rhs", "transpose_a", "transpose_b", "const_eval")


def run(text: str, *passes) -> Graph:
    graph = import_mlir(text, "golden.mlir").graph.with_level("graph")
    for compiler_pass in (Normalize(), *passes):
        graph = compiler_pass.run(graph)
    parse_module(print_graph(graph)[0], "golden:graph")  # what the passes leave still parses as MLIR
    return graph


def lines(graph: Graph) -> list[str]:
    """`name = kind(inputs) {attrs}` per op, with the attributes the rewrites change."""
    shown = []
    for op in graph.ops:
        attrs = ", ".join(f"{k}={op.attrs[k]}" for k in SHOWN if k in op.attrs)
        shown.append(f"{op.name} = {op.kind}({', '.join(op.inputs)})" + (f" {{{attrs}}}" if attrs else ""))
    return shown
