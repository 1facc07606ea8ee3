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

from tilescope.compiler.analysis import matmul_encoding as encodings
from tilescope.compiler.analysis.matmul_encoding import LHS, RESULT, ROLES, TRANSPOSED
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.ir.meta import DEVICES
from tilescope.compiler.targets.chip import Target

ENCODED = "encoded"  # a matmul's attribute: data-tiling encoded it


@dataclass(frozen=True)
class SetEncodings:
    name = "set-encodings"
    target: Target

    def run(self, graph: Graph) -> Graph:
        # split over a mesh, each device would resolve its own piece's: not modelled yet (a program
        # placing each op on one device runs each matmul whole, and is encoded)
        if self.target.system.devices > 1 and not graph.meta.get(DEVICES):
            graph.warnings.append(
                f"data-tiling on {self.target.system.devices} devices is not modelled yet: matmuls left as they are"
            )
            return graph
        names = _Names(graph)
        ops: list[Op] = []
        for op in graph.ops:
            encoding = encodings.matmul_encoding(graph, op) if not op.attrs.get(ENCODED) else None
            a_dtype = encoding.element_types[LHS] if encoding else ""
            if encoding is None or self.target.inner_tile(a_dtype) is None:
                ops.append(op)
                continue
            for index in (0, 1):
                source, role = op.inputs[index], ROLES[index]
                encoded = names.tensor(f"{op.name}.{role}_encoded", graph.tensors[source], encoding.text(index))
                name = names.op(f"{op.name}.set_encoding_{role}")
                setter = Op(name, "set_encoding", [source], [encoded], source=op.source)
                if index == 0 and encodings.reads_transposed(graph, op):
                    setter.attrs[TRANSPOSED] = True  # its pack transposes: no result packed alike is it
                ops.append(setter)
                op.inputs[index] = encoded
            result = op.outputs[0]
            encoded = names.tensor(f"{op.name}.result_encoded", graph.tensors[result], encoding.text(RESULT))
            op.outputs[0] = encoded
            op.attrs[ENCODED] = True
            ops.append(op)
            name = names.op(f"{op.name}.unset_encoding")
            ops.append(Op(name, "unset_encoding", [encoded], [result], source=op.source))
        graph.ops = ops
        return graph


class _Names:
    """Names no op or tensor of the graph has: `stem`, else `stem#k`."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.taken = {op.name for op in graph.ops} | set(graph.tensors)

    def op(self, stem: str) -> str:
        return self._fresh(stem)

    def tensor(self, stem: str, like: Tensor, encoding: str) -> str:
        """A new tensor shaped and typed as `like`, with `encoding`."""
        name = self._fresh(stem)
        made = Tensor(name, like.shape, like.dtype, is_parameter=like.is_parameter, encoding=encoding)
        self.graph.tensors[name] = made
        return name

    def _fresh(self, stem: str) -> str:
        name, k = stem, 0
        while name in self.taken:
            k += 1
            name = f"{stem}#{k}"
        self.taken.add(name)
        return name
