"""The override form: the selected op's placement, grid, tiling, dtype, math fidelity and (over
several devices) sharding, a list of overrides pending for the next re-run (added from the form or
a file), and "Apply and re-run"."""

from __future__ import annotations

from dataclasses import asdict

from dash import ALL, Input, Output, State, dcc, html, no_update

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.ir.graph import MEMORY_LAYOUTS, TENSOR_LAYOUTS
from tilescope.overrides import Problems

from tilescope.app.web import form_grid
from tilescope.app.web import ids
from tilescope.app.web.callback_context import triggered
from tilescope.app.web.error_lines import error_line
from tilescope.app.web.jobs import JOB_POLL_MS, reporter
from tilescope.app.web.panel import PageContext, Panel, Wiring, outputs
from tilescope.app.web.style import error, labelled, menu
from tilescope.app.web.rerun_note import delta_note, error_bands
from tilescope.app.workbench.diff import Sides, rerun_delta
from tilescope.app.workbench.override_form import (
    DEFAULT_CHOICE,
    DOUBLE_BUFFER_CHOICES,
    FUSE_CHOICES,
    OUTPUT,
    FormValues,
    applies_to_choices,
    form_values,
    imported_overrides,
    override_choices,
    rejections,
    rerun_overrides,
    rerun_problems,
    sharding_placeholder,
    staged_override,
    with_pending,
)

# the form's fields (FormValues) and the components that hold them
FIELDS = {
    "memory": ids.OV_MEMORY,
    "memory_layout": ids.OV_MEMORY_LAYOUT,
    "rows": ids.OV_GRID_ROWS,
    "cols": ids.OV_GRID_COLS,
    "layout": ids.OV_LAYOUT,
    "dtype": ids.OV_DTYPE,
    "fidelity": ids.OV_FIDELITY,
    "applies_to": ids.OV_APPLIES_TO,
    "tile": ids.OV_TILE,
    "block": ids.OV_BLOCK,
    "subblock": ids.OV_SUBBLOCK,
    "inner_tiles": ids.OV_INNER_TILES,
    "double_buffer": ids.OV_DOUBLE_BUFFER,
    "sharding": ids.OV_SHARDING,
    "fuse": ids.OV_FUSE,
}
SHOWN_PENDING = 100  # pending overrides listed on the page, each with its remove button


def layout(page: PageContext) -> html.Div:
    offered = override_choices(page.target)
    block, subblock, inner_tiles = (
        dcc.Input(id=i, type="text", value="", placeholder="default", debounce=True, className="text-input")
        for i in (ids.OV_BLOCK, ids.OV_SUBBLOCK, ids.OV_INNER_TILES)
    )
    sharding = dcc.Input(
        id=ids.OV_SHARDING, type="text", value="", placeholder="{},{model}", debounce=True, className="text-input"
    )
    fields = [
        labelled("Applies to", menu(ids.OV_APPLIES_TO, [OUTPUT], OUTPUT)),
        labelled("Memory", menu(ids.OV_MEMORY, offered.memories)),
        labelled("Memory layout", menu(ids.OV_MEMORY_LAYOUT, list(MEMORY_LAYOUTS))),
        labelled("Grid rows", menu(ids.OV_GRID_ROWS, offered.rows)),
        labelled("Grid cols", menu(ids.OV_GRID_COLS, offered.cols)),
        labelled("Layout", menu(ids.OV_LAYOUT, list(TENSOR_LAYOUTS))),
        labelled("Dtype", menu(ids.OV_DTYPE, offered.dtypes)),
        labelled("Tile", menu(ids.OV_TILE, offered.tiles, DEFAULT_CHOICE)),
        labelled("Math fidelity", menu(ids.OV_FIDELITY, offered.fidelities)),
        labelled("Matmul block MxNxK", block),
        labelled("Matmul sub-block HxW", subblock),
        labelled("Inner tiles M0xN0xK0", inner_tiles),
        labelled("Double buffer", menu(ids.OV_DOUBLE_BUFFER, list(DOUBLE_BUFFER_CHOICES), DEFAULT_CHOICE)),
        labelled("Fusion", menu(ids.OV_FUSE, list(FUSE_CHOICES), DEFAULT_CHOICE)),
        # per dimension of the output (or the operand "Applies to" names), the mesh axes splitting it
        labelled("Sharding", sharding, id=ids.OV_SHARDING_FIELD, hidden=True),
    ]
    buttons = [
        html.Button("Apply and re-run", id=ids.APPLY_OVERRIDES, n_clicks=0, className="primary", disabled=True),
        html.Button("Add to pending", id=ids.STAGE_OVERRIDE, n_clicks=0, className="secondary", disabled=True),
    ]
    importer = dcc.Upload(
        id=ids.OVERRIDES_UPLOAD, children=html.Span("import overrides file"), className="import", multiple=False
    )
    pending = html.Div(
        [
            html.Div([html.Span("Pending", className="field-label"), importer], className="pending-head"),
            html.Div(id=ids.PENDING_LIST),
        ],
        className="pending",
    )
    return html.Div(
        [
            html.H3("Override"),
            html.Div(fields, className="form-grid"),
            form_grid.note(),
            html.Div(buttons, className="buttons"),
            html.Div(id=ids.APPLY_PROGRESS, className="progress"),
            html.Div(id=ids.OVERRIDE_STATUS, className="status"),
            pending,
        ],
        id=ids.OVERRIDE_FORM,
        className="panel",
    )


