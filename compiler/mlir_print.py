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

from .ir import Graph, Op, Tensor
from .kernel import CoreWork, Kernel


def _string(text: str) -> str:
    return json.dumps(text)  # MLIR string literals take the same escapes as JSON for our names


def _type(tensor: Tensor, with_layout: bool) -> str:
    base = tensor.type_str()
    if with_layout and tensor.layout is not None:
        return f"{base[:-1]}, {tensor.layout.mlir()}>"
    return base


def _attr_value(value) -> str:
    if isinstance(value, tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
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
    inner = indent + "  "
    lines = [f'{indent}"ts.cores"() ({{']
    for t in group.reads:
        attrs = {"tensor": t.tensor, "path": t.path, "bytes": round(t.bytes)}
        lines.append(f'{inner}"ts.read"(){_attr_dict(attrs)} : () -> ()')
    for cb in group.cbs:
        attrs = {"name": cb.name, "tensor": cb.tensor, "pages": cb.pages, "bytes": round(cb.bytes)}
        lines.append(f'{inner}"ts.cb"(){_attr_dict(attrs)} : () -> ()')
    c = group.compute
    attrs = {"engine": c.engine, "tiles": c.tiles, "cycles": round(c.cycles)}
    if c.fidelity:
        attrs["fidelity"] = c.fidelity
    lines.append(f'{inner}"ts.compute"(){_attr_dict(attrs)} : () -> ()')
    for t in group.writes:
        attrs = {"tensor": t.tensor, "path": t.path, "bytes": round(t.bytes)}
        lines.append(f'{inner}"ts.write"(){_attr_dict(attrs)} : () -> ()')
    cores = tuple(x for core in group.cores for x in core)
    attrs = {"cores": cores, "blocks": group.blocks}
    if not group.double_buffered:
        attrs["double_buffer"] = False
    lines.append(f"{indent}}}){_attr_dict(attrs)} : () -> ()")
    return lines


def _op_lines(graph: Graph, op: Op, values: dict[str, str], first: int, with_layout: bool) -> list[str]:
    results = [f"%{first + i}" for i in range(len(op.outputs))]
    operands = ", ".join(values[t] for t in op.inputs)
    in_types = ", ".join(_type(graph.tensors[t], with_layout) for t in op.inputs)
    out_types = [_type(graph.tensors[t], with_layout) for t in op.outputs]
    out_sig = out_types[0] if len(out_types) == 1 else f"({', '.join(out_types)})"
    attrs = {k: v for k, v in op.attrs.items() if isinstance(v, (str, int, float, tuple)) and k != "fused_kinds"}
    kernel: Kernel | None = op.meta.get("kernel")
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
    tail = f"{attrs_text} : ({in_types}) -> {out_sig} loc({_string(op.name)})"
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
    values: dict[str, str] = {}
    args = []
    for i, name in enumerate(graph.inputs):
        values[name] = f"%arg{i}"
        args.append(f"%arg{i}: {_type(graph.tensors[name], with_layout)} {{ttir.name = {_string(name)}}}")
    body: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    next_value = 0
    first_body_line = 3  # module header and func signature come first
    for op in graph.ops:
        start = first_body_line + len(body)
        body.extend(_op_lines(graph, op, values, next_value, with_layout))
        spans[op.name] = (start, first_body_line + len(body) - 1)
        next_value += len(op.outputs)
    out_types = ", ".join(_type(graph.tensors[t], with_layout) for t in graph.outputs)
    returned = ", ".join(values[t] for t in graph.outputs)
    header = f"module @{_string(graph.name)} attributes {{ts.level = {_string(graph.level)}}} {{"
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
