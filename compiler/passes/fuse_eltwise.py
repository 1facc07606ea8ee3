"""graph: fuse element-wise ops into the op that produces their input, where the target allows.

    %0 = matmul(%x, %w)          %0 = matmul(%x, %w, %b) {fused = ["add_0", "relu_0"]}
    %1 = add(%0, %b)       ->
    %2 = relu(%1)

A bias add (one operand a row vector as wide as the output) folds into a matmul or convolution,
also through a reshape that keeps the last dim between them (a matmul on flattened rows, then
unflattened: the bias is per column either way), the reshape then producing the add's result;
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
    # (op, fuse or not) from the overrides: an op with fuse#false neither fuses nor takes a fusion
    requests: tuple[tuple[str, bool], ...] = ()

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
        order = _Order()
        apart = {name for name, on in self.requests if not on}
        for op in graph.ops:
            if op.name in apart:
                order.keep(op)
                continue
            host = self._host(graph, op, producer, readers, fusion)
            via = self._through_reshape(graph, op, producer, readers, fusion) if host is None else None
            if via is not None and apart.intersection(o.name for o in via):
                via = None
            if via is not None:
                host = via[0]
            if host is not None and host.name in apart:
                host = None
            fed = via[1].outputs[0] if via is not None else host.outputs[0] if host is not None else None
            extra = [t for t in op.inputs if host is not None and t != fed]
            # the host runs where it stands, so operands it takes over must exist by then
            late = [producer[t] for t in extra if t in producer and position[producer[t].name] > position[host.name]]
            if host is None or not _hoisted(late, host, order, position, producer):
                order.keep(op)
                continue
            host.inputs = host.inputs + extra
            host.attrs["fused"] = (*host.attrs.get("fused", ()), op.name)
            host.attrs["fused_kinds"] = (*host.attrs.get("fused_kinds", ()), op.kind)
            host.source = host.source + op.source
            if via is not None:  # the reshape now makes the add's result from the host's
                graph.tensors.pop(fed, None)
                via[1].outputs = list(op.outputs)
                producer.update(dict.fromkeys(op.outputs, via[1]))
                continue
            graph.tensors.pop(host.outputs[0], None)
            host.outputs = list(op.outputs)
            for t in op.outputs:
                producer[t] = host
        graph.ops = order.final()
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
            if host_cls in opset.MATRIX_CLASSES and _is_bias_add(graph, op, t, fusion):
                return host
        return None

    def _through_reshape(self, graph: Graph, op: Op, producer, readers, fusion) -> tuple[Op, Op] | None:
        """The op and the reshape between them that `op` fuses through, or None: a bias add into a
        matrix op through a reshape keeping the columns, an activation through any reshape."""
        activation = opset.op_class(op.kind).kind_class == opset.ELTWISE_UNARY and op.kind != "typecast"
        if len(op.outputs) != 1 or not (activation and fusion.get("activation") or op.kind == "add"):
            return None
        for t in op.inputs:
            reshape = producer.get(t)
            if reshape is None or reshape.kind != "reshape" or len(reshape.inputs) != 1 or len(reshape.outputs) != 1:
                continue
            if readers.get(t, 0) != 1 or t in graph.outputs:
                continue
            made = reshape.inputs[0]
            before = graph.tensors[made]
            bias = (
                _is_bias_add(graph, op, t, fusion) and before.shape and before.shape[-1] == graph.tensors[t].shape[-1]
            )
            if not (bias or activation):
                continue
            host = producer.get(made)
            if host is None or readers.get(made, 0) != 1 or made in graph.outputs or len(host.outputs) != 1:
                continue
            if bool(host.attrs.get("const_eval")) != bool(op.attrs.get("const_eval")):
                continue
            hosts = opset.MATRIX_CLASSES if bias else _ACTIVATION_HOSTS
            if opset.op_class(host.kind).kind_class in hosts:
                return host, reshape
        return None


def _hoisted(late: list[Op], host: Op, order: "_Order", position: dict[str, float], producer) -> bool:
    """Whether the ops making `late` operands can move to just before `host`: each made at load
    time (const-eval: a bias reshaped from a weight) from what exists there already. Moves them."""
    for made in late:
        early = all(t not in producer or position[producer[t].name] < position[host.name] for t in made.inputs)
        if not (
            made.attrs.get("const_eval") and not host.attrs.get("const_eval") and early and made.name in order.kept
        ):
            return False
    for made in late:
        order.before.setdefault(host.name, []).append(made)
        order.moved.add(made.name)
        position[made.name] = position[host.name] - 0.5
    return True


class _Order:
    """The ops kept, in order, and those moved to just before another (a hoisted load-time op)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.kept: set[str] = set()
        self.before: dict[str, list[Op]] = {}
        self.moved: set[str] = set()

    def keep(self, op: Op) -> None:
        self.ops.append(op)
        self.kept.add(op.name)

    def final(self) -> list[Op]:
        out: list[Op] = []
        for op in self.ops:
            if op.name not in self.moved:
                out.extend(self.before.get(op.name, ()))
                out.append(op)
        return out


def _other(op: Op, t: str) -> str:
    return op.inputs[1] if op.inputs[0] == t else op.inputs[0]


def _is_bias_add(graph: Graph, op: Op, t: str, fusion) -> bool:
    """Whether `op` adds a row vector as wide as its operand `t` to it (a bias)."""
    if op.kind != "add" or not fusion.get("bias") or len(op.inputs) != 2:
        return False
    other, out = graph.tensors[_other(op, t)], graph.tensors[t]
    cols = out.shape[-1] if out.shape else 1
    return other.numel == cols and graph.tensors[op.outputs[0]].shape == out.shape