def _form_state() -> dict:
    return {name: State(component, "value") for name, component in FIELDS.items()}


SHOWN_OUTCOMES = 20  # overrides listed after a re-run; a run may have thousands


def outcome_list(outcomes: list[dict]) -> html.Ul:
    items = [
        html.Li(
            [
                html.Span(o["status"], className=f"badge {o['status']}"),
                f" {o['spec']}",
                f" - {o['reason']}" if o["reason"] else "",
            ]
        )
        for o in outcomes[:SHOWN_OUTCOMES]
    ]
    if len(outcomes) > SHOWN_OUTCOMES:
        items.append(html.Li(f"... and {len(outcomes) - SHOWN_OUTCOMES:,} more", className="muted"))
    return html.Ul(items, className="outcomes")


def problem_list(problems: Problems) -> html.Div:
    """Why Apply re-ran nothing: every override that cannot apply counted, a page of them named."""
    several = problems.count != 1
    count = f"{problems.count:,} override{'s' * several}"
    them = "them" if several else "it"
    head = error(f"Not re-run: {count} cannot apply, so none was applied. Fix or remove {them}, then apply again.")
    lines = [html.Li(line) for line in problems.lines]
    if problems.more:
        lines.append(html.Li(f"... and {problems.more:,} more", className="muted"))
    return html.Div([head, html.Ul(lines, className="problems")])


FILLED = dict(
    form={name: Output(component, "value") for name, component in FIELDS.items()},
    applies_to_options=Output(ids.OV_APPLIES_TO, "options"),
    sharding_hidden=Output(ids.OV_SHARDING_FIELD, "hidden"),
    sharding_placeholder=Output(ids.OV_SHARDING, "placeholder"),
    apply_disabled=Output(ids.APPLY_OVERRIDES, "disabled"),
    stage_disabled=Output(ids.STAGE_OVERRIDE, "disabled"),
)


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=FILLED,
        inputs=dict(
            selected=Input(ids.SELECTED_OP, "data"),
            run_id=Input(ids.RUN_SELECT, "value"),
            pending=Input(ids.PENDING_OVERRIDES, "data"),
            applies_to=Input(ids.OV_APPLIES_TO, "value"),
        ),
    )
    def fill_form(selected, run_id, pending=None, applies_to=None):
        """The selected op part's current settings and every knob the run's override of it holds,
        and whether Apply and Add have something to do. Another op shows its output, or the part
        the run overrides; another "Applies to" shows that part."""
        if run_id is None:
            return no_update
        if triggered() == ids.PENDING_OVERRIDES:  # only whether Apply has something to apply
            return outputs(FILLED, apply_disabled=not selected and not pending)
        run = explorer.view(run_id)
        if run.compilation is None:  # a measured run: nothing to re-run
            return outputs(FILLED, sharding_hidden=True, apply_disabled=True, stage_disabled=True)
        values = form_values(run, selected, applies_to if triggered() == ids.OV_APPLIES_TO else None)
        no_op = values.memory is None
        placeholder = sharding_placeholder(run.compilation)  # None: one device, no sharding to set
        return dict(
            form=asdict(values),
            applies_to_options=[
                {"label": f"{c.value} (overridden)" if c.overridden else c.value, "value": c.value}
                for c in applies_to_choices(run, selected)
            ],
            sharding_hidden=placeholder is None,
            sharding_placeholder=placeholder or "",
            apply_disabled=no_op and not pending,
            stage_disabled=no_op,
        )

    @app.callback(
        output=dict(
            memories=Output(ids.OV_MEMORY, "options"),
            dtypes=Output(ids.OV_DTYPE, "options"),
            tiles=Output(ids.OV_TILE, "options"),
            fidelities=Output(ids.OV_FIDELITY, "options"),
        ),
        inputs=dict(target=Input(ids.TARGET_SELECT, "value")),
    )
    def form_choices(target):
        """The form in the target's terms: its memories, dtypes, tile shapes and fidelities (its
        grids: form_grid, as the op part's tensors allow)."""
        try:
            offered = override_choices(explorer.target(target))
        except TilescopeError:
            return no_update
        return dict(
            memories=offered.memories, dtypes=offered.dtypes, tiles=offered.tiles, fidelities=offered.fidelities
        )

    callbacks = {"fill_form": fill_form, "form_choices": form_choices}
    callbacks |= form_grid.register(wiring)
    callbacks |= _register_pending(wiring)
    callbacks |= _register_apply(wiring)
    return callbacks


