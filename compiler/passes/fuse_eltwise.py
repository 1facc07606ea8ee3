"""graph: fuse element-wise ops into the op that produces their input, where the target allows.

    %0 = matmul(%x, %w)          %0 = matmul(%x, %w, %b) {fused = ["add_0", "relu_0"]}
    %1 = add(%0, %b)       ->
    %2 = relu(%1)

A bias add (one operand a row vector as wide as the output) folds into a matmul or convolution;
a unary activation folds into a matmul, convolution, element-wise or normalization producer. The
producer must have no other reader, since its own output no longer exists. The fused op keeps the
producer's name and records the fused ops in `fused` and in its provenance, so an override or a
selection naming a fused op can find where it went.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.rewrite import producers
from tilescope.compiler.targets.chip import Target

_ACTIVATION_HOSTS = (*opset.MATRIX_CLASSES, opset.ELTWISE_BINARY, opset.NORM)


@dataclass(frozen=True)
class FuseEltwise:
    name = "fuse-eltwise"
    target: Target

    def run(self, graph: Graph) -> Graph:
        fusion = self.target.fusion
        if not (fusion.get("activation") or fusion.get("bias")):
            return graph
        readers: dict[str, int] = {}
        for op in graph.ops:
            for t in op.inputs:
                readers[t] = readers.get(t, 0) + 1
        producer = producers(graph)
        position = {op.name: i for i, op in enumerate(graph.ops)}
        kept: list[Op] = []
        for op in graph.ops:
            host = self._host(graph, op, producer, readers, fusion)
            extra = [t for t in op.inputs if host is not None and t != host.outputs[0]]
            # the host runs where it stands, so operands it takes over must exist by then
            if host is None or any(t in producer and position[producer[t].name] > position[host.name] for t in extra):
                kept.append(op)
                continue
            host.inputs = host.inputs + extra
            host.attrs["fused"] = (*host.attrs.get("fused", ()), op.name)
            host.attrs["fused_kinds"] = (*host.attrs.get("fused_kinds", ()), op.kind)
            host.source = host.source + op.source
            graph.tensors.pop(host.outputs[0], None)
            host.outputs = list(op.outputs)
            for t in op.outputs:
                producer[t] = host
        graph.ops = kept
        return graph

    def _host(self, graph: Graph, op: Op, producer, readers, fusion) -> Op | None:
        """The op `op` fuses into, or None."""
        cls = opset.op_class(op.kind).kind_class
        if len(op.outputs) != 1:
            return None
        for t in op.inputs:
            host = producer.get(t)
            if host is None or readers.get(t, 0) != 1 or t in graph.outputs or len(host.outputs) != 1:
                continue
            if bool(host.attrs.get("const_eval")) != bool(op.attrs.get("const_eval")):
                continue  # load-time work and step work run apart
            host_cls = opset.op_class(host.kind).kind_class
            if cls == opset.ELTWISE_UNARY and op.kind != "typecast" and fusion.get("activation"):
                if host_cls in _ACTIVATION_HOSTS:
                    return host
            if op.kind == "add" and fusion.get("bias") and host_cls in opset.MATRIX_CLASSES and len(op.inputs) == 2:
                other = graph.tensors[op.inputs[1] if op.inputs[0] == t else op.inputs[0]]
                out = graph.tensors[t]
                cols = out.shape[-1] if out.shape else 1
                if other.numel == cols and graph.tensors[op.outputs[0]].shape == out.shape:
                    return host
        return None
