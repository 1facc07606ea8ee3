"""Tune: search overrides for the shown run within a budget (app.workbench.tuning), in a background
job the page follows and can cancel; the tuned run is then shown, compared with the run it
started from in the Runs & diff tab. The controls sit in the run bar; the progress and the
report, under it."""

from __future__ import annotations

from dash import Input, Output, State, dcc, html

from tilescope.compiler.errors import TilescopeError
from tilescope.overrides.search import LAYOUT_KNOBS, PRECISION_KNOBS
from tilescope.perfdb.errors import RunNotFound

from tilescope.app.web import ids
from tilescope.app.web.job_watch import this_job
from tilescope.app.web.jobs import JOB_POLL_MS, reporter
from tilescope.app.web.panel import PageContext, Panel, Wiring, outputs
from tilescope.app.web.style import error, labelled
from tilescope.app.web.panels.runs import TAB as DIFF_TAB

DEFAULT_BUDGET_S = 30
MAX_BUDGET_S = 600  # a page's search: ten minutes at most of one of the server's few job slots
PRECISION = "precision"


def controls() -> html.Div:
    """The run bar's Tune field: a budget in seconds, whether dtype and fidelity may change, and
    the buttons."""
    budget = dcc.Input(
        id=ids.TUNE_BUDGET,
        type="number",
        min=1,
        max=MAX_BUDGET_S,
        step=1,
        value=DEFAULT_BUDGET_S,
        className="text-input",
    )
    precision = dcc.Checklist(
        id=ids.TUNE_PRECISION,
        options=[{"label": "+precision", "value": PRECISION}],
        value=[],
        className="check",
    )
    buttons = [
        html.Button("Tune", id=ids.TUNE_START, n_clicks=0, className="primary"),
        html.Button("Cancel", id=ids.TUNE_CANCEL, n_clicks=0, className="secondary", disabled=True),
    ]
    row = html.Div(
        [html.Div(budget, className="budget-box"), html.Span("s", className="unit"), precision, *buttons],
        className="tune-controls",
        title=f"Search overrides of the shown run for 1 to {MAX_BUDGET_S} s and show the best set as a new run. "
        "+precision: also try dtypes and math fidelities, which change results.",
    )
    return labelled("Tune (budget)", row, "field tune")


def layout(_page: PageContext) -> list:
    return [html.Div([html.Div(id=ids.TUNE_PROGRESS, className="progress"), html.Div(id=ids.TUNE_STATUS)])]


def budget_of(value) -> float:
    """The budget as the page sends it (a number, or None when the field is empty or out of range)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TilescopeError(f"tune: give a budget of 1 to {MAX_BUDGET_S} seconds")
    if not 1 <= value <= MAX_BUDGET_S:
        raise TilescopeError(f"tune: the budget is 1 to {MAX_BUDGET_S} seconds, got {str(value)[:20]}")
    return float(value)


def report_lines(report) -> list:
    """What a tune found, in a few lines: times, speedups, the roofline gap, the top changes."""
    t, parent = report.tuned, report.parent
    gap = report.roofline_gap or float("inf")
    head = (
        f"Tuned #{report.run_id} from #{parent.id}: {parent.total_ns / 1e3:,.1f} -> {report.total_ns / 1e3:,.1f} us, "
        f"{report.over_parent:.3f}x ({report.gain_text}); {report.over_greedy_text}; "
        f"{gap:.2f}x the roofline bound ({report.roofline_ns / 1e3:,.1f} us). "
        f"{t.trials:,} trials in {t.seconds:.0f} s, {t.stopped}."
    )
    if PRECISION_KNOBS[0] in report.knobs:  # reported apart: they change what the model computes
        head += f" Dtype and fidelity were searched too: {len(t.precision_items())} of the overrides change results."
    changes = [
        html.Li(f"{'-' if ns is None else f'{ns / 1e3:+,.2f} us'}  {label}", className="mono")
        for label, ns in report.contributions[:5]
    ]
    return [
        html.P(head, className="ok"),
        html.Ul(changes, className="tune-changes"),
        *[html.P(line, className="hint") for line in worth_notes(report)],
        *illegal_lines(t.illegal),
    ]


def illegal_lines(illegal, shown: int = 3) -> list:
    """Why candidates were rejected, by family; each family's commonest reasons in full, folded."""
    if not illegal.total:
        return []
    families = illegal.families()
    summary = ", ".join(f"{count:,} {name}" for name, count, _ in families)
    reasons = [
        html.Li(f"{reason.count:,} x {reason.example}", className="mono")
        for _, _, found in families
        for reason in found[:shown]
    ]
    return [
        html.Details(
            [html.Summary(f"{illegal.total:,} candidates were illegal: {summary}"), html.Ul(reasons)],
            className="hint tune-illegal",
        )
    ]


