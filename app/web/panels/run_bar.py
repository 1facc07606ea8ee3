"""The run bar: which model, target, policy, dispatch, level and run the page shows, and an uploaded
model. The address bar, which names the view, is address.py's."""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update

from tilescope.compiler.frontend import zoo
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.ir.graph import LEVELS
from tilescope.compiler.pipeline.options import DEFAULT_POLICY, POLICIES, CompileOptions
from tilescope.compiler.targets.catalog import builtin_names
from tilescope.compiler.targets.chip import DEFAULT_DISPATCH, DISPATCH_MODES

from tilescope.app.web import ids
from tilescope.app.web import url_state
from tilescope.app.web.callback_context import triggered
from tilescope.app.web.panels import tune
from tilescope.app.web.jobs import page_job, reporter
from tilescope.app.web.panel import PageContext, Panel, Wiring, outputs
from tilescope.app.web.style import error, labelled, menu
from tilescope.app.workbench import openings
from tilescope.app.workbench.model_access import MAX_SOURCE_BYTES
from tilescope.app.workbench.runs import target_of


def layout(page: PageContext) -> list:
    upload = dcc.Upload(
        id=ids.MODEL_UPLOAD,
        children=html.Div(
            ["Drop an ", html.B(".mlir"), " or ", html.B(".pt2"), " file or click"],
            title=f"MLIR text, or a PyTorch program saved by torch.export.save (its graph is read, no pickle "
            f"in it opened), up to {MAX_SOURCE_BYTES // 2**20} MiB; larger models: tilescope run on the command line",
        ),
        # a larger file is not sent at all (the server would refuse the request)
        className="upload",
        # no `accept`: the browser would drop another file without a word; the server names why
        multiple=False,
        max_size=MAX_SOURCE_BYTES,
    )
    report = dcc.Upload(
        id=ids.REPORT_UPLOAD,
        children=html.Div(
            ["Drop a ", html.B("profile"), " or click"],
            title="an ops perf report measured on hardware (tt-metal's CSV) or a Chrome/Perfetto trace (JSON), "
            f"up to {MAX_SOURCE_BYTES // 2**20} MiB: stored as a measured run",
        ),
        className="upload",
        multiple=False,
        max_size=MAX_SOURCE_BYTES,
    )
    levels = dcc.RadioItems(
        id=ids.LEVEL_SELECT, options=list(LEVELS), value="graph", inline=True, className="segmented"
    )
    targets = list(dict.fromkeys([*builtin_names(), page.target.name]))
    bar = html.Header(
        [
            html.Div(
                [html.Span("tile", className="brand-a"), html.Span("scope", className="brand-b")], className="brand"
            ),
            labelled(
                "Model", menu(ids.MODEL_SELECT, page.model_options, page.model), "field model", id=ids.MODEL_FIELD
            ),
            labelled("Zoo parameters", _zoo_params(page.model), "field zoo-params"),
            upload,
            report,
            labelled("Target", menu(ids.TARGET_SELECT, targets, page.target.name)),
            labelled("Policy", menu(ids.POLICY_SELECT, list(POLICIES), DEFAULT_POLICY)),
            labelled("Dispatch", menu(ids.DISPATCH_SELECT, list(DISPATCH_MODES), DEFAULT_DISPATCH), "field dispatch"),
            labelled("Data-tiling", _data_tiling(), "field data-tiling"),
            labelled("Level", levels, "field level"),
            labelled("Run", menu(ids.RUN_SELECT, [], None), "field run", id=ids.RUN_FIELD),
            tune.controls(),
        ],
        className="run-bar",
    )
    message = html.Div(
        [
            html.Div(id=ids.UPLOAD_PROGRESS, className="progress"),
            html.Div(id=ids.REPLAY_PROGRESS, className="progress"),
            html.Div(id=ids.PAGE_MESSAGE),
        ],
        className="page-message",
    )
    return [bar, message]


def _data_tiling() -> dcc.Checklist:
    return dcc.Checklist(
        id=ids.DATA_TILING,
        options=[{"label": "pack", "value": "on"}],
        value=[],
        className="segmented",
    )


