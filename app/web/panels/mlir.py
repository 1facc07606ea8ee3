"""The MLIR panel: the selected level as MLIR text, the selected op's lines marked."""

from __future__ import annotations

from collections.abc import Sequence

from dash import Input, Output, html, no_update

from .. import ids
from ..panel import PageContext, Panel, Wiring
from ...workbench.graph_view import provenance

MLIR_PAGE = 500  # lines of MLIR sent to the page at once: a large model's kernel level is megabytes


def layout(_page: PageContext) -> html.Div:
    return html.Div([html.H3("MLIR"), html.Pre(id=ids.MLIR_VIEW, className="mlir")], className="panel")


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=Output(ids.MLIR_VIEW, "children"),
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            level=Input(ids.LEVEL_SELECT, "value"),
            selected=Input(ids.SELECTED_OP, "data"),
        ),
    )
    def show_mlir(run_id, level="graph", selected=None):
        if run_id is None:
            return no_update
        compilation = explorer.view(run_id).compilation
        text, spans = compilation.mlir_with_lines(level)
        return mlir_children(text, spans, provenance(compilation, level, selected))

    return {"show_mlir": show_mlir}


def in_browser(app) -> None:
    app.clientside_callback(
        "function(children) { return window.tilescope.scrollToMark(children); }",
        Output(ids.MLIR_VIEW, "title"),
        Input(ids.MLIR_VIEW, "children"),
    )


PANEL = Panel("main", "MLIR", "mlir", layout, register, in_browser)


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
