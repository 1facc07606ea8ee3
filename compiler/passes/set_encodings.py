"""graph (with data-tiling): a matmul's operands and result get encodings, as IREE's set-encoding
pass gives them, where the target declares inner tiles for the operands' element type.

    %y = matmul(%x, %w)
        ->  %x.e = set_encoding(%x)     : tensor<128x512xbf16, #iree_encoding.encoding<operand_index = 0 ...>>
            %w.e = set_encoding(%w)     : tensor<512x256xbf16, #iree_encoding.encoding<operand_index = 1 ...>>
            %y.e = matmul(%x.e, %w.e)   : tensor<128x256xbf16, #iree_encoding.encoding<operand_index = 2 ...>>
            %y   = unset_encoding(%y.e)

The encodings say only what each tensor is for; the layout level materializes them into packs
and an mmt4d with the target's inner tiles (passes/materialize_encodings.py). An encoding of a
weight is work on a weight alone: const-eval, run again after this pass, moves it to load time.
Ops keep their names; the new ones are named after the matmul (`<matmul>.set_encoding_lhs`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.analysis.matmul_encoding import LHS, RESULT, ROLES, matmul_encoding
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.targets.chip import Target

ENCODED = "encoded"  # a matmul's attribute: data-tiling encoded it


@dataclass(frozen=True)
class SetEncodings:
    name = "set-encodings"
    target: Target

    def run(self, graph: Graph) -> Graph:
        ops: list[Op] = []
        for op in graph.ops:
            encoding = matmul_encoding(graph, op) if not op.attrs.get(ENCODED) else None
            a_dtype = encoding.element_types[LHS] if encoding else ""
            if encoding is None or self.target.inner_tile(a_dtype) is None:
                ops.append(op)
                continue
            for index in (0, 1):
                source, role = op.inputs[index], ROLES[index]
                encoded = _tensor(graph, f"{op.name}.{role}_encoded", graph.tensors[source], encoding.text(index))
                ops.append(Op(f"{op.name}.set_encoding_{role}", "set_encoding", [source], [encoded], source=op.source))
                op.inputs[index] = encoded
            result = op.outputs[0]
            encoded = _tensor(graph, f"{op.name}.result_encoded", graph.tensors[result], encoding.text(RESULT))
            op.outputs[0] = encoded
            op.attrs[ENCODED] = True
            ops.append(op)
            ops.append(Op(f"{op.name}.unset_encoding", "unset_encoding", [encoded], [result], source=op.source))
        graph.ops = ops
        return graph


def _tensor(graph: Graph, name: str, like: Tensor, encoding: str) -> str:
    """A new tensor `name` shaped and typed as `like`, with `encoding`."""
    graph.tensors[name] = Tensor(name, like.shape, like.dtype, is_parameter=like.is_parameter, encoding=encoding)
    return name
