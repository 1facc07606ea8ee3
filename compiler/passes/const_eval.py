"""graph: work that depends only on weights and constants runs once, when the model is loaded.

    %wt = permute(%w)          (%w: a parameter)     const_eval: computed at load, kept in DRAM
    %b  = reshape(%bias)                            const_eval
    %y  = matmul(%x, %wt)      (%x: an input)       per step: reads the loaded result

As tt-mlir's const-eval hoisting does, an op whose operands are all parameters (weights the
runtime loads before the first step), constants or results of such ops is marked `const_eval`:
it stays in the graph, where it can be seen and overridden, but the simulator times it as load
work, apart from the step. Its results count as parameters for the passes after this one (they
stay in DRAM like weights). Ops that write state (cache updates) always run in the step.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir.meta import CONST_EVAL
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import Graph


@dataclass(frozen=True)
class ConstEval:
    name = "const-eval"

    def run(self, graph: Graph) -> Graph:
        loaded = {name for name, t in graph.tensors.items() if t.is_parameter or t.is_constant}
        hoisted = []
        for op in graph.ops:
            kind_class = opset.op_class(op.kind).kind_class
            if (
                not op.inputs
                or kind_class in (opset.CONSTANT, opset.OPAQUE)
                or op.kind in opset.STATEFUL
                or not all(t in loaded for t in op.inputs)
                or not any(graph.tensors[t].is_parameter for t in op.inputs)  # constants alone: canonicalize's
            ):
                continue
            op.attrs["const_eval"] = True
            hoisted.append(op.name)
            for t in op.outputs:
                graph.tensors[t].is_parameter = True
                loaded.add(t)
        graph.meta[CONST_EVAL] = hoisted
        return graph
