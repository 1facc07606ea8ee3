"""The page's frame: the run bar on top, the graph and MLIR on the left, the inspector and the
override form on the right, and below them the analysis tabs; each panel in its place, in the
order PANELS names them. The stores the panels share live here."""

from __future__ import annotations

from dash import dcc, html

from tilescope.app.web import ids
from tilescope.app.web.panel import PageContext, Panel
from tilescope.app.web.panels import PANELS

RUNS_POLL_MS = 5000  # how often the page looks for runs stored by others


def _parts(panel: Panel, page: PageContext) -> list:
    drawn = panel.layout(page)
    return drawn if isinstance(drawn, list) else [drawn]


def _tab(panel: Panel, page: PageContext) -> dcc.Tab:
    return dcc.Tab(
        label=panel.title,
        value=panel.key,
        children=html.Div(_parts(panel, page), className="tab-body"),
        className="tab",
        selected_className="tab selected",
    )


def page(page: PageContext) -> html.Div:
    def placed(where: str) -> list:
        return [part for panel in PANELS if panel.place == where for part in _parts(panel, page)]

    tabs = [_tab(panel, page) for panel in PANELS if panel.place == "tab"]
    return html.Div(
        [
            dcc.Store(id=ids.SELECTED_OP, data=None),
            dcc.Store(id=ids.PENDING_OVERRIDES, data=[]),
            dcc.Store(id=ids.TIMELINE_ZOOM, data=None),
            dcc.Store(id=ids.TIMELINE_RANGE, data=None),
            dcc.Store(id=ids.TIMELINE_PIN, data=None),
            dcc.Interval(id=ids.RUNS_POLL, interval=RUNS_POLL_MS),
            *placed("bar"),
            html.Main(
                [html.Section(placed("main"), className="col-main"), html.Aside(placed("side"), className="col-side")],
                className="workspace",
            ),
            html.Div(
                dcc.Tabs(id=ids.ANALYSIS_TABS, value=tabs[0].value, className="tabs", children=tabs),
                className="panel analysis",
            ),
        ],
        className="page",
    )
