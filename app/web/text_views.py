"""The MLIR view, the op inspector and the run summary, as Dash components built from what the
workbench returns."""

from __future__ import annotations

from collections.abc import Sequence

from dash import html

from compiler.pipeline import Compilation
from perfdb.schema import Run


MLIR_PAGE = 500  # lines of MLIR sent to the page at once: a large model's kernel level is megabytes


def mlir_children(text: str, spans: dict[str, tuple[int, int]], selected: Sequence[str], page: int = MLIR_PAGE) -> list:
    """The MLIR text with the selected ops' lines wrapped in <mark>s (the first scrolled into view
    by JS). A text longer than `page` lines is cut to the page around the first selected op (or
    its start), with a line saying which lines are shown."""
    marked = sorted(spans[name] for name in selected if name in spans)
    lines = text.splitlines(keepends=True)
    lo, hi = 0, len(lines)
    if len(lines) > page:
        centre = marked[0][0] if marked else 0
        lo = max(0, min(centre - page // 3, len(lines) - page))
        hi = lo + page
    children: list = []
    if (lo, hi) != (0, len(lines)):
        children.append(
            html.Div(
                f"lines {lo + 1:,}-{hi:,} of {len(lines):,}; select an op to show its lines",
                className="mlir-window",
            )
        )
    at = lo  # lines emitted so far
    for first, last in marked:
        if first - 1 < at or last > hi:
            continue  # nested in a span already marked, or off the page
        children.append("".join(lines[at : first - 1]))
        children.append(html.Mark("".join(lines[first - 1 : last]), className="op-lines"))
        at = last
    children.append("".join(lines[at:hi]))
    return children


def inspector_children(compilation: Compilation, level: str, op_name: str | None, record) -> list:
    if not op_name:
        return [html.P("Click an op in the graph or the timeline.", className="hint")]
    graph = compilation.graph_at(level)
    if not graph.has_op(op_name):
        return [html.P(f"{op_name} is not at the {level} level.", className="hint")]
    op = graph.op(op_name)
    rows: list[tuple[str, str]] = [("op", op.name), ("kind", op.kind)]
    if op.source and op.source != (op.name,):
        rows.append(("from", ", ".join(op.source)))
    for label, names in (("in", op.inputs), ("out", op.outputs)):
        for t in names:
            tensor = graph.tensors[t]
            placed = f"  {tensor.layout.mlir()}" if tensor.layout else ""
            rows.append((label, f"{t}: {tensor.type_str()}{placed}"))
    if "grid" in op.attrs:
        rows.append(("grid", "x".join(map(str, op.attrs["grid"]))))
    if record is not None:
        rows += [
            ("start", f"{record.start_ns / 1e3:,.2f} us"),
            ("duration", f"{record.duration_ns / 1e3:,.2f} us"),
            ("roofline", f"{record.roofline_ns / 1e3:,.2f} us"),
            ("FLOPs", f"{record.flops:,}"),
            ("bytes", ", ".join(f"{k} {v / 1e3:,.1f} KB" for k, v in sorted(record.bytes.items())) or "-"),
            ("cores", str(record.cores)),
            ("bound", record.bound),
            (
                "achieved",
                f"{record.flops / max(record.duration_ns, 1e-9):,.1f} GFLOP/s, {record.pct_peak:.0f}% of peak",
            ),
        ]
        if record.dispatch_wait_ns:
            rows.append(("host wait", f"{record.dispatch_wait_ns / 1e3:,.2f} us before it"))
    table = html.Table([html.Tr([html.Th(k), html.Td(v)]) for k, v in rows], className="kv")
    why = [html.P(record.why, className="why")] if record is not None else []
    return [table, *why]


def summary_children(run: Run) -> list:
    parts = [
        html.Span(f"run #{run.id}", className="pill"),
        html.Span(f"{run.model.name} on {run.target.name}"),
        html.Span(f"total {run.total_ns / 1e3:,.1f} us", className="metric"),
        html.Span(f"device busy {run.device_ns / 1e3:,.1f} us", className="metric"),
        html.Span(f"{run.policy} policy, {run.dispatch} dispatch"),
    ]
    if run.overrides:
        parts.append(html.Span("overrides: " + ", ".join(run.overrides), className="overrides"))
    return parts
