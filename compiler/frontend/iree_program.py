"""IREE's programs, read through to the ops that do the work.

`iree-compile --compile-to=global-optimization` (or `dispatch-creation`) prints a module whose entry
is a `util.func` taking `!hal.buffer_view`s: each is made a tensor by `hal.tensor.import` and handed
back by `hal.tensor.export`, barriers mark where compute may start, weights are `util.global`s a
`util.initializer` may compute at load time, and from dispatch creation on the ops sit in
`flow.dispatch.workgroups` regions that load and store whole tensors. Read as tilescope's `input`
level:

    hal.tensor.import %arg0 "input0"   -> the graph input `input0` (the buffer view is the ABI's)
    hal.tensor.export, barriers        -> the tensor itself (no work)
    util.global.load @w                -> the input `w`, a parameter when the global is immutable
    util.initializer { ... store @g }  -> its ops, ahead of the step's (const-eval times them at load)
    flow.dispatch.workgroups { ... }   -> its ops in its place, named `dispatch_N.<kind>_K`
"""

from __future__ import annotations

from iree.compiler import ir

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.ir import attributes

# ops whose results are their operands, unchanged: ABI hand-offs and scheduling barriers
PASS_THROUGH = frozenset(
    {
        "hal.tensor.export",
        "hal.tensor.barrier",
        "iree_tensor_ext.compute_barrier.start",
        "iree_tensor_ext.compute_barrier.end",
        "util.optimization_barrier",
        "flow.tensor.barrier",
    }
)
DISPATCH_LOADS = frozenset({"iree_tensor_ext.dispatch.tensor.load", "flow.dispatch.tensor.load"})
DISPATCH_STORES = frozenset({"iree_tensor_ext.dispatch.tensor.store", "flow.dispatch.tensor.store"})
RETURNS = frozenset({"func.return", "util.return"})


def symbol(op, key: str) -> str:
    return ir.StringAttr(op.attributes[key]).value if key in op.attributes else ""


class Program:
    """The module around an IREE entry function: its globals by name and its initializers, and
    what the initializers store in globals as they are read."""

    def __init__(self, module_block) -> None:
        self.globals: dict[str, object] = {}
        self.initializers: list = []
        self.stored: dict[str, str] = {}  # global -> the tensor an initializer stored in it
        self.loaded: dict[str, str] = {}  # global -> its input tensor, once a load made one
        self.dispatches = 0
        self.devices: list[str] = []  # the program's device globals, in order (several: multi-device)
        if module_block is None:
            return
        for op in module_block.operations:
            name = op.operation.name
            if name == "util.global":
                self.globals[symbol(op.operation, "sym_name")] = op.operation
                if "type" in op.operation.attributes and str(op.operation.attributes["type"]) == "!hal.device":
                    self.devices.append(symbol(op.operation, "sym_name"))
            elif name == "util.initializer":
                self.initializers.append(op.operation)


def read_through(builder, program: Program, operation) -> bool:
    """Read `operation` if it is part of IREE's program structure rather than work: True when
    it was (the builder adds nothing for it, or what its region holds)."""
    name = operation.name
    if name == "hal.tensor.import":
        result = operation.results[0]
        label = symbol(operation, "name") or None
        builder.add_input(label, result, parameter=False, index=len(builder.inputs))
        if "affinity" in operation.attributes:  # on(#hal.device.affinity<@device_a>)
            builder.place(result, builder.attr_text(operation.attributes["affinity"]))
    elif name in PASS_THROUGH:
        for operand, result in zip(operation.operands, operation.results):
            builder.alias(result, operand, operation.location)
    elif name == "util.global.load":
        _load(builder, program, operation)
    elif name == "util.global.store":
        global_name = ir.FlatSymbolRefAttr(operation.attributes["global"]).value
        program.stored[global_name] = builder.name_of(operation.operands[0], operation.location)
    elif name == "flow.dispatch.workgroups":
        _inline_workgroups(builder, program, operation)
    elif name == "flow.dispatch.region":
        _inline_region(builder, program, operation)
    else:
        return False
    return True