MAX_PARAMS = 200  # characters of a zoo model's query string: a handful of parameters


def _zoo_params(model: str | None) -> dcc.Input:
    return dcc.Input(
        id=ids.ZOO_PARAMS,
        type="text",
        value=_query(model),
        placeholder="layers=2&seq=128, then Enter",
        maxLength=MAX_PARAMS,
        className="text-input",
    )


def _query(model: str | None) -> str:
    return model.partition("?")[2] if model and zoo.is_zoo(model) else ""


def register(wiring: Wiring) -> dict:
    callbacks = _register_runs(wiring) | _register_model_switch(wiring)
    return callbacks | _register_zoo_params(wiring) | _register_upload(wiring) | _register_report_upload(wiring)


CHOSEN = dict(
    run_options=Output(ids.RUN_SELECT, "options"),
    run_id=Output(ids.RUN_SELECT, "value"),
    status=Output(ids.OVERRIDE_STATUS, "children"),
    url_state=Output(ids.URL_STATE, "data"),
)


def _register_runs(wiring: Wiring) -> dict:
    """The run menu: the shown run of the chosen model, and runs others store."""
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=CHOSEN,
        inputs=dict(
            model=Input(ids.MODEL_SELECT, "value"),
            target=Input(ids.TARGET_SELECT, "value"),
            policy=Input(ids.POLICY_SELECT, "value"),
            linked=Input(ids.URL_STATE, "data"),
            dispatch=Input(ids.DISPATCH_SELECT, "value"),
            data_tiling=Input(ids.DATA_TILING, "value"),
        ),
        state=dict(shown=State(ids.RUN_SELECT, "value")),
        # a model without a run there is compiled, simulated and stored first: say so while it is
        running=[
            (Output(ids.COMPILE_PROGRESS, "className"), "compile-progress busy", "compile-progress"),
            (Output(ids.COMPILE_POLL, "disabled"), False, True),  # the opening panel asks for its stage
            (Output(ids.COMPILE_STAGE, "children"), "", ""),  # not the last opening's
        ],
    )
    def choose_model(model, target, policy, linked=None, dispatch=DEFAULT_DISPATCH, shown=None, data_tiling=()):
        """The baseline run of the model on the target under the policy, dispatch (host: each op
        launched by the host; trace: a captured trace replayed) and data-tiling, or the run a link
        names."""
        if shown is not None and triggered() == ids.URL_STATE and not (linked or {}).get("run"):
            return no_update  # the link's pair ticked, or a link naming no run: the shown run stays
        options = CompileOptions(policy=policy, dispatch=dispatch, data_tiling=bool(data_tiling))
        try:
            with openings.reporting(openings.key(model, target, policy, dispatch, data_tiling)) as say:
                run_id = explorer.ensure_run(model, target, options, on_stage=say)
        except TilescopeError as err:
            return outputs(CHOSEN, status=error(str(err)))
        wanted = (linked or {}).get("run")
        if wanted is not None:
            run = explorer.find_run(wanted)
            # a run of another dispatch is still the one linked: its label and summary say which
            if run is not None and (run.model_ref, target_of(run), run.policy) == (model, target, policy):
                run_id = run.id
            linked = {**linked, "run": None}  # shown once; later choices are the user's
        return dict(
            run_options=explorer.run_options(model, target),
            run_id=run_id,
            status=None,
            url_state=linked if wanted is not None else no_update,
        )

    @app.callback(
        output=Output(ids.RUN_SELECT, "options", allow_duplicate=True),
        inputs=dict(_ticks=Input(ids.RUNS_POLL, "n_intervals")),
        state=dict(
            model=State(ids.MODEL_SELECT, "value"),
            target=State(ids.TARGET_SELECT, "value"),
            options=State(ids.RUN_SELECT, "options"),
        ),
        prevent_initial_call=True,
    )
    def refresh_runs(_ticks, model, target, options):
        """Runs stored by others on a shared database (a CI pipeline, a teammate, the CLI) join the
        run list, and so the runs table, without a reload; the shown run stays."""
        if not model or not target:
            return no_update
        newest = explorer.newest_run_id(model, target)
        if newest is None or newest <= max((o["value"] for o in options or []), default=0):
            return no_update
        return explorer.run_options(model, target)

    return {"choose_model": choose_model, "refresh_runs": refresh_runs}


