"""The `input` graph of one MLIR function, built from the parsed module op by op: values named,
shapes and element types read (an encoding kept on its tensor), a manual_computation's body inlined
in its place (compiler/frontend/mesh_import.py) and IREE's program structure read through
(compiler/frontend/iree_program.py)."""

from __future__ import annotations

import hashlib
import math
import re
from contextlib import contextmanager

from iree.compiler import ir

from tilescope.compiler.ir.meta import CODE_LINE, LINES, LOC, LineSpan
from tilescope.compiler.ir import dtypes
from tilescope.compiler.errors import ModelLoadError, clip
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.frontend.device_affinity import affinity, place
from tilescope.compiler.frontend.iree_program import RETURNS, Program, read_through
from tilescope.compiler.frontend.mesh_import import MeshReader
from tilescope.compiler.frontend.source_lines import UNKNOWN_LOC, attr_text, code_line, file_line, loc_name

LOADED_ONCE = ("#ttcore.argument_type<parameter>", "#ttcore.argument_type<constant>")

# Tilescope models tensors of up to 2^48 elements (the largest real weights have about 2^31), so
# every size it works out (bytes up to 2^51) is an exact integer in 64 bits.
MAX_ELEMENTS = 2**48
# Names longer than this are shortened (a hash keeps them distinct): views and name scopes do work
# per dotted part, and real names (PyTorch module paths, JAX scopes) stay well under 200 characters.
MAX_NAME_CHARS = 512
# An encoding is kept as written and printed on every level's types: IREE's run to a few hundred
# characters (an encoding with its indexing maps and sizes)
MAX_ENCODING_CHARS = 4096
MAX_BODY_OPS = 16  # of a linalg.generic's body, named on the op (real ones hold a few)
REGION_BODIES = frozenset({"linalg.generic", "linalg.map", "linalg.reduce"})


def shown(name: str) -> str:
    """A name as a one-line message shows it: control characters escaped, long names cut."""
    return clip(name if name.isprintable() else repr(name)[1:-1])


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # control characters and line breaks


def checked_name(name: str, what: str, ref: str, location: ir.Location | None = None) -> str:
    """`name`, shortened past MAX_NAME_CHARS (a hash of the whole keeps it distinct). A control
    character or line break is an error: names are keys of overrides, lines of reports and text in the database
    (where PostgreSQL refuses NUL), and one-line messages quote them."""
    bad = _CONTROL.search(name)
    if bad:
        raise ModelLoadError(
            f"{located(ref, location)}: {what} name '{shown(name)}' has a control character or line break "
            f"(U+{ord(bad.group()):04X})"
        )
    if len(name) > MAX_NAME_CHARS:
        return f"{name[: MAX_NAME_CHARS - 9]}~{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return name


def located(ref: str, location: ir.Location | None) -> str:
    """ref:line:col of a location in the file, or ref alone (no location, or a name or unknown one)."""
    if isinstance(location, ir.FileLineColLoc):
        return f"{ref}:{location.start_line}:{location.start_col}"
    return ref


def _shape_and_dtype(mlir_type: ir.Type) -> tuple[tuple[int, ...], str, str | None] | str:
    """A value type's (shape, dtype, encoding), or why tilescope cannot model it."""
    if isinstance(mlir_type, ir.RankedTensorType):
        shape = tuple(mlir_type.shape)
        if any(d < 0 for d in shape):
            return "dynamic shapes are not supported"
        if 0 in shape:  # no tiles, so nothing to place or time: an error, not a zero-cost op
            return "zero-size tensors are not supported"
        if math.prod(shape) > MAX_ELEMENTS:
            return "tensors of more than 2^48 elements are not supported"
        encoding = str(mlir_type.encoding) if mlir_type.encoding is not None else None
        if encoding is not None and len(encoding) > MAX_ENCODING_CHARS:
            return f"tensor encodings of more than {MAX_ENCODING_CHARS} characters are not supported"
        return shape, dtypes.normalize(str(mlir_type.element_type)), encoding
    if isinstance(mlir_type, ir.UnrankedTensorType):
        return "unranked tensors are not supported"
    return (), dtypes.normalize(str(mlir_type)), None


