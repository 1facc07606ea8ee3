"""Print a compiler level as MLIR text that MLIR's own parser reads back.

Ops print in generic form in the `ts` dialect, named by `loc("<stable name>")`, with provenance in
`ts.from`. From the `layout` level on, tensor types carry a `#ts.layout<...>` encoding; at the
`kernel` level each op holds one `ts.cores` region per group of cores doing identical work:

    %0 = "ts.matmul"(%arg0, %arg1) ({
      "ts.cores"() ({
        "ts.read"() {bytes = 2048 : i64, path = "dram", tensor = "input"} : () -> ()
        "ts.cb"() {bytes = 8192 : i64, name = "in0", pages = 4, tensor = "input"} : () -> ()
        "ts.compute"() {cycles = 512 : i64, engine = "matrix", fidelity = "hifi2", tiles = 16 : i64} : () -> ()
        "ts.write"() {bytes = 2048 : i64, path = "dram", tensor = "matmul"} : () -> ()
      }) {blocks = 16 : i64, cores = array<i64: 0, 0, 0, 1>} : () -> ()
    }) {grid = array<i64: 8, 8>, ts.from = ["matmul"]} : (...) -> ... loc("matmul")
"""

from __future__ import annotations

import json
from functools import lru_cache

from tilescope.compiler.ir.meta import CODE_LINE, KERNEL, MESH
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.ir.core_work import CoreWork, Kernel


@lru_cache(maxsize=1 << 16)
def _string(text: str) -> str:
    # MLIR string literals take the same escapes as JSON for our names; a kernel level names the
    # same tensors and paths over and over
    return json.dumps(text)


