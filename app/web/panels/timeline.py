"""The timeline tab, as Tracy draws one: the device row, then one row per core (its engines in lanes
of its row, if asked), over counter plots on the same time axis. Zones are drawn in the browser on a
canvas (assets/timeline_draw.js) from what the figure holds: the view and a view's width either
side, every row at the level of detail of the view; zoom and pan are drawn there at once, and the
server is asked again only for finer detail or time outside it. Zones show their names where they
fit, hover names a zone with its duration and why, and a click selects its op and pins its card
beside the timeline."""

from __future__ import annotations

import math

from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update

from tilescope.app.web import ids
from tilescope.app.web.callback_context import only_triggered, triggered
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.web.style import LOADING, graph_config, message_figure
from tilescope.app.web.timeline_figure import Window, timeline_figure, view_bounds

SCRIPT = "timeline"  # assets/timeline.js and timeline_draw.js: window.dash_clientside.timeline
# what the script draws in and writes to, handed to it as each callback's last states, in the order
# of timeline.js remember: the figure, the hover card, the pinned card, the range shown, the range
# asked of the server, the selected op
PAGE = (ids.TIMELINE_VIEW, ids.TIMELINE_TIP, ids.TIMELINE_ZONE, ids.TIMELINE_RANGE, ids.TIMELINE_ZOOM, ids.SELECTED_OP)


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
        "then one row per core (of device 0: every device runs the same program on its piece); a measured run "
        "has a row per device, on its own clock, and rows of its traced regions, signposted regions and host ops; "
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


def _finite_range(found) -> tuple[float, float] | None:
    try:
        start, end = (float(v) for v in found)
    except (TypeError, ValueError):
        return None
    return (start, end) if math.isfinite(start) and math.isfinite(end) and start < end else None


def stored_range(stored, run_id: int) -> tuple[float, float] | None:
    """The range (us) of run `run_id` a store holds, as timeline.js writes it ({run, range}): the
    range the browser last drew (TIMELINE_RANGE), or the one it asks for (TIMELINE_ZOOM). Anything
    else (another run's, a page's forged values: text, infinities, an empty or reversed range) is none."""
    if not isinstance(stored, dict) or stored.get("run") != run_id:
        return None
    return _finite_range(stored.get("range"))


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=Output(ids.TIMELINE_VIEW, "figure"),
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            zoom=Input(ids.TIMELINE_ZOOM, "data"),
            shown=Input(ids.TIMELINE_SHOW, "value"),
        ),
        state=dict(selected=State(ids.SELECTED_OP, "data"), drawn=State(ids.TIMELINE_RANGE, "data")),
    )
    def show_timeline(run_id, zoom=None, shown=None, selected=None, drawn=None):
        """The whole run, or on zoom and pan the window shown, every row at one level of detail: the
        query returns a few items per pixel and row whatever the run's size. `shown` adds engine
        lanes and counters, over the range the browser shows (`drawn`)."""
        if run_id is None:
            return no_update
        # a zoom alone, or rows added alone; else a new run, all of it (a first draw's zoom can
        # come with the run, which must not be lost)
        if only_triggered(ids.TIMELINE_ZOOM) or triggered() is None:
            asked = stored_range(zoom, run_id)
            if triggered() is not None and asked is None:
                return no_update  # not a range of this run
        else:  # lanes or counters added or taken away: the view the browser shows kept
            asked = stored_range(drawn, run_id) if only_triggered(ids.TIMELINE_SHOW) else None
        shown = shown or []
        run = explorer.view(run_id)
        total = run.total_ns / 1e3
        view_us, window = _view(asked, total)
        view = explorer.timeline(run, window and (window[0] * 1e3, window[1] * 1e3), engines="engines" in shown)
        loaded = (view.window[0] / 1e3, view.window[1] / 1e3)
        records = {r.name: r for r in explorer.op_records(run_id)}
        return timeline_figure(
            view.items,
            {name: r.kind for name, r in records.items()},
            selected,
            Window(loaded, view_us[1] - view_us[0], view.complete, total, run_id),
            rows=view.rows,
            counters=explorer.counters(run_id) if "counters" in shown else None,
            records=records,
            view=view_us,
            engines="engines" in shown,
        )

    return {"show_timeline": show_timeline}


def _view(asked: tuple[float, float] | None, total: float) -> tuple[tuple[float, float], tuple[float, float] | None]:
    """(the range the axis shows, us: as asked, within the run and its margin; the window of it the
    run holds, None for all of it)."""
    lo, hi = view_bounds(total)
    if asked is None or asked[1] <= 0 or asked[0] >= total:
        return (0.0, total), None
    view = (max(asked[0], lo), min(asked[1], hi))
    return view, (max(view[0], 0.0), min(view[1], total))


def in_browser(app) -> None:
    page = [State(part, "id") for part in PAGE]
    # outlining the selected op's zones is done in the browser, on the zones' canvas (its output
    # is never set: the timeline is not rebuilt)
    app.clientside_callback(
        ClientsideFunction(SCRIPT, "highlight"),
        Output(ids.TIMELINE_TIP, "className", allow_duplicate=True),
        Input(ids.SELECTED_OP, "data"),
        prevent_initial_call=True,
    )
    # the zones' canvas, zoom, pan, the hover card and the zone card a click pins: in the browser,
    # hooked to each figure drawn
    app.clientside_callback(
        ClientsideFunction(SCRIPT, "hook"),
        Output(ids.TIMELINE_TIP, "className"),
        Input(ids.TIMELINE_VIEW, "figure"),
        *page,
    )
    # only the open tab is on the page: as the timeline's opens, its figure is drawn anew, to be
    # hooked, outlined and given the pinned card again; a zone pinned elsewhere (find zone's list)
    # is kept for it, until another run is shown (timeline.js reads which input fired by its place)
    app.clientside_callback(
        ClientsideFunction(SCRIPT, "shown"),
        Output(ids.TIMELINE_TIP, "className", allow_duplicate=True),
        Input(ids.ANALYSIS_TABS, "value"),
        Input(ids.TIMELINE_PIN, "data"),
        Input(ids.RUN_SELECT, "value"),
        State(ids.SELECTED_OP, "data"),
        *page,
        prevent_initial_call=True,
    )


PANEL = Panel("tab", "Timeline", "timeline", layout, register, in_browser)