def _register_pending(wiring: Wiring) -> dict:
    """The pending list: added to from the form or a file, an item removed by its button."""
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=dict(pending=Output(ids.PENDING_OVERRIDES, "data"), status=Output(ids.OVERRIDE_STATUS, "children")),
        inputs=dict(_clicks=Input(ids.STAGE_OVERRIDE, "n_clicks")),
        state=dict(
            run_id=State(ids.RUN_SELECT, "value"),
            selected=State(ids.SELECTED_OP, "data"),
            pending=State(ids.PENDING_OVERRIDES, "data"),
            form=_form_state(),
        ),
        prevent_initial_call=True,
    )
    def stage_override(_clicks, run_id, selected, pending, form):
        """Keep the form's override for the next re-run, to change several ops at once; one that
        cannot apply to the shown run is refused at once, with the reason."""
        if run_id is None:
            return no_update
        try:
            staged = staged_override(explorer.view(run_id), selected, FormValues.sent(form))
            return dict(pending=with_pending(pending or [], staged), status=None)
        except TilescopeError as err:
            return dict(pending=no_update, status=error(f"Not added: {err}"))

    @app.callback(
        output=Output(ids.PENDING_OVERRIDES, "data", allow_duplicate=True),
        inputs=dict(clicks=Input({"type": ids.PENDING_REMOVE, "index": ALL}, "n_clicks")),
        state=dict(pending=State(ids.PENDING_OVERRIDES, "data")),
        prevent_initial_call=True,
    )
    def remove_pending(clicks, pending):
        which = triggered()
        if not isinstance(which, dict) or not any(clicks):
            return no_update  # the list was redrawn, nothing clicked
        return [s for i, s in enumerate(pending or []) if i != which["index"]]

    @app.callback(
        output=Output(ids.PENDING_LIST, "children"), inputs=dict(pending=Input(ids.PENDING_OVERRIDES, "data"))
    )
    def show_pending(pending):
        if not pending:
            return html.P(
                'None. "Add to pending" keeps the form\'s override, to re-run several at once.', className="hint"
            )
        remove = dict(n_clicks=0, className="remove", title="remove")
        items = [
            html.Li([html.Code(s), html.Button("×", id={"type": ids.PENDING_REMOVE, "index": i}, **remove)])
            for i, s in enumerate(pending[:SHOWN_PENDING])
        ]
        if len(pending) > SHOWN_PENDING:  # all are applied; a page of 100,000 rows would not be read
            items.append(html.Li(f"... and {len(pending) - SHOWN_PENDING:,} more", className="hint"))
        return html.Ul(items, className="pending-items")

    @app.callback(
        output=dict(
            pending=Output(ids.PENDING_OVERRIDES, "data", allow_duplicate=True),
            status=Output(ids.OVERRIDE_STATUS, "children", allow_duplicate=True),
            contents=Output(ids.OVERRIDES_UPLOAD, "contents"),
        ),
        inputs=dict(contents=Input(ids.OVERRIDES_UPLOAD, "contents")),
        state=dict(filename=State(ids.OVERRIDES_UPLOAD, "filename"), pending=State(ids.PENDING_OVERRIDES, "data")),
        prevent_initial_call=True,
    )
    def import_overrides(contents, filename, pending):
        """A file of overrides (tilescope JSON, TT-Explorer JSON or tt-mlir options) joins the
        pending list; the items it could not read are listed, one line each."""
        if not contents:
            return no_update
        try:
            found, problems = imported_overrides(filename or "overrides", contents)
            pending = with_pending(pending or [], *found)
        except TilescopeError as err:
            return dict(pending=no_update, status=error(str(err)), contents=None)
        return dict(pending=pending or [], status=imported_note(filename, len(found), problems), contents=None)

    return {f.__name__: f for f in (stage_override, remove_pending, show_pending, import_overrides)}


