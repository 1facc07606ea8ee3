"""The run summary under the run bar: the shown run's totals per step and its work once per model
load, its settings and overrides, its export (overrides, trace or ops table), and for a measured
run its replay: the report simulated op by op, stored, and compared with the measurement."""

from __future__ import annotations

from dash import ALL, Input, Output, State, dcc, html, no_update

from tilescope.compiler.errors import TilescopeError
from tilescope.overrides import format_item

from tilescope.app.web import ids
from tilescope.app.web.callback_context import triggered
from tilescope.app.web.jobs import page_job, reporter
from tilescope.app.web.panel import PageContext, Panel, Wiring, outputs
from tilescope.app.web.style import all_of, error, some_of
from tilescope.app.web.panels.runs import TAB as RUNS
from tilescope.app.web.panels.statistics import TAB as STATISTICS
from tilescope.app.workbench.load_time import duration_text
from tilescope.app.workbench.export_formats import EXPORT_FORMATS
from tilescope.app.workbench.measured_runs import is_report
from tilescope.app.workbench.run_view import RunView


def layout(_page: PageContext) -> html.Div:
    export = html.Div(
        [
            dcc.Dropdown(
                id=ids.EXPORT_FORMAT,
                options=[{"label": label, "value": k} for k, (label, _) in EXPORT_FORMATS.items()],
                value="chrome",
                clearable=False,
                className="export-format",
            ),
            html.Button("Export", id=ids.EXPORT_BUTTON, n_clicks=0, className="secondary"),
            dcc.Download(id=ids.EXPORT_DOWNLOAD),
        ],
        className="export",
    )
    replay = html.Button("Replay", id=ids.REPLAY_BUTTON, n_clicks=0, className="primary replay", hidden=True)
    return html.Div([html.Div(id=ids.RUN_SUMMARY, className="run-summary"), replay, export], className="summary-row")


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(output=Output(ids.RUN_SUMMARY, "children"), inputs=dict(run_id=Input(ids.RUN_SELECT, "value")))
    def show_summary(run_id):
        if run_id is None:
            return no_update
        run = explorer.view(run_id)
        return summary_children(run, explorer.baseline_id(run) if run.options.overrides else None)

    @wiring.app.callback(
        output=dict(
            download=Output(ids.EXPORT_DOWNLOAD, "data"),
            message=Output(ids.PAGE_MESSAGE, "children", allow_duplicate=True),
        ),
        inputs=dict(_clicks=Input(ids.EXPORT_BUTTON, "n_clicks")),
        state=dict(run_id=State(ids.RUN_SELECT, "value"), fmt=State(ids.EXPORT_FORMAT, "value")),
        prevent_initial_call=True,
    )
    def export_run(_clicks, run_id, fmt):
        if run_id is None:
            return no_update
        try:
            text, filename, note = explorer.export(run_id, fmt)
        except TilescopeError as err:
            return dict(download=no_update, message=error(str(err)))
        return dict(
            download={"content": text, "filename": filename}, message=html.P(note, className="hint") if note else None
        )

    @wiring.app.callback(
        output=Output(ids.ANALYSIS_TABS, "value", allow_duplicate=True),
        inputs=dict(clicks=Input({"type": ids.SHOW_LOAD_OPS, "index": ALL}, "n_clicks")),
        prevent_initial_call=True,
    )
    def show_load_ops(clicks):
        """The load-time ops are listed in the statistics tab: a click on their count opens it."""
        return STATISTICS if any(clicks) else no_update  # else the summary was redrawn, nothing clicked

    @wiring.app.callback(
        output=Output(ids.RUN_SELECT, "value", allow_duplicate=True),
        inputs=dict(clicks=Input({"type": ids.SHOW_BASELINE, "index": ALL}, "n_clicks")),
        prevent_initial_call=True,
    )
    def show_baseline(clicks):
        """The baseline a run with overrides offers: a click shows it."""
        which = triggered()
        if not isinstance(which, dict) or not any(clicks):
            return no_update  # the summary was redrawn, nothing clicked
        return which["index"]

    return {
        "show_summary": show_summary,
        "export_run": export_run,
        "show_load_ops": show_load_ops,
        "show_baseline": show_baseline,
    } | _register_replay(wiring)


OFFERED = dict(
    hidden=Output(ids.REPLAY_BUTTON, "hidden"),
    label=Output(ids.REPLAY_BUTTON, "children"),
    title=Output(ids.REPLAY_BUTTON, "title"),
)
REPLAYED = dict(
    run_options=Output(ids.RUN_SELECT, "options", allow_duplicate=True),
    run_id=Output(ids.RUN_SELECT, "value", allow_duplicate=True),
    tab=Output(ids.ANALYSIS_TABS, "value", allow_duplicate=True),
    message=Output(ids.PAGE_MESSAGE, "children", allow_duplicate=True),
)