def _register_model_switch(wiring: Wiring) -> dict:
    """Another model: what the page held of the last one goes."""
    app = wiring.app

    @app.callback(
        output=dict(
            selected=Output(ids.SELECTED_OP, "data", allow_duplicate=True),
            pattern=Output(ids.GRAPH_SEARCH, "value"),
            mlir_search=Output(ids.MLIR_SEARCH, "value"),
        ),
        inputs=dict(model=Input(ids.MODEL_SELECT, "value")),
        state=dict(search=State(ids.URL, "search")),
        prevent_initial_call=True,
    )
    def forget_on_model_switch(model, search):
        """Another model: the selected op and the graph and MLIR searches were the last model's, so they go
        (and with them op= in the address; the ticked pair goes with the run list). A model the
        address names is a link being opened, whose op is kept."""
        named = url_state.parse(search).model
        if named is None or model == named:
            return no_update
        return dict(selected=None, pattern="", mlir_search="")

    return {"forget_on_model_switch": forget_on_model_switch}


ZOO_CHOSEN = dict(
    model_options=Output(ids.MODEL_SELECT, "options", allow_duplicate=True),
    model=Output(ids.MODEL_SELECT, "value", allow_duplicate=True),
    message=Output(ids.PAGE_MESSAGE, "children", allow_duplicate=True),
)


def _register_zoo_params(wiring: Wiring) -> dict:
    """A zoo model's parameters, edited in the run bar: Enter opens the model with them."""
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=Output(ids.ZOO_PARAMS, "value"),
        inputs=dict(model=Input(ids.MODEL_SELECT, "value")),
        prevent_initial_call=True,
    )
    def show_zoo_params(model):
        return _query(model)

    @app.callback(
        output=ZOO_CHOSEN,
        inputs=dict(_submits=Input(ids.ZOO_PARAMS, "n_submit")),
        state=dict(params=State(ids.ZOO_PARAMS, "value"), model=State(ids.MODEL_SELECT, "value")),
        prevent_initial_call=True,
    )
    def apply_zoo_params(_submits, params, model):
        """The model with these parameters, checked first: a bad one is one line, and the model
        shown stays."""
        if not model or not zoo.is_zoo(model):
            return outputs(ZOO_CHOSEN, message=error("parameters apply to zoo models (zoo:...)"))
        params = (params or "").strip().lstrip("?")
        if len(params) > MAX_PARAMS:
            return outputs(ZOO_CHOSEN, message=error(f"zoo parameters: at most {MAX_PARAMS} characters"))
        ref = model.partition("?")[0] + (f"?{params}" if params else "")
        if ref == model:
            return outputs(ZOO_CHOSEN, message=None)
        try:
            zoo.check(ref)
        except TilescopeError as err:
            return outputs(ZOO_CHOSEN, message=error(str(err)))
        return dict(model_options=explorer.model_options(ref), model=ref, message=None)

    return {"show_zoo_params": show_zoo_params, "apply_zoo_params": apply_zoo_params}


