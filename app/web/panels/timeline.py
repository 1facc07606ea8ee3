"""The timeline tab, as Tracy draws one: the device row, then one row per core (its engines in lanes
of its row, if asked), over counter plots on the same time axis. Zones are drawn in the browser on a
canvas (tilescope's timeline_draw.js) from what the figure holds: the view and a view's width either
side, every row at the level of detail of the view; zoom and pan are drawn there at once, and the
server is asked again only for finer detail or time outside it. Zones show their names where they
fit, hover names a zone with its duration and why, and a click selects its op and pins its card
beside the timeline."""

from __future__ import annotations

import math

from dash import Input, Output, State, dcc, html, no_update

from tilescope.app.web import ids
from tilescope.app.web.callback_context import only_triggered, triggered
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.web.style import LOADING, graph_config, message_figure
from tilescope.app.web.timeline_figure import MARGIN, Window, timeline_figure


def layout(_page: PageContext) -> list:
    shown = dcc.Checklist(
        id=ids.TIMELINE_SHOW,
        value=["counters"],
        inline=True,
        className="checks",
        options={
            "engines": "engine lanes (reader, compute, writer) in each core row",
            "counters": "counters (L1 in use, DRAM and link bandwidth)",
        },
    )
    hint = html.P(
        "The device row (on several devices, then a row per device and per set of links its collectives use), "
        "then one row per core (of device 0: every device runs the same program on its piece); "
        "wheel to zoom (as far as it turns), drag to pan or (with the zoom tool) select a range, double-click "
        "for the whole run; click a zone to select its op.",
        className="hint",
    )
    card = html.Div(
        html.P("Hover a zone for its time and why; click it to pin it here.", className="hint"),
        id=ids.TIMELINE_ZONE,
        className="zone-card",
    )
    # the wheel and a double click are the timeline's own (timeline.js): a zoom in proportion to the
    # wheel, kept to the run; the modebar keeps the zoom tool and autoscale (the whole run)
    config = {
        **graph_config("timeline"),
        "scrollZoom": False,
        "doubleClick": False,
        "modeBarButtonsToRemove": ["select2d", "lasso2d", "resetScale2d"],
    }
    graph = dcc.Graph(id=ids.TIMELINE_VIEW, config=config, figure=message_figure(LOADING, 240))
    return [
        html.Div([hint, shown], className="timeline-controls"),
        html.Div([graph, card], className="timeline-body"),
        html.Div(id=ids.TIMELINE_TIP, className="zone-tip"),
    ]


def x_window(relayout: dict | None) -> tuple[float, float] | None:
    """The time range (us) a zoom or pan on the timeline set, if it set one: on the zones' axis
    (xaxis) or a counter plot's (xaxis2, ...), which share it. Anything else (a page's forged
    values: text, infinities, an empty or reversed range) sets none."""
    relayout = relayout if isinstance(relayout, dict) else {}
    for axis in sorted({key.split(".")[0] for key in relayout if isinstance(key, str) and key.startswith("xaxis")}):
        found = relayout.get(f"{axis}.range")
        if f"{axis}.range[0]" in relayout:
            found = [relayout[f"{axis}.range[0]"], relayout.get(f"{axis}.range[1]")]
        if (window := _finite_range(found)) is not None:
            return window
    return None


def _finite_range(found) -> tuple[float, float] | None:
    try:
        start, end = (float(v) for v in found)
    except (TypeError, ValueError):
        return None
    return (start, end) if math.isfinite(start) and math.isfinite(end) and start < end else None


def _x_reset(relayout: dict | None) -> bool:
    """Whether the time axis went back to the whole run (autoscale)."""
    return isinstance(relayout, dict) and any(
        isinstance(key, str) and key.startswith("xaxis") and key.endswith(".autorange") and value
        for key, value in relayout.items()
    )