def imported_note(filename: str, count: int, problems: list[str]) -> list:
    """What an imported file added to the pending list, and a line per item it could not read."""
    added = html.P(f"{filename}: {count:,} override{'s' * (count != 1)} added to pending", className="ok")
    return [added, *(error(p) for p in problems)]


APPLIED = dict(
    run_options=Output(ids.RUN_SELECT, "options", allow_duplicate=True),
    run_id=Output(ids.RUN_SELECT, "value", allow_duplicate=True),
    status=Output(ids.OVERRIDE_STATUS, "children", allow_duplicate=True),
    pending=Output(ids.PENDING_OVERRIDES, "data", allow_duplicate=True),
)


def _register_apply(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=APPLIED,
        inputs=dict(_clicks=Input(ids.APPLY_OVERRIDES, "n_clicks")),
        state=dict(
            run_id=State(ids.RUN_SELECT, "value"),
            selected=State(ids.SELECTED_OP, "data"),
            pending=State(ids.PENDING_OVERRIDES, "data"),
            form=_form_state(),
        ),
        prevent_initial_call=True,
        background=True,
        manager=wiring.rerun_jobs,  # in a thread: the new run's views then find it kept
        interval=JOB_POLL_MS,
        progress=[Output(ids.APPLY_PROGRESS, "children")],
        progress_default=[""],
        running=[(Output(ids.APPLY_OVERRIDES, "disabled"), True, False)],
    )
    def apply_override(set_progress, _clicks, run_id, selected, pending, form):
        """Re-run with the pending overrides and the form's override of the selected op."""
        if run_id is None:
            return no_update
        explorer.in_new_process()
        try:
            parent, problems = explorer.view(run_id), Problems()
            items = rerun_overrides(parent, selected, pending or [], FormValues.sent(form), problems)
            # all or nothing: a run missing some of what was asked for would be read as the answer
            if rerun_problems(parent, items, problems):
                return outputs(APPLIED, status=problem_list(problems))
            new_id, outcomes = explorer.apply_overrides(run_id, items, on_stage=reporter(set_progress, "re-run"))
        except TilescopeError as err:
            return outputs(APPLIED, status=error(str(err)))
        if new_id is None:  # rejected only once planned together (L1 over-full)
            return outputs(APPLIED, status=problem_list(rejections(outcomes)))
        try:
            run = explorer.view(new_id)
            errors = Sides(*(error_bands(explorer.op_records(r)) for r in (run_id, new_id)))
            found = rerun_delta(
                explorer.view(run_id), run, explorer.durations(run_id), explorer.durations(new_id), errors
            )
            options = explorer.run_options(run.model_ref, run.target_ref)
        except Exception as err:  # noqa: BLE001  # whatever failed, the run is stored: say so, or Apply is pressed again
            said = f"run #{new_id} was stored, but showing it failed: {error_line(err)}"
            return outputs(APPLIED, status=error(said), pending=[])
        status = [delta_note(found), outcome_list(outcomes)]
        return dict(run_options=options, run_id=new_id, status=status, pending=[])

    return {"apply_override": apply_override}


PANEL = Panel("side", "Override", "override", layout, register)