def _is_handle(mlir_type: ir.Type) -> bool:
    """A runtime handle of IREE's ABI (`!hal.buffer_view`, `!hal.fence`), not a value of the model."""
    return str(mlir_type).startswith("!hal.")


def body_ops(operation) -> str:
    """The ops of a region-bodied op's body (`arith.subf arith.mulf`), its terminator left out:
    what a `linalg.generic` computes per element (compiler/ir/generic_ops.py reads them)."""
    names = [op.operation.name for block in operation.regions[0].blocks for op in block.operations]
    return " ".join(name for name in names[:MAX_BODY_OPS] if not name.endswith(".yield"))


def _attrs_each(func_op, key: str, count: int) -> list[ir.DictAttr | None]:
    """Each argument's (`arg_attrs`) or result's (`res_attrs`) attributes, read once: the bindings'
    `func_op.arg_attrs` builds a new array on every read, so reading it once per argument was
    quadratic (17 s for 3,000 arguments)."""
    if key not in func_op.attributes:
        return [None] * count
    found = [ir.DictAttr(a) for a in ir.ArrayAttr(func_op.attributes[key])]
    return found + [None] * (count - len(found))


def _arg_name(arg_attrs: ir.DictAttr | None, arg) -> str | None:
    if arg_attrs is not None and "ttir.name" in arg_attrs and isinstance(arg_attrs["ttir.name"], ir.StringAttr):
        return ir.StringAttr(arg_attrs["ttir.name"]).value
    return loc_name(arg.location)


def _loaded_once(arg_attrs: ir.DictAttr | None) -> bool:
    """Whether an argument is a weight the runtime loads before the first step: tt-xla and
    tt-torch mark weights `#ttcore.argument_type<parameter>` and buffers `<constant>`; anything
    else (unmarked, `<input>`) may change every step."""
    if arg_attrs is None or "ttcore.argument_type" not in arg_attrs:
        return False
    return str(arg_attrs["ttcore.argument_type"]) in LOADED_ONCE