def mlir_string(text: str) -> str:
    """`text` as an MLIR string literal: quotes, backslashes and other than printable ASCII escaped
    as its UTF-8 bytes in hex, as MLIR's lexer reads them."""
    out = []
    for byte in text.encode():
        char = chr(byte)
        out.append(char if 32 <= byte < 127 and char not in '"\\' else f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


def _located(op: Op) -> str:
    """An op's loc: its name, wrapping the line of source code that made it where one is known."""
    line = op.meta.get(CODE_LINE)
    if line is None:
        return _string(op.name)
    position = f"{mlir_string(line.file)}:{line.line}:0"
    inner = f"{mlir_string(line.code)}({position})" if line.code else position
    return f"{_string(op.name)}({inner})"


def _type(tensor: Tensor, with_layout: bool) -> str:
    if with_layout and tensor.layout is not None:
        # one encoding per tensor type: a source's encoding goes inside tilescope's layout
        layout = tensor.layout.mlir()
        if tensor.encoding:
            layout = f"{layout[:-1]}, {tensor.encoding}>"
        dims = "".join(f"{d}x" for d in tensor.shape)
        return f"tensor<{dims}{tensor.dtype}, {layout}>"
    return tensor.type_str()


def _attr_value(value) -> str:
    # an empty tuple (a constraint over no mesh axes) is an empty list: `array<i64: >` does not parse
    if isinstance(value, tuple) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return f"array<i64: {', '.join(map(str, value))}>"
    if isinstance(value, tuple):
        return f"[{', '.join(_attr_value(v) for v in value)}]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{value!r} : f64"
    return _string(str(value))


def _attr_dict(attrs: dict) -> str:
    if not attrs:
        return ""
    body = ", ".join(f"{_key(k)} = {_attr_value(v)}" for k, v in sorted(attrs.items()))
    return f" {{{body}}}"


def _key(name: str) -> str:
    bare = name.replace(".", "").replace("_", "").isalnum() and not name[0].isdigit()
    return name if bare else _string(name)


def _core_group(group: CoreWork, indent: str) -> list[str]:
    # written out key by key (in _attr_dict's sorted order) rather than through _attr_dict: a
    # 100k-op model's kernel level has a million of these lines, and the generic path took 30 s
    inner = indent + "  "
    lines = [f'{indent}"ts.cores"() ({{']
    for t in group.reads:
        where = f"path = {_string(t.path)}, tensor = {_string(t.tensor)}"
        where += ', by = "writer"' if t.by_writer else ""
        lines.append(f'{inner}"ts.read"() {{bytes = {round(t.bytes)} : i64, {where}}} : () -> ()')
    for cb in group.cbs:
        what = f"name = {_string(cb.name)}, pages = {_attr_value(cb.pages)}, tensor = {_string(cb.tensor)}"
        lines.append(f'{inner}"ts.cb"() {{bytes = {round(cb.bytes)} : i64, {what}}} : () -> ()')
    c = group.compute
    fidelity = f", fidelity = {_string(c.fidelity)}" if c.fidelity else ""
    work = f"cycles = {round(c.cycles)} : i64, engine = {_string(c.engine)}{fidelity}, tiles = {_attr_value(c.tiles)}"
    lines.append(f'{inner}"ts.compute"() {{{work}}} : () -> ()')
    for t in group.writes:
        where = f"path = {_string(t.path)}, tensor = {_string(t.tensor)}"
        lines.append(f'{inner}"ts.write"() {{bytes = {round(t.bytes)} : i64, {where}}} : () -> ()')
    cores = _cores(group.cores)
    single = "" if group.double_buffered else ", double_buffer = false"
    single += f", setup_cycles = {round(group.setup_cycles)} : i64" if group.setup_cycles else ""
    lines.append(
        f"{indent}}}) {{blocks = {_attr_value(group.blocks)}, cores = array<i64: {cores}>{single}}} : () -> ()"
    )
    return lines


def _sharding(tensor: Tensor) -> str:
    return tensor.sharding.text() if tensor.sharding is not None else "whole"


@lru_cache(maxsize=1 << 12)
def _cores(cores: tuple[tuple[int, int], ...]) -> str:
    """A core group's coordinates as an i64 array's body: most groups of a model are one of a few
    grids (all 64 cores, a row, ...)."""
    return ", ".join(str(x) for core in cores for x in core)


def _op_lines(
    graph: Graph, op: Op, values: dict[str, str], first: int, with_layout: bool, sharded: bool = False
) -> list[str]:
    results = [f"%{first + i}" for i in range(len(op.outputs))]
    operands = ", ".join(values[t] for t in op.inputs)
    in_types = ", ".join(_type(graph.tensors[t], with_layout) for t in op.inputs)
    out_types = [_type(graph.tensors[t], with_layout) for t in op.outputs]
    out_sig = out_types[0] if len(out_types) == 1 else f"({', '.join(out_types)})"
    attrs = {k: v for k, v in op.attrs.items() if isinstance(v, (str, int, float, tuple)) and k != "fused_kinds"}
    if sharded and any(graph.tensors[t].sharding for t in op.outputs):
        attrs["ts.sharding"] = tuple(_sharding(graph.tensors[t]) for t in op.outputs)
    kernel: Kernel | None = op.meta.get(KERNEL)
    if kernel:
        attrs["program"] = kernel.program
        if kernel.block:
            attrs["block"] = kernel.block
        if kernel.subblock:
            attrs["subblock"] = kernel.subblock
    if op.source:
        attrs_text = _attr_dict(attrs)
        sources = ", ".join(_string(s) for s in op.source)
        attrs_text = (attrs_text[:-1] + ", " if attrs_text else " {") + f"ts.from = [{sources}]}}"
    else:
        attrs_text = _attr_dict(attrs)
    lhs = f"{', '.join(results)} = " if results else ""
    head = f'    {lhs}"ts.{op.kind}"({operands})'
    tail = f"{attrs_text} : ({in_types}) -> {out_sig} loc({_located(op)})"
    for t, r in zip(op.outputs, results):
        values[t] = r
    if not kernel:
        return [head + tail]
    lines = [head + " ({"]
    for group in kernel.groups:
        lines.extend(_core_group(group, "      "))
    lines.append("    })" + tail)
    return lines


def print_graph(graph: Graph) -> tuple[str, dict[str, tuple[int, int]]]:
    """MLIR text of a `graph`, `layout` or `kernel` level graph, and each op's first and last line."""
    with_layout = graph.level in ("layout", "kernel")
    mesh = graph.meta.get(MESH)
    # split over devices: shapes are each device's piece; shardings say how the pieces make the whole
    sharded = graph.level != "graph" and mesh is not None and mesh.devices > 1
    values: dict[str, str] = {}
    args = []
    for i, name in enumerate(graph.inputs):
        values[name] = f"%arg{i}"
        split = f", ts.sharding = {_string(_sharding(graph.tensors[name]))}" if sharded else ""
        args.append(f"%arg{i}: {_type(graph.tensors[name], with_layout)} {{ttir.name = {_string(name)}{split}}}")
    body: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    next_value = 0
    first_body_line = 3  # module header and func signature come first
    for op in graph.ops:
        start = first_body_line + len(body)
        body.extend(_op_lines(graph, op, values, next_value, with_layout, sharded))
        spans[op.name] = (start, first_body_line + len(body) - 1)
        next_value += len(op.outputs)
    out_types = ", ".join(_type(graph.tensors[t], with_layout) for t in graph.outputs)
    returned = ", ".join(values[t] for t in graph.outputs)
    on_mesh = f", ts.mesh = {_string(mesh.mlir())}" if sharded else ""
    header = f"module @{_string(graph.name)} attributes {{ts.level = {_string(graph.level)}{on_mesh}}} {{"
    text = "\n".join(
        [
            header,
            f"  func.func @forward({', '.join(args)}) -> ({out_types}) {{",
            *body,
            f"    return {returned} : {out_types}" if graph.outputs else "    return",
            "  }",
            "}",
            "",
        ]
    )
    return text, spans
