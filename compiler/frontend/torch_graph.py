"""An exported PyTorch program as MLIR text of the `input` level: each FX node of the core aten
vocabulary becomes the TTIR ops tilescope's MLIR import reads (compiler/frontend/torch_ops.py),
named by its module path and call (`encoder.layer.3.attention.self.query.linear`), located at
the user's line of Python (`loc("name"("code"("model.py":57:0)))`). Weights are function
arguments marked as parameters (loaded once), buffers as constants, the inputs as inputs; the
program's outputs are the function's results."""

from __future__ import annotations

import operator
import re
from typing import Any

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend import torch_names
from tilescope.compiler.frontend.torch_rules import RULES, Call, Translation, Value, logical
from tilescope.compiler.frontend.zoo.builder import MlirBuilder

# the rules, registered into torch_rules.RULES as their modules load
from tilescope.compiler.frontend import torch_nn_ops, torch_ops  # noqa: F401, I001

_SAFE = re.compile(r"[^A-Za-z0-9_.\-]")  # an op's name keeps these; a module path may hold any
MAX_NODES = 500_000  # about a 10k-layer transformer; more is not a model this front end is for


def program_text(program: Any, name: str, float_dtype: str | None = None) -> str:
    """The MLIR text of an exported (and decomposed) program."""
    nodes = list(program.graph.nodes)
    if len(nodes) > MAX_NODES:
        raise ModelLoadError(f"{name}: {len(nodes):,} nodes, over the {MAX_NODES:,} this import takes")
    tr = Translation(MlirBuilder("forward"), float_dtype)
    kinds = _input_kinds(program)
    roots = _library_roots()
    outputs: list[str] = []
    for node in nodes:
        if node.op == "placeholder":
            tr.values[node.name] = _argument(tr, node, kinds.get(node.name, ("input", node.name)))
        elif node.op == "call_function":
            tr.values[node.name] = translate(tr, node, _locate(tr, node, roots))
        elif node.op == "output":
            try:
                outputs = [_materialized(tr, v) for v in _flat(_resolve(tr, node.args[0]))]
            except ValueError as err:  # the builder's shape checks
                raise tr.error(f"the outputs: {' '.join(str(err).split())[:200]}") from None
    tr.where = ""
    if not outputs:
        raise ModelLoadError(f"{name}: the program returns no tensor")
    return tr.builder.text(outputs)


def translate(tr: Translation, node: Any, scope: str) -> Any:
    """A call node's value: a Value, a tuple of them (an op of several results), or None; its ops
    named in the module `scope`."""
    if node.target is operator.getitem:
        items = _resolve(tr, node.args[0])
        return items[node.args[1]] if isinstance(items, (list, tuple)) else None
    target = getattr(node.target, "__name__", str(node.target))  # "addmm.default"
    name = target.split(".")[0]
    # only aten ops: a python-level op on sizes (operator.mul of symbolic ints) is not one of them
    namespace = getattr(node.target, "namespace", "python")
    found = RULES.get(name) if namespace == "aten" else None
    if found is None:
        raise tr.error(f"{namespace}.{target} is not supported by the PyTorch import")
    try:
        call = torch_names.call_name(f"aten.{target}", torch_names.module_class(node.meta))
        loc = tr.unique(_SAFE.sub("_", f"{scope}.{call}" if scope else call))
        args = [_resolve(tr, a) for a in node.args]
        kwargs = {k: _resolve(tr, v) for k, v in node.kwargs.items()}
        return found(tr, Call(name, args, kwargs, node.meta.get("val"), loc))
    except ModelLoadError:
        raise
    except (ValueError, TypeError, AttributeError, IndexError, KeyError, ZeroDivisionError) as err:
        # the builder's shape checks, or arguments of a form the rule does not take (a None, a
        # symbolic size): a combination this import cannot express, said in one line
        said = " ".join(str(err).split())[:200] or type(err).__name__
        raise tr.error(f"aten.{target}: {said}") from None


def _input_kinds(program: Any) -> dict[str, tuple[str, str]]:
    """Each placeholder's argument kind and name: parameters and buffers by their module path."""
    kinds = {}
    for spec in program.graph_signature.input_specs:
        kind = spec.kind.name
        arg = getattr(spec.arg, "name", None)
        if arg is None:
            continue
        if kind == "PARAMETER":
            kinds[arg] = ("parameter", spec.target or arg)
        elif kind in ("BUFFER", "CONSTANT_TENSOR"):
            kinds[arg] = ("constant", spec.target or arg)
        else:
            kinds[arg] = ("input", arg)
    return kinds


def _argument(tr: Translation, node: Any, kind_name: tuple[str, str]) -> Value | None:
    value = node.meta.get("val")
    if not hasattr(value, "shape"):
        return None  # a non-tensor input (a symbolic int, a token): nothing to compile
    shape, dtype = tuple(int(d) for d in value.shape), tr.dtype_of(value.dtype)
    return Value(tr.builder.arg(kind_name[1], shape, dtype, kind_name[0]), shape, dtype)


def _locate(tr: Translation, node: Any, roots: tuple[str, ...]) -> str:
    """Locate the node's ops at its line of Python; the module path they are named in."""
    line = torch_names.python_line(node.meta, roots)
    tr.builder.source, tr.builder.source_code = None, ""
    scope = torch_names.module_path(node.meta)
    if line is not None:
        tr.builder.source = (line.file, line.line)
        tr.builder.source_code = line.code
    tr.where = f"{line}: {scope or 'the model'}" if line else scope
    return scope


def _library_roots() -> tuple[str, ...]:
    """Folders of the code a stack trace passes through on its way to an op: torch's own."""
    import os

    import torch

    return (os.path.dirname(torch.__file__),)


def _resolve(tr: Translation, arg: Any) -> Any:
    """A node argument with the nodes in it replaced by their values."""
    if hasattr(arg, "op") and hasattr(arg, "name"):  # an fx.Node
        return tr.values.get(arg.name)
    if isinstance(arg, (list, tuple)):
        return type(arg)(_resolve(tr, a) for a in arg)
    return arg


def _flat(value: Any) -> list[Value]:
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _flat(item)]
    return [value] if isinstance(value, Value) else []


def _materialized(tr: Translation, value: Value) -> str:
    return logical(tr, value, tr.unique("output")).ssa