def shown_range(shown, run_id: int) -> tuple[float, float] | None:
    """The range (us) the browser last drew of run `run_id` (the timeline-range store), if any."""
    if not isinstance(shown, dict) or shown.get("run") != run_id:
        return None
    return _finite_range(shown.get("range"))


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=Output(ids.TIMELINE_VIEW, "figure"),
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            relayout=Input(ids.TIMELINE_ZOOM, "data"),
            shown=Input(ids.TIMELINE_SHOW, "value"),
        ),
        state=dict(selected=State(ids.SELECTED_OP, "data"), drawn=State(ids.TIMELINE_RANGE, "data")),
    )
    def show_timeline(run_id, relayout=None, shown=None, selected=None, drawn=None):
        """The whole run, or on zoom and pan the window shown, every row at one level of detail: the
        query returns a few items per pixel and row whatever the run's size. `shown` adds engine
        lanes and counters, over the range the browser shows (`drawn`)."""
        if run_id is None:
            return no_update
        # a zoom alone, or rows added alone; else a new run, all of it (a first draw's relayout
        # event can come with the run, which must not be lost)
        if only_triggered(ids.TIMELINE_ZOOM) or triggered() is None:
            asked = x_window(relayout)
            if triggered() is not None and asked is None and not _x_reset(relayout):
                return no_update  # not a change of the time axis
        else:  # lanes or counters added or taken away: the view the browser shows kept
            asked = shown_range(drawn, run_id) if only_triggered(ids.TIMELINE_SHOW) else None
        shown = shown or []
        run = explorer.view(run_id)
        total = run.total_ns / 1e3
        view_us, window = _view(asked, total)
        view = explorer.timeline(run, window and (window[0] * 1e3, window[1] * 1e3), engines="engines" in shown)
        loaded = (view.window[0] / 1e3, view.window[1] / 1e3)
        return timeline_figure(
            view.items,
            {op.name: op.kind for op in run.compilation.kernel.ops},
            selected,
            Window(loaded, view_us[1] - view_us[0], view.complete, total, run_id),
            rows=view.rows,
            counters=explorer.counters(run_id) if "counters" in shown else None,
            records={r.name: r for r in explorer.op_records(run_id)},
            view=view_us,
            engines="engines" in shown,
        )

    return {"show_timeline": show_timeline}


def _view(asked: tuple[float, float] | None, total: float) -> tuple[tuple[float, float], tuple[float, float] | None]:
    """(the range the axis shows, us: as asked, within the run and its margin; the window of it the
    run holds, None for all of it)."""
    margin = MARGIN * total
    if asked is None or asked[1] <= 0 or asked[0] >= total:
        return (0.0, total), None
    view = (max(asked[0], -margin), min(asked[1], total + margin))
    return view, (max(view[0], 0.0), min(view[1], total))


def in_browser(app) -> None:
    # outlining the selected op's zones is done in the browser, on the zones' canvas (its output
    # is never set: the timeline is not rebuilt)
    app.clientside_callback(
        "function(selected) { return window.tilescope.highlightZones(selected); }",
        Output(ids.TIMELINE_TIP, "className", allow_duplicate=True),
        Input(ids.SELECTED_OP, "data"),
        prevent_initial_call=True,
    )
    # the zones' canvas, zoom, pan, the hover card and the zone card a click pins: in the browser,
    # hooked to each figure drawn (timeline.js)
    app.clientside_callback(
        "function(figure) { return window.tilescope.hookTimeline(figure); }",
        Output(ids.TIMELINE_TIP, "className"),
        Input(ids.TIMELINE_VIEW, "figure"),
    )
    # only the open tab is on the page: as the timeline's opens, its figure is drawn anew, to be
    # hooked, outlined and given the pinned card again; a zone pinned elsewhere (find zone's list)
    # is kept for it, until another run is shown
    app.clientside_callback(
        "function(tab, pin, run, selected) { return window.tilescope.timelineShown(tab, pin, selected); }",
        Output(ids.TIMELINE_TIP, "className", allow_duplicate=True),
        Input(ids.ANALYSIS_TABS, "value"),
        Input(ids.TIMELINE_PIN, "data"),
        Input(ids.RUN_SELECT, "value"),
        State(ids.SELECTED_OP, "data"),
        prevent_initial_call=True,
    )


PANEL = Panel("tab", "Timeline", "timeline", layout, register, in_browser)
