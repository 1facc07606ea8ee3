"""The line under the run bar while the chosen model opens: what is opening, and, for a model that
has no run there yet, the stage its compile is at (importing, compiling, simulating, storing),
polled from the server while the run bar's choose_model waits for it."""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update

from tilescope.app.web import ids
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.workbench import openings

STAGE_POLL_MS = 500  # how often a page waiting for a model to open asks for its stage


def layout(_page: PageContext) -> list:
    return [
        # shown only while choose_model runs (its `running` outputs), after a moment (style.css)
        html.Div(
            [html.Span(id=ids.COMPILE_OPENING), html.Span(id=ids.COMPILE_STAGE, className="compile-stage")],
            id=ids.COMPILE_PROGRESS,
            className="compile-progress",
        ),
        dcc.Interval(id=ids.COMPILE_POLL, interval=STAGE_POLL_MS, disabled=True),
    ]


def register(wiring: Wiring) -> dict:
    @wiring.app.callback(
        Output(ids.COMPILE_STAGE, "children"),
        Input(ids.COMPILE_POLL, "n_intervals"),
        State(ids.MODEL_SELECT, "value"),
        State(ids.TARGET_SELECT, "value"),
        State(ids.POLICY_SELECT, "value"),
        State(ids.DISPATCH_SELECT, "value"),
        State(ids.DATA_TILING, "value"),
        prevent_initial_call=True,
    )
    def show_stage(_ticks, model, target, policy, dispatch, data_tiling):
        """The stage of the compile the page waits for; unchanged while none is known here (none
        said yet, a model with a run that opens slowly, or another of a server's workers
        compiling it). choose_model clears it as it starts and ends."""
        stage = openings.stage_of(openings.key(model, target, policy, dispatch, data_tiling))
        return f" Now {stage}\u2026" if stage else no_update

    return {"show_stage": show_stage}


def in_browser(app) -> None:
    # what is being opened, written at once in the browser; shown only while choose_model runs
    app.clientside_callback(
        ClientsideFunction("run_bar", "opening"),
        Output(ids.COMPILE_OPENING, "children"),
        Input(ids.MODEL_SELECT, "value"),
        Input(ids.TARGET_SELECT, "value"),
        Input(ids.POLICY_SELECT, "value"),
        Input(ids.DISPATCH_SELECT, "value"),
    )


PANEL = Panel("bar", "Opening", "opening", layout, register, in_browser)
