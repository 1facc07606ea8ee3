"""The op inspector: the selected op's operands and results, its place in the run (in each step,
or once per model load) and why it takes the time it takes."""

from __future__ import annotations

from dash import Input, Output, html, no_update

from tilescope.compiler.ir.attributes import ints
from tilescope.compiler.ir.meta import CODE_LINE
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.sim.records import TensorUse
from tilescope.perfdb.records import LoadOp

from tilescope.app.web import ids
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.workbench.graph_view import provenance
from tilescope.app.workbench.load_time import duration_text

HINT = "Click an op in the graph or the timeline."


def layout(_page: PageContext) -> html.Div:
    return html.Div([html.H3("Op inspector"), html.Div(HINT, id=ids.OP_INSPECTOR)], className="panel")


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=Output(ids.OP_INSPECTOR, "children"),
        inputs=dict(
            selected=Input(ids.SELECTED_OP, "data"),
            run_id=Input(ids.RUN_SELECT, "value"),
            level=Input(ids.LEVEL_SELECT, "value"),
        ),
    )
    def inspect(selected, run_id, level="graph"):
        if run_id is None:
            return no_update
        view = explorer.view(run_id)
        record = explorer.op_record(run_id, selected) if selected else None
        if view.compilation is None:  # a measured run: what its report says of the op
            return measured_children(selected, record)
        # an op the compiler moved to load time has no record of the step: its load-time timing instead
        loaded = next((op for op in view.load_ops if op.name == selected), None) if record is None else None
        shown = provenance(view.compilation, level, selected)
        return inspector_children(view.compilation, level, shown[0] if shown else selected, record, loaded)

    return {"inspect": inspect}


PANEL = Panel("side", "Op inspector", "inspector", layout, register)


def inspector_children(
    compilation: Compilation, level: str, op_name: str | None, record, loaded: LoadOp | None = None
) -> list:
    if not op_name:
        return [html.P(HINT, className="hint")]
    graph = compilation.graph_at(level)
    if not graph.has_op(op_name):
        return [html.P(f"{op_name} is not at the {level} level.", className="hint")]
    op = graph.op(op_name)
    rows: list[tuple[str, str]] = [("op", op.name), ("kind", op.kind)]
    line = op.meta.get(CODE_LINE)
    if line is not None:  # the line of the model's source that made it (a PyTorch model's Python)
        rows.append(("source", str(line)))
        if line.code:
            rows.append(("code", line.code))
    if op.source and op.source != (op.name,):
        rows.append(("from", ", ".join(op.source)))
    for label, names in (("in", op.inputs), ("out", op.outputs)):
        for t in names:
            tensor = graph.tensors[t]
            placed = f"  {tensor.layout.mlir()}" if tensor.layout else ""
            rows.append((label, f"{t}: {tensor.type_str()}{placed}"))
    tiles = ints(op.attrs.get("inner_tiles") or op.attrs.get("static_inner_tiles"))
    if tiles:  # data-tiling's: a pack's (its two inner dims), an mmt4d's M0 x N0 x K0
        rows.append(("inner tiles", "x".join(map(str, tiles))))
    if "grid" in op.attrs:
        rows.append(("grid", "x".join(map(str, op.attrs["grid"]))))
    if record is not None:
        rows += _timing_rows(record)
    elif loaded is not None:
        rows += [
            ("runs", "once per model load (const-eval), not in each step"),
            ("load time", duration_text(loaded.duration_ns)),
            ("bytes", _bytes(loaded.bytes)),
            ("bound", loaded.bound),
        ]
    table = html.Table([html.Tr([html.Th(k), html.Td(v)]) for k, v in rows], className="kv")
    why = [html.P(record.why, className="why")] if record is not None else []
    return [table, *why]


def measured_children(op_name: str | None, record) -> list:
    """A measured op, as its report lists it: its code and kind, its tensors (shape, dtype, where
    and how they are stored), the program config and fidelity it ran with, and its time."""
    if not op_name:
        return [html.P(HINT, className="hint")]
    if record is None:
        return [html.P(f"{op_name} is not an op of this run.", className="hint")]
    rows: list[tuple[str, str]] = [("op", record.name), ("op code", record.op_code or "-"), ("kind", record.kind)]
    rows.append(("device", str(record.device)))
    with_tensors = _tensors(record)
    for use in with_tensors:
        where = ", ".join(part for part in (use.memory, use.memory_layout, use.layout) if part)
        rows.append((use.role, f"{'x'.join(map(str, use.shape))} {use.dtype}" + (f"  {where}" if where else "")))
    if record.fidelity:
        rows.append(("fidelity", record.fidelity))
    if record.config:
        rows.append(("config", record.config))
    rows += _timing_rows(record)
    table = html.Table([html.Tr([html.Th(k), html.Td(v)]) for k, v in rows], className="kv")
    return [table, html.P(record.why, className="why")]


def _tensors(record) -> list[TensorUse]:
    return [TensorUse.from_dict(t) for t in record.tensors or ()]


def _timing_rows(record) -> list[tuple[str, str]]:
    rows = [
        ("start", f"{record.start_ns / 1e3:,.2f} us"),
        ("duration", duration_with_band(record)),
        ("roofline", f"{record.roofline_ns / 1e3:,.2f} us"),
        ("FLOPs", f"{record.flops:,}"),
        ("bytes", _bytes(record.bytes)),
        ("cores", str(record.cores)),
        ("bound", record.bound),
        ("achieved", f"{record.flops / max(record.duration_ns, 1e-9):,.1f} GFLOP/s, {record.pct_peak:.0f}% of peak"),
    ]
    if record.dispatch_wait_ns:
        rows.append(("host wait", f"{record.dispatch_wait_ns / 1e3:,.2f} us before it"))
    return rows


def duration_with_band(record) -> str:
    """The op's time and, for a prediction, the band its measurements fall within."""
    shown = f"{record.duration_ns / 1e3:,.2f} us"
    band = record.error_band
    if band is None:
        return shown if record.level == "measured" else f"{shown} (no measurements of this chip bound it)"
    return f"{shown} +- {band * record.duration_ns / 1e3:,.2f} us ({record.kind}'s held-out error: +-{band:.0%})"


def _bytes(by_path: dict[str, float]) -> str:
    return ", ".join(f"{k} {v / 1e3:,.1f} KB" for k, v in sorted(by_path.items())) or "-"