def _register_replay(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=OFFERED,
        inputs=dict(run_id=Input(ids.RUN_SELECT, "value"), target=Input(ids.TARGET_SELECT, "value")),
    )
    def offer_replay(run_id, target=None):
        """A measured run read from a report offers its replay, on the target the page names."""
        if run_id is None:
            return no_update
        run = explorer.view(run_id)
        if not (run.measured and is_report(run.model_ref)):
            return dict(hidden=True, label="Replay", title="")
        on = target or run.target_ref
        title = (
            f"Build each op of {run.model_name} as tilescope's IR, simulate it on {on}, store the prediction "
            "as a run and compare it with this measurement op by op (Runs & diff)"
        )
        return dict(hidden=False, label=f"Replay on {on}", title=title)

    @wiring.app.callback(
        output=REPLAYED,
        inputs=dict(clicks=Input(ids.REPLAY_BUTTON, "n_clicks")),
        state=dict(run_id=State(ids.RUN_SELECT, "value"), target=State(ids.TARGET_SELECT, "value")),
        **page_job(ids.REPLAY_PROGRESS, ids.REPLAY_BUTTON),
    )
    def replay_run(set_progress, clicks, run_id, target=None):
        """Replay the shown measured run, then show the replay compared with its measurement (the
        replay's parent): Runs & diff, the replay the shown run. One line when it fails, and
        nothing stored."""
        if not clicks or run_id is None:
            return no_update
        explorer.in_new_process()
        try:
            done = explorer.replay(run_id, target, reporter(set_progress, "replay"))
        except TilescopeError as err:
            return outputs(REPLAYED, message=error(str(err)))
        run = explorer.view(done.run_id)
        return dict(
            run_options=explorer.run_options(run.model_ref, run.target_ref),
            run_id=done.run_id,
            tab=RUNS,
            message=html.Div(
                [
                    html.P(done.line(), className="ok"),
                    html.P("The two compared op by op: Runs & diff, below.", className="hint"),
                ]
            ),
        )

    return {"offer_replay": offer_replay, "replay_run": replay_run}


PANEL = Panel("bar", "Summary", "summary", layout, register)


def summary_children(run: RunView, baseline: int | None = None) -> list:
    """The run, whether it is the model's baseline, its time per step and, when it has any, its work
    once per model load beside it."""
    per_step = " per step" if run.load_ops else ""
    parts = [
        html.Span(f"run #{run.id}", className="pill"),
        *not_baseline(run, baseline),
        # a long model name (an upload's file name) is cut short on one line, whole in the tooltip
        html.Span([html.Span(run.model_name, className="model-name", title=run.model_name), f" on {run.target_name}"]),
        html.Span(f"total {run.total_ns / 1e3:,.1f} us{per_step}", className="metric"),
        html.Span(f"device busy {run.device_ns / 1e3:,.1f} us", className="metric"),
        *load_time(run),
        _settings(run),
    ]
    if run.options.overrides:
        items = [format_item(o) for o in run.options.overrides]
        parts.append(
            html.Span(f"overrides ({len(items)}): {some_of(items)}", title=all_of(items), className="overrides")
        )
    return parts


def _settings(run: RunView) -> html.Span:
    """How the run was made: measured on hardware, or compiled and simulated under a policy and dispatch."""
    if run.measured:
        return html.Span(
            "measured on hardware",
            id=ids.RUN_MEASURED,
            className="measured",
            title="Times measured on the device (an imported profile), not simulated; "
            "device time summed over its devices.",
        )
    if is_report(run.model_ref):
        return html.Span(
            "predicted: a replay of a measured report",
            id=ids.RUN_MEASURED,
            className="measured",
            title="Each op of the report built as tilescope's IR with the shapes, layouts, memory, grid and fidelity "
            "it recorded, simulated alone and laid back to back on its device.",
        )
    tiled = ", data-tiling" if run.options.data_tiling else ""
    return html.Span(f"{run.options.policy} policy, {run.options.dispatch} dispatch{tiled}")


def load_time(run: RunView) -> list:
    """The work the compiler moved out of the step (const-eval), which the model does once when it
    is loaded: not in the total, and not on the timeline."""
    if not run.load_ops:
        return []
    count = len(run.load_ops)
    ops = html.Button(
        f"{count} const-eval op{'s' * (count != 1)}",
        id={"type": ids.SHOW_LOAD_OPS, "index": run.id},
        n_clicks=0,
        className="link",
        title="list them (Statistics tab)",
    )
    return [
        html.Span(
            [html.Span(f"load {duration_text(run.load_ns)}", className="metric"), " once per model load: ", ops],
            id=ids.RUN_LOAD_TIME,
            className="load-time",
            title="Ops on weights and constants only (transposes, reshapes, typecasts, broadcasts), evaluated "
            "once when the model is loaded: not in the time per step.",
        )
    ]


def not_baseline(run: RunView, baseline: int | None) -> list:
    """A run with overrides (a re-run, a tune) says it is not the baseline, and offers the
    baseline (the run with none, under the same policy and dispatch) when one is stored."""
    if not run.options.overrides:
        return []
    count = len(run.options.overrides)
    said = f"not the baseline ({count} override{'s' * (count != 1)})"
    if baseline is None:
        return [html.Span(said, id=ids.RUN_NOT_BASELINE, className="not-baseline")]
    show = html.Button(
        f"show baseline #{baseline}",
        id={"type": ids.SHOW_BASELINE, "index": baseline},
        n_clicks=0,
        className="link",
        title="the run of this model, target, policy and dispatch with no overrides",
    )
    return [html.Span([said, ": ", show], id=ids.RUN_NOT_BASELINE, className="not-baseline")]