class _Namer:
    """Stable, distinct tensor names: an op's MLIR loc name when present, else <kind>_<n> counted
    per kind; a name taken before gets #1, #2, ... An op with several results names them
    <name>:<i>, and none of those may be taken either."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.counts: dict[str, int] = {}  # per kind
        self.suffixes: dict[str, int] = {}  # per loc name, its next #k: one try per op, not k tries

    def name(self, loc_name: str | None, base: str, results: int = 1) -> tuple[str, list[str]]:
        """(op name, its result names)."""
        while True:
            if loc_name is None:
                n = self.counts.get(base, 0)
                self.counts[base] = n + 1
                candidate = f"{base}_{n}"
            else:
                k = self.suffixes.get(loc_name, 0)
                self.suffixes[loc_name] = k + 1
                candidate = f"{loc_name}#{k}" if k else loc_name
            outs = [candidate] if results == 1 else [f"{candidate}:{i}" for i in range(results)]
            if candidate not in self.taken and self.taken.isdisjoint(outs):
                self.taken.update((candidate, *outs))
                return candidate, outs


class GraphBuilder:
    """The `input` graph of a function: its ops in program order, a manual_computation's body
    inlined in its place (mesh_import.py)."""

    def __init__(self, ref: str, mesh: MeshReader, program: Program | None = None) -> None:
        self.ref, self.mesh = ref, mesh
        self.program = program or Program(None)
        self.inputs: list[str] = []
        self.placed: dict[str, str] = {}  # input tensor -> the device an affinity puts it on
        self.scope: str | None = None  # the dispatch whose ops are being added
        self.tensors: dict[str, Tensor] = {}
        self.value_names: dict[ir.Value, str] = {}
        self.namer = _Namer()
        self.ops: list[Op] = []
        self.shortened = 0
        # What every op of a kind, value of a type or use of an attribute shares, worked out once:
        # the bindings uniquify types and attributes, so equal ones hash alike.
        self.kinds: dict[str, tuple[str, bool]] = {}  # kind -> (base of unnamed ops' names, shortened)
        # (shape, dtype, encoding) or the problem
        self.types: dict[ir.Type, tuple[tuple[int, ...], str, str | None] | str] = {}
        self.attr_texts: dict[ir.Attribute, str] = {}

    def checked(self, name: str | None, what: str, location: ir.Location) -> str | None:
        if name is None:
            return None
        self.shortened += len(name) > MAX_NAME_CHARS
        return checked_name(name, what, self.ref, location)

    def build(self, func_op, model_name: str) -> Graph:
        entry_block = self.body(func_op, "the function")  # func.func's and util.func's alike
        arguments = list(entry_block.arguments)
        for index, (arg, attributes) in enumerate(zip(arguments, _attrs_each(func_op, "arg_attrs", len(arguments)))):
            if _is_handle(arg.type):  # IREE's ABI: buffer views and fences; hal.tensor.import makes the tensors
                continue
            self.add_input(_arg_name(attributes, arg), arg, _loaded_once(attributes), index)
            self.mesh.value(self.value_names[arg], attributes, located(self.ref, arg.location))
            if attributes is not None and "iree.abi.affinity" in attributes:
                self.place(arg, self.attr_text(attributes["iree.abi.affinity"]))
        for initializer in self.program.initializers:  # load-time work, ahead of the step's
            for mlir_op in self.body(initializer, "util.initializer").operations:
                if mlir_op.operation.name not in RETURNS:
                    self.add(mlir_op.operation)
        outputs: list[str] = []
        for mlir_op in entry_block.operations:
            if mlir_op.operation.name in RETURNS:
                outputs = [self.name_of(v, mlir_op.operation.location) for v in mlir_op.operation.operands]
                for name, attributes in zip(outputs, _attrs_each(func_op, "res_attrs", len(outputs))):
                    self.mesh.value(name, attributes, located(self.ref, func_op.location))
            else:
                self.add(mlir_op.operation)
        graph = Graph(model_name, "input", self.tensors, self.ops, self.inputs, outputs)
        place(graph, self.program.devices, self.placed)
        if self.shortened:
            graph.warnings.append(
                f"{self.shortened} names longer than {MAX_NAME_CHARS} characters shortened (a hash ends each)"
            )
        return graph

    def add_input(self, given: str | None, value, parameter: bool, index: int | None) -> None:
        """A graph input holding `value`: an argument (`index` its position), an imported
        buffer or a global; named `given` where the source names it."""
        location = self.location_of(value)
        given = self.checked(given, "argument", location)
        fallback = f"arg{index}" if index is not None else "global"
        name = self.namer.name(given if given is not None else fallback, "arg")[0]
        self.tensors[name] = self.tensor(name, value.type, location)
        self.tensors[name].is_parameter = parameter
        self.value_names[value] = name
        self.inputs.append(name)

    def place(self, value, affinity_text: str) -> None:
        """The input `value` is on the device an affinity attribute names (a multi-device program)."""
        device = affinity(affinity_text)
        if device is not None:
            self.placed[self.value_names[value]] = device

    def alias(self, value, same_as, location: ir.Location | None = None) -> None:
        """`value` is `same_as`'s tensor (a hand-off, a barrier, a whole load or store)."""
        self.value_names[value] = self.name_of(same_as, location)

    def name_of(self, value, location: ir.Location | None) -> str:
        """The tensor a value of the program is, or one line saying it is none tilescope reads (an
        IREE runtime handle used as data, a value of a region it does not enter)."""
        name = self.value_names.get(value)
        if name is None:
            said = clip(str(value.type))
            raise ModelLoadError(f"{self.where(location)}: reads a value of type {said} that is no tensor it models")
        return name

    def body(self, op, what: str):
        """The one block of an op's first region: a function's, an initializer's, a dispatch's."""
        blocks = [block for region in op.regions[:1] for block in region.blocks]
        if len(blocks) != 1:
            raise ModelLoadError(f"{self.where(op.location)}: {what} has {len(blocks)} blocks; tilescope reads one")
        return blocks[0]

    @contextmanager
    def scoped(self, scope: str):
        """Ops added inside are named `scope.<kind>_<n>` where their source names none."""
        outer, self.scope = self.scope, scope
        try:
            yield
        finally:
            self.scope = outer

    def where(self, location: ir.Location | None) -> str:
        return located(self.ref, location)

    def location_of(self, value) -> ir.Location | None:
        try:
            return value.location
        except (AttributeError, ValueError):  # an op's result has no location of its own
            return value.owner.location

    def add(self, operation) -> None:
        if operation.name == "sdy.manual_computation":
            self.inline_manual(operation)
            return
        if read_through(self, self.program, operation):
            return
        location = operation.location
        op = self.op(operation.name, list(operation.operands), list(operation.results), location)
        attributes = operation.attributes
        op.attrs = {key: self.attr_text(attributes[key]) for key in attributes}
        if operation.name in REGION_BODIES:
            op.attrs["body"] = body_ops(operation)
        self.mesh.op(op, attributes, located(self.ref, location))

    def attr_text(self, attr: ir.Attribute) -> str:
        text = self.attr_texts.get(attr)
        if text is None:
            text = self.attr_texts[attr] = attr_text(attr)
        return text

    def tensor(self, name: str, mlir_type: ir.Type, location: ir.Location) -> Tensor:
        """The tensor of a value; shapes tilescope cannot model are one-line errors naming it."""
        known = self.types.get(mlir_type)
        if known is None:
            known = self.types[mlir_type] = _shape_and_dtype(mlir_type)
        if isinstance(known, str):
            raise ModelLoadError(f"{located(self.ref, location)}: {known}: {shown(name)} is {clip(str(mlir_type))}")
        shape, dtype, encoding = known
        return Tensor(name, shape, dtype, encoding=encoding)

    def kind_base(self, kind: str, location: ir.Location) -> str:
        """`kind` checked, and the base of the names of its ops that have none."""
        known = self.kinds.get(kind)
        if known is None:
            checked_name(kind, "op", self.ref, location)  # kinds are named in warnings, unnamed ops by them
            base = kind.split(".", 1)[-1]
            known = self.kinds[kind] = (checked_name(base, "op", self.ref, location), len(base) > MAX_NAME_CHARS)
        self.shortened += known[1]
        return known[0]

    def op(self, kind: str, operands: list, results: list, location: ir.Location) -> Op:
        """An op of `kind` from MLIR values to MLIR values, named and located."""
        base = self.kind_base(kind, location)
        if self.scope is not None:
            base = f"{self.scope}.{base}"
        named = loc_name(location)
        name, out_names = self.namer.name(self.checked(named, "op", location), base, len(results))
        for value, out_name in zip(results, out_names):
            self.tensors[out_name] = self.tensor(out_name, value.type, location)
            self.value_names[value] = out_name
        op = Op(name=name, kind=kind, inputs=[self.name_of(v, location) for v in operands], outputs=out_names)
        line = file_line(location)
        if line is not None:
            op.meta[LINES] = LineSpan(line, line)
        elif named is not None:
            op.meta[LOC] = named
            made_by = code_line(location)
            if made_by is not None:
                op.meta[CODE_LINE] = made_by
        elif str(location) == "loc(unknown)":
            op.meta[LOC] = UNKNOWN_LOC
        self.ops.append(op)
        return op

    def inline_manual(self, operation) -> None:
        """A manual_computation's body in its place: a full_to_shard per operand gives the body
        its argument, a shard_to_full per result takes what the body returns."""
        where, location = located(self.ref, operation.location), operation.location
        ins, outs, axes = self.mesh.manual(operation, where)
        blocks = [block for region in operation.regions for block in region.blocks]
        body = blocks[0] if len(blocks) == 1 else None
        returned = [o.operation.operands for o in body.operations if o.operation.name == "sdy.return"] if body else []
        if body is None or len(body.arguments) != len(ins) or [len(r) for r in returned] != [len(outs)]:
            raise ModelLoadError(
                f"{where}: manual_computation needs one block taking each operand and returning each result"
            )
        for operand, argument, spec in zip(operation.operands, body.arguments, ins):
            self.mesh.boundary(self.op("sdy.full_to_shard", [operand], [argument], location), spec, axes, where)
        self.mesh.manual_depth += 1
        for inner in body.operations:
            if inner.operation.name != "sdy.return":
                self.add(inner.operation)
        self.mesh.manual_depth -= 1
        for value, result, spec in zip(returned[0], operation.results, outs):
            self.mesh.boundary(self.op("sdy.shard_to_full", [value], [result], location), spec, axes, where)
