"""The IR verifier: the rules every level keeps, checked after each pass, as xDSL verifies an op
and tinygrad its UOp graph. It raises on the first op that breaks a rule, naming the op, the rule
and the pass that ran last, so a pass's bug shows where it is made, not passes later.

    every level         op names unique; each tensor the program names is declared, and defined once
                        (an input or one op's result); ops in dataflow order (an op reads only
                        inputs and results of ops before it); the outputs defined; no tensor
                        declared that the program does not name
    graph and below     every op records the ops it came from; op kinds are the vocabulary's
    layout and kernel   every tensor has a layout; every op a grid of cores
    kernel              every op has its work split over its grid (none for a constant or a view),
                        reading and writing its own tensors
    every level         the graph's and each op's meta hold only keys compiler/ir/meta.py declares,
                        each from its level on

Off by default, as it costs a walk of the graph per pass: the tests switch it on for the whole
suite, and `TILESCOPE_VERIFY=1` does anywhere else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any, Literal, NoReturn

from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.ir.meta_key import MetaKey, declared
from tilescope.compiler.errors import VerifyError
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.core_work import Kernel
from tilescope.compiler.ir.graph import LEVELS, Graph, Op
from tilescope.compiler.ir.tiles import is_view

VERIFY_ENV = "TILESCOPE_VERIFY"


@dataclass(frozen=True)
class Rule:
    name: str
    says: str


UNIQUE_NAMES = Rule("unique-names", "every op has a name of its own")
DECLARED = Rule("declared", "every tensor the program names is in the graph's tensors")
SINGLE_DEFINITION = Rule("single-definition", "every tensor is an input or one op's result, once")
DATAFLOW_ORDER = Rule("dataflow-order", "an op comes after the ops whose results it reads")
DEFINED_OPERANDS = Rule("defined-operands", "every operand is an input or an op's result")
DEFINED_OUTPUTS = Rule("defined-outputs", "every output is an input or an op's result")
NAMED_TENSORS = Rule("named-tensors", "every tensor declared is an input or an op's result")
KNOWN_LEVEL = Rule("known-level", "a graph is at one of the compiler's levels")
PROVENANCE = Rule("provenance", "below input, every op records the ops it came from")
VOCABULARY = Rule("vocabulary", "below input, op kinds are the op vocabulary's, or opaque")
LAYOUTS = Rule("layouts", "from the layout level on, every tensor has a layout")
GRIDS = Rule("grids", "from the layout level on, every op runs on a grid of rows x cols cores")
WORK = Rule("work", "at the kernel level, every op with work to do has it split over its grid")
READS_BACK = ("groupnorm",)  # kinds whose kernels read their own results back
OWN_TENSORS = Rule("own-tensors", "a kernel reads, writes and buffers the op's own tensors")
META_KEYS = Rule("meta-keys", "meta holds only the keys compiler/ir/meta.py declares, from their level on")


def verification_requested() -> bool:
    """Whether compiling verifies after each pass: `TILESCOPE_VERIFY` set, and not to 0."""
    return os.environ.get(VERIFY_ENV, "") not in ("", "0")


def verify(graph: Graph, after: str = "") -> None:
    """Raise VerifyError on the first rule `graph` breaks; `after`: the pass that made it."""
    where = f"{graph.level} level" + (f" after {after}" if after else "")
    if graph.level not in LEVELS:
        _broken(where, KNOWN_LEVEL, None, f"{graph.level!r} is not one of {', '.join(LEVELS)}")
    depth = LEVELS.index(graph.level)
    below_input, laid_out, split = depth > 0, depth >= LEVELS.index("layout"), graph.level == "kernel"
    tensors = graph.tensors
    defined = set(graph.inputs)
    graph_keys, op_keys = _keys_at(depth, "graph"), _keys_at(depth, "op")
    if not graph.meta.keys() <= graph_keys:
        _unknown_keys(where, None, graph.meta.keys() - graph_keys)
    for name in graph.inputs:
        if name not in tensors:
            _broken(where, DECLARED, None, f"input {name!r} is not in the graph's tensors")
    names: set[str] = set()
    for index, op in enumerate(graph.ops):
        if op.name in names:
            _broken(where, UNIQUE_NAMES, op, "another op before it has its name")
        names.add(op.name)
        if not op.meta.keys() <= op_keys:
            _unknown_keys(where, op, op.meta.keys() - op_keys)
        for name in op.inputs:
            if name not in defined:
                _undefined(where, graph, index, name)
        for name in op.outputs:
            if name not in tensors:
                _broken(where, DECLARED, op, f"its result {name!r} is not in the graph's tensors")
            if name in defined:
                _broken(where, SINGLE_DEFINITION, op, f"{name!r} is defined before, as an input or result")
            defined.add(name)
        if below_input:
            _check_below_input(where, op)
        if laid_out:
            _check_grid(where, op)
        if split:
            _check_work(where, graph, op)
    for name in graph.outputs:
        if name not in defined:
            _broken(where, DEFINED_OUTPUTS, None, f"output {name!r} is no input or op's result")
    if len(tensors) > len(defined):  # every tensor defined is declared (above): one declared is not defined
        extra = next(name for name in tensors if name not in defined)
        _broken(where, NAMED_TENSORS, None, f"{extra!r} is declared but no input or op's result")
    if laid_out:
        bare = next((t.name for t in tensors.values() if t.layout is None), None)
        if bare is not None:
            _broken(where, LAYOUTS, None, f"tensor {bare!r} has no layout")


def _keys_at(depth: int, about: Literal["graph", "op"]) -> frozenset[MetaKey[Any]]:
    return frozenset(key for key in declared(about) if LEVELS.index(key.level) <= depth)


def _unknown_keys(where: str, op: Op | None, keys: Iterable[object]) -> NoReturn:
    key = sorted(keys, key=repr)[0]
    if isinstance(key, MetaKey):
        _broken(where, META_KEYS, op, f"its meta holds {key.name!r}, a key of the {key.level} level on")
    _broken(where, META_KEYS, op, f"its meta holds {key!r}, no key compiler/ir/meta.py declares")


def _undefined(where: str, graph: Graph, index: int, name: str) -> NoReturn:
    op = graph.ops[index]
    if name not in graph.tensors:
        _broken(where, DECLARED, op, f"its operand {name!r} is not in the graph's tensors")
    later = next((o for o in graph.ops[index + 1 :] if name in o.outputs), None)
    if later is not None:
        _broken(where, DATAFLOW_ORDER, op, f"it reads {name!r}, the result of {later.name!r} after it")
    _broken(where, DEFINED_OPERANDS, op, f"it reads {name!r}, no input or op's result")


def _check_below_input(where: str, op: Op) -> None:
    if not op.source:
        _broken(where, PROVENANCE, op, "it names no op it came from (ts.from)")
    if op.kind not in opset.KINDS and op.kind != opset.OPAQUE:
        _broken(where, VOCABULARY, op, f"{op.kind!r} is no kind of the vocabulary")


def _check_grid(where: str, op: Op) -> None:
    grid = op.attrs.get("grid")
    if not (isinstance(grid, tuple) and len(grid) == 2 and all(isinstance(n, int) and n > 0 for n in grid)):
        _broken(where, GRIDS, op, f"its grid is {grid!r}")


def _check_work(where: str, graph: Graph, op: Op) -> None:
    if KERNEL not in op.meta:
        _broken(where, WORK, op, "it has no kernel")
    kernel: Kernel | None = op.meta[KERNEL]
    if kernel is None:
        if not _has_no_work(graph, op):
            _broken(where, WORK, op, f"a {op.kind} with work to do has no cores doing it")
        return
    if kernel.grid != op.attrs["grid"] or not kernel.groups:
        split = f"{len(kernel.groups)} groups of cores on grid {kernel.grid}"
        _broken(where, WORK, op, f"its kernel has {split}; the op runs on grid {op.attrs['grid']}")
    # a cache update writes its operand; a group norm reads back the output tiles it wrote
    writes = {*op.inputs, *op.outputs}
    reads = writes if op.kind in READS_BACK else set(op.inputs)
    for group in kernel.groups:
        stray = next((t.tensor for t in group.reads if t.tensor not in reads), None)
        stray = stray or next((t.tensor for t in group.writes if t.tensor not in writes), None)
        stray = stray or next((cb.tensor for cb in group.cbs if cb.tensor not in writes), None)
        if stray is not None:
            _broken(where, OWN_TENSORS, op, f"its kernel moves {stray!r}, not a tensor of the op")


def _has_no_work(graph: Graph, op: Op) -> bool:
    """A constant (made when the model loads), or a view (tiles.is_view)."""
    return opset.op_class(op.kind).engine == "none" or is_view(graph, op)


def _broken(where: str, rule: Rule, op: Op | None, detail: str) -> NoReturn:
    who = f"op {op.name!r}" if op is not None else "the graph"
    raise VerifyError(f"{where}: {who} breaks {rule.name} ({rule.says}): {detail}", rule.name, op.name if op else None)