def _load(builder, program: Program, operation) -> None:
    global_name = ir.FlatSymbolRefAttr(operation.attributes["global"]).value
    result = operation.results[0]
    if global_name in program.stored:
        builder.value_names[result] = program.stored[global_name]
    elif global_name in program.loaded:
        builder.value_names[result] = program.loaded[global_name]
    elif str(result.type).startswith("!hal."):
        return  # a device or other runtime handle: no tensor (what reads it is refused by name_of)
    else:
        found = program.globals.get(global_name)
        # an immutable global is loaded once, before the first step: a weight
        loaded_once = found is None or "is_mutable" not in found.attributes
        builder.add_input(global_name, result, parameter=loaded_once, index=None)
        program.loaded[global_name] = builder.value_names[result]


def _scoped(builder, program: Program):
    program.dispatches += 1
    return builder.scoped(f"dispatch_{program.dispatches - 1}")


def _inline_workgroups(builder, program: Program, operation) -> None:
    """A dispatch's body in its place. Its block takes each of the dispatch's arguments (its
    operands past the workload), then each result not tied to an argument; whole-tensor loads
    and stores are the tensors themselves."""
    body = builder.body(operation, "a dispatch")
    args, results = list(body.arguments), list(operation.results)
    operands = _arguments(builder, operation)
    tied_text = (
        builder.attr_text(operation.attributes["tied_operands"]) if "tied_operands" in operation.attributes else ""
    )
    tied = attributes.ints(tied_text)
    for arg, operand in zip(args, operands):
        if operand in builder.value_names:
            builder.alias(arg, operand)
    result_of: dict = {}
    spare = len(operands)
    for index, result in enumerate(results):
        tied_to = tied[index] if index < len(tied) else -1
        if 0 <= tied_to < min(len(operands), len(args)):
            result_of[args[tied_to]] = result
        elif spare < len(args):
            result_of[args[spare]] = result
            spare += 1
    with _scoped(builder, program):
        for inner in body.operations:
            op = inner.operation
            if op.name in DISPATCH_LOADS:
                _load_slice(builder, op)
            elif op.name in DISPATCH_STORES:
                if len(op.operands) < 2 or op.operands[1] not in result_of:
                    raise ModelLoadError(f"{builder.where(op.location)}: a dispatch stores into what is not its result")
                builder.alias(result_of[op.operands[1]], op.operands[0], op.location)
            elif op.name != "flow.return":
                builder.add(op)
    for result in results:
        if result not in builder.value_names:
            raise ModelLoadError(f"{builder.where(operation.location)}: a dispatch's result is never stored")


def _load_slice(builder, op) -> None:
    """A load of a dispatch operand: the tensor itself when whole, else a slice of it."""
    source, result = op.operands[0], op.results[0]
    whole = builder.tensors[builder.name_of(source, op.location)].shape
    if isinstance(result.type, ir.RankedTensorType) and tuple(result.type.shape) == whole:
        builder.alias(result, source, op.location)
    else:
        builder.op("tensor.extract_slice", [source], [result], op.location)


def _inline_region(builder, program: Program, operation) -> None:
    """A dispatch region (before workgroups are formed): its ops read the values around it, and
    what its `flow.return` returns are its results."""
    body = builder.body(operation, "a dispatch region")
    with _scoped(builder, program):
        for inner in body.operations:
            op = inner.operation
            if op.name == "flow.return":
                for result, value in zip(operation.results, op.operands):
                    builder.alias(result, value, op.location)
            else:
                builder.add(op)


def _arguments(builder, operation) -> list:
    """A dispatch's arguments: its operands past the workload, as its operand segments say
    (workload, arguments, their dynamic dims, the results' dynamic dims)."""
    operands = list(operation.operands)
    if "operandSegmentSizes" not in operation.attributes:
        return operands
    segments = attributes.ints(builder.attr_text(operation.attributes["operandSegmentSizes"]))
    workload, count = (*segments, 0, 0)[:2]
    return operands[workload : workload + count]