def worth_notes(report) -> list[str]:
    """What the list of what each override is worth means, and why it may say little."""
    notes = ["What the tuned run loses without each; its diff against the start is under Runs & diff."]
    if report.host_bound:
        notes.append(
            f"Host-bound: the device waits {report.host_wait_ns / 1e3:,.1f} us of the {report.total_ns / 1e3:,.1f} us "
            "step for the host to issue its ops, so device changes do not shorten the step; "
            "a run of trace dispatch replays the ops without the host."
        )
    if report.unmeasured:
        why = "the search was cancelled" if report.tuned.stopped.startswith("cancelled") else "its budget had ended"
        notes.append(f"{report.unmeasured} more not measured: {why}.")
    return notes


TUNED = dict(
    run_options=Output(ids.RUN_SELECT, "options", allow_duplicate=True),
    run_id=Output(ids.RUN_SELECT, "value", allow_duplicate=True),
    tab=Output(ids.ANALYSIS_TABS, "value", allow_duplicate=True),
    status=Output(ids.TUNE_STATUS, "children"),
)


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=TUNED,
        inputs=dict(_clicks=Input(ids.TUNE_START, "n_clicks")),
        state=dict(
            run_id=State(ids.RUN_SELECT, "value"),
            budget=State(ids.TUNE_BUDGET, "value"),
            precision=State(ids.TUNE_PRECISION, "value"),
        ),
        prevent_initial_call=True,
        background=True,  # in a process of its own (the app's manager); Cancel asks it to stop and keep its best
        interval=JOB_POLL_MS,
        progress=[Output(ids.TUNE_PROGRESS, "children")],
        progress_default=[""],
        running=[
            (Output(ids.TUNE_START, "disabled"), True, False),
            (Output(ids.TUNE_CANCEL, "disabled"), False, True),
        ],
        cancel=[Input(ids.TUNE_CANCEL, "n_clicks")],
    )
    def tune_run(set_progress, _clicks, run_id, budget, precision=()):
        """Search from the shown run for `budget` seconds, store the best set as its child, show it."""
        if not isinstance(run_id, int) or isinstance(run_id, bool):  # what the page sends: anything
            return outputs(TUNED, status=error("tune: choose a run first"))
        explorer.in_new_process()
        asked = isinstance(precision, list) and PRECISION in precision
        knobs = (*LAYOUT_KNOBS, *PRECISION_KNOBS) if asked else LAYOUT_KNOBS
        job = this_job()
        try:
            report = explorer.tune(
                run_id,
                knobs=knobs,
                budget_s=budget_of(budget),
                progress=reporter(set_progress, "tune"),
                cancelled=job.stops_when_asked() if job else lambda: False,
            )
        except (TilescopeError, RunNotFound) as err:  # a run id is what the page sends: any number
            return outputs(TUNED, status=error(f"tune: {err}" if isinstance(err, RunNotFound) else str(err)))
        parent = report.parent
        return dict(
            run_options=explorer.run_options(parent.model_ref, parent.target_ref),
            run_id=report.run_id,
            tab=DIFF_TAB,
            status=report_lines(report),
        )

    return {"tune_run": tune_run}


PANEL = Panel("bar", "Tune", "tune", layout, register)
