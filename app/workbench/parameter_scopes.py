"""Scopes for ops whose names carry none, from the names of the parameters they read.

An exporter may name ops by kind (`conv2d_16`, `maximum_3`) and yet keep each parameter's module
path: `ttir.name = "l__self___resnet_encoder_stages_1_layers_0_shortcut_convolution_weight"` is
torch's `resnet.encoder.stages.1.layers.0.shortcut.convolution.weight` as TorchDynamo flattens it.
An op reading parameters sits in the module they share (a batch norm reads weight, bias,
running_mean and running_var: `...shortcut.normalization`); an op reading none (a ReLU, a residual
add) near its producers (parameter_scopes); a constant with its reader.
"""

from __future__ import annotations

import re

from tilescope.compiler.ir.graph import Graph

_DYNAMO = re.compile(r"(?:getattr_)?[lL]__self___(.+)")  # TorchDynamo's name of `self.<path>`
_INDEX = re.compile(r"___(\d+)___")  # getattr(module, "2") inside such a name: `layer___2___conv`


def module_path(parameter: str) -> str:
    """The module holding a parameter, dotted: "" when its name gives none (`arg15_1`)."""
    dynamo = _DYNAMO.fullmatch(parameter)
    path = _INDEX.sub(r"_\1_", dynamo.group(1)).replace("_", ".") if dynamo else parameter
    if ".parametrizations." in path:  # torch.nn.utils.parametrize keeps `module.parametrizations.weight`
        return path.split(".parametrizations.")[0]
    return path.rpartition(".")[0]


def shared(a: str | None, b: str | None) -> str | None:
    """The scopes two dotted scopes share, outermost first ("" for none); None when either is None."""
    if a is None or b is None:
        return None
    same = []
    for x, y in zip(a.split("."), b.split(".")):
        if x != y:
            break
        same.append(x)
    return ".".join(same)


def _common(scopes) -> str | None:
    """The scope the scopes given share; None when none is given (None stands for no scope known)."""
    found = None
    for scope in scopes:
        if scope is not None:
            found = scope if found is None else shared(found, scope)
    return found


def parameter_scopes(graph: Graph) -> dict[str, str] | None:
    """Each op's scope (dotted, "" for the top) from the parameters it reads, directly or through
    ops on parameters alone (a weight's reshape); None when the parameters name fewer than two
    modules: then they do not divide the graph. An op reading none sits in the module around its
    producers' (a ReLU after `layer.0.normalization` in `layer.0`, as torch's conv layer holds its
    activation), or in the module its producers share (a residual add joining a layer's main path
    and its shortcut), or with what it follows; before any, with its first reader."""
    weight: dict[str, str] = {  # tensor -> the module of the parameters it is computed from
        name: module_path(name) for name in graph.inputs if graph.tensors[name].is_parameter
    }
    own: dict[str, str | None] = {}
    for op in graph.ops:
        read = [weight[t] for t in op.inputs if t in weight]
        own[op.name] = _common(read)
        if read and all(t in weight or graph.tensors[t].is_constant for t in op.inputs):
            weight.update({t: own[op.name] for t in op.outputs})
    if len({s for s in own.values() if s}) < 2:
        return None
    producer = {t: op.name for op in graph.ops for t in op.outputs}
    scope: dict[str, str | None] = {}
    for op in graph.ops:
        producers = [producer[t] for t in op.inputs if t in producer]
        direct = {own[p] for p in producers if own[p]}
        if own[op.name]:
            scope[op.name] = own[op.name]
        elif direct:
            scope[op.name] = direct.pop().rpartition(".")[0] if len(direct) == 1 else _common(direct)
        else:
            scope[op.name] = _common(scope[p] for p in producers)
    first_reader: dict[str, str] = {}  # tensor -> its first reader, in graph order
    for op in reversed(graph.ops):
        if scope[op.name] is None:  # before any scoped op: with its first reader
            reader = next((first_reader[t] for t in op.outputs if t in first_reader), None)
            scope[op.name] = scope[reader] if reader else None
        first_reader.update({t: op.name for t in op.inputs})
    for op in graph.ops:  # a source (a constant) sits with its first reader
        reader = next((first_reader[t] for t in op.outputs if t in first_reader), None)
        if not op.inputs and reader:
            scope[op.name] = scope[reader]
    return {name: found or "" for name, found in scope.items()}