def _register_upload(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=dict(
            model_options=Output(ids.MODEL_SELECT, "options"),
            model=Output(ids.MODEL_SELECT, "value"),
            message=Output(ids.PAGE_MESSAGE, "children"),
            contents=Output(ids.MODEL_UPLOAD, "contents"),
        ),
        inputs=dict(contents=Input(ids.MODEL_UPLOAD, "contents")),
        state=dict(
            filename=State(ids.MODEL_UPLOAD, "filename"),
            target=State(ids.TARGET_SELECT, "value"),
            policy=State(ids.POLICY_SELECT, "value"),
            dispatch=State(ids.DISPATCH_SELECT, "value"),
            data_tiling=State(ids.DATA_TILING, "value"),
        ),
        **page_job(ids.UPLOAD_PROGRESS, ids.MODEL_UPLOAD),
    )
    def upload_model(set_progress, contents, filename, target, policy, dispatch=DEFAULT_DISPATCH, data_tiling=()):
        """Compile and simulate an uploaded file, then show it; a bad file is one line on the page.
        The upload's contents are cleared, so dropping the same file again loads it again."""
        if not contents:
            return no_update
        explorer.in_new_process()
        on_stage = reporter(set_progress, filename)
        try:
            options = CompileOptions(policy=policy, dispatch=dispatch, data_tiling=bool(data_tiling))
            ref = explorer.upload(filename or "upload", contents, target, options, on_stage=on_stage)
        except TilescopeError as err:
            return dict(model_options=no_update, model=no_update, message=error(str(err)), contents=None)
        ok = html.P(f"Loaded {filename}.", className="ok")
        return dict(model_options=explorer.model_options(ref), model=ref, message=ok, contents=None)

    return {"upload_model": upload_model}


REPORT_STORED = dict(
    model_options=Output(ids.MODEL_SELECT, "options", allow_duplicate=True),
    model=Output(ids.MODEL_SELECT, "value", allow_duplicate=True),
    target=Output(ids.TARGET_SELECT, "value", allow_duplicate=True),
    run_options=Output(ids.RUN_SELECT, "options", allow_duplicate=True),
    run_id=Output(ids.RUN_SELECT, "value", allow_duplicate=True),
    message=Output(ids.PAGE_MESSAGE, "children", allow_duplicate=True),
    contents=Output(ids.REPORT_UPLOAD, "contents"),
)


def _register_report_upload(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=REPORT_STORED,
        inputs=dict(contents=Input(ids.REPORT_UPLOAD, "contents")),
        state=dict(filename=State(ids.REPORT_UPLOAD, "filename")),
        **page_job(ids.UPLOAD_PROGRESS, ids.REPORT_UPLOAD),
    )
    def upload_report(set_progress, contents, filename):
        """Store an uploaded profile as a measured run and show it, saying what was read; a bad
        file is one line on the page and stores nothing. The contents are cleared, so dropping
        the same file again stores it again."""
        if not contents:
            return no_update
        explorer.in_new_process()
        try:
            found = explorer.upload_report(filename or "profile", contents, reporter(set_progress, filename))
        except TilescopeError as err:
            return outputs(REPORT_STORED, message=error(str(err)), contents=None)
        run = explorer.view(found.run_id)
        lines = found.lines()
        said = html.Div(
            [html.P(lines[0], className="ok"), html.P(" · ".join(s.strip() for s in lines[1:]), className="hint")]
        )
        return dict(
            model_options=explorer.model_options(run.model_ref),
            model=run.model_ref,
            target=run.target_ref,
            run_options=explorer.run_options(run.model_ref, run.target_ref),
            run_id=found.run_id,
            message=said,
            contents=None,
        )

    return {"upload_report": upload_report}


def in_browser(app) -> None:
    # a file over an upload's limit, which the browser sends nothing of, is said on the page
    for upload in (ids.MODEL_UPLOAD, ids.REPORT_UPLOAD):
        app.clientside_callback(
            ClientsideFunction("run_bar", "limit"),
            Output(upload, "className"),
            Input(upload, "id"),
            State(upload, "max_size"),
            State(ids.PAGE_MESSAGE, "id"),
        )
    # a long name (an uploaded file's, a zoo model's with its parameters, a run's overrides) is cut
    # short in its menu, so the bar keeps its lines (style.css): its field's tooltip gives it whole
    for field, select in ((ids.MODEL_FIELD, ids.MODEL_SELECT), (ids.RUN_FIELD, ids.RUN_SELECT)):
        app.clientside_callback(
            ClientsideFunction("run_bar", "menuLabel"),
            Output(field, "title"),
            Input(select, "value"),
            Input(select, "options"),
        )


PANEL = Panel("bar", "Run", "run", layout, register, in_browser)
