"""The address bar: it names the view (model, target, policy, dispatch, level, run, selected op and
diff pair), so a link reproduces what its sender saw. It is read as the page opens and again on
Back and Forward, which the page then follows, and written as the view changes: at once when
another model, target, policy or dispatch is chosen, filled in once its run is found."""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output, State, dcc, no_update

from tilescope.compiler.targets.chip import DEFAULT_DISPATCH

from tilescope.app.web import ids
from tilescope.app.web import url_state
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.web.url_state import Shown, ViewState


def layout(_page: PageContext) -> list:
    return [
        dcc.Location(id=ids.URL, refresh=False),
        dcc.Store(id=ids.URL_STATE, data=None),
        dcc.Store(id=ids.URL_SHOWN, data=None),
        dcc.Store(id=ids.URL_WANTED, data=None),
        dcc.Store(id=ids.URL_OPENING, data=None),
    ]


def _values(options: list) -> set:
    """The values a dcc menu offers, given as plain values or {label, value} dicts."""
    return {o["value"] if isinstance(o, dict) else o for o in options or []}


def _shown(shown: Shown | None):
    return no_update if shown is None else {"search": shown.search, "opening": shown.opening}


def _wanted(wanted: url_state.Wanted | None):
    return no_update if wanted is None else {"search": wanted.search, "replace": wanted.replace}


def register(wiring: Wiring) -> dict:
    return _register_read(wiring) | _register_write(wiring)


def _register_read(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=dict(
            model_options=Output(ids.MODEL_SELECT, "options", allow_duplicate=True),
            model=Output(ids.MODEL_SELECT, "value", allow_duplicate=True),
            target=Output(ids.TARGET_SELECT, "value"),
            policy=Output(ids.POLICY_SELECT, "value"),
            dispatch=Output(ids.DISPATCH_SELECT, "value"),
            data_tiling=Output(ids.DATA_TILING, "value"),
            level=Output(ids.LEVEL_SELECT, "value"),
            selected=Output(ids.SELECTED_OP, "data", allow_duplicate=True),
            url_state=Output(ids.URL_STATE, "data", allow_duplicate=True),
            shown=Output(ids.URL_SHOWN, "data"),
        ),
        inputs=dict(search=Input(ids.URL, "search")),
        state=dict(
            shown=State(ids.URL_SHOWN, "data"),
            targets=State(ids.TARGET_SELECT, "options"),
            policies=State(ids.POLICY_SELECT, "options"),
            tiled=State(ids.DATA_TILING, "value"),
        ),
        prevent_initial_call="initial_duplicate",
    )
    def open_link(search, shown=None, targets=None, policies=None, tiled=()):
        """Show the view the address names: as the page opens, and on Back and Forward (an address
        the page wrote itself is the view already). A target or policy the page does not offer is
        left as it is: a menu would drop it."""
        before = Shown.of(shown)
        if search is None or (before is not None and before.search == search):
            return no_update
        state = url_state.parse(search)

        def given(value, offered=None):
            if value is None or (offered is not None and value not in _values(offered)):
                return no_update
            return value

        return dict(
            model_options=explorer.model_options(state.model) if state.model else no_update,
            model=given(state.model),
            target=given(state.target, targets),
            policy=given(state.policy, policies),
            dispatch=given(state.dispatch),
            # set only when it changes: setting it (to the same) would choose the model's run again
            data_tiling=(["on"] if state.data_tiling else []) if bool(state.data_tiling) != bool(tiled) else no_update,
            level=given(state.level),
            # Back to a view with no op selected clears the selection; a page opening has none
            selected=state.op if before is not None else given(state.op),
            url_state={"run": state.run, "diff": list(state.diff)},
            shown=_shown(Shown(search, opening=True)),
        )

    return {"open_link": open_link}


WRITTEN = dict(wanted=Output(ids.URL_WANTED, "data"), shown=Output(ids.URL_SHOWN, "data", allow_duplicate=True))


def _register_write(wiring: Wiring) -> dict:
    app = wiring.app

    @app.callback(
        output=WRITTEN,
        inputs=dict(
            model=Input(ids.MODEL_SELECT, "value"),
            target=Input(ids.TARGET_SELECT, "value"),
            policy=Input(ids.POLICY_SELECT, "value"),
            level=Input(ids.LEVEL_SELECT, "value"),
            run_id=Input(ids.RUN_SELECT, "value"),
            selected=Input(ids.SELECTED_OP, "data"),
            ticked=Input(ids.TICKED_RUNS, "data"),
            dispatch=Input(ids.DISPATCH_SELECT, "value"),
            data_tiling=Input(ids.DATA_TILING, "value"),
            # the address read or written at once (a Back, another model): filled in once settled
            shown=Input(ids.URL_SHOWN, "data"),
        ),
        prevent_initial_call=True,
    )
    def write_link(
        model, target, policy, level, run_id, selected, ticked, dispatch=DEFAULT_DISPATCH, shown=None, data_tiling=()
    ):
        """The view, as a new history entry; or in place of the address the page is opening (Dash
        runs this once what the opening sets off has settled: its run is an input)."""
        ticked = sorted(ticked or [])
        pair = tuple(ticked) if len(ticked) == 2 else ()
        view = ViewState(model, target, policy, level, run_id, selected, pair, dispatch, bool(data_tiling) or None)
        wanted, now = url_state.written(view, Shown.of(shown))
        return dict(wanted=_wanted(wanted), shown=_shown(now))

    @app.callback(
        output=dict(wanted=Output(ids.URL_OPENING, "data"), shown=Output(ids.URL_SHOWN, "data", allow_duplicate=True)),
        inputs=dict(
            model=Input(ids.MODEL_SELECT, "value"),
            target=Input(ids.TARGET_SELECT, "value"),
            policy=Input(ids.POLICY_SELECT, "value"),
            dispatch=Input(ids.DISPATCH_SELECT, "value"),
            data_tiling=Input(ids.DATA_TILING, "value"),
        ),
        # the bar alone: Dash holds a callback back while another may still change its input or
        # state, and the view's stores wait for the new run
        state=dict(search=State(ids.URL, "search")),
        prevent_initial_call=True,
    )
    def write_opening(model, target, policy, dispatch, search, data_tiling=()):
        """Another model, target, policy or dispatch: the address says so at once, while its run
        is found (or compiled, which may take a while), rather than naming the last view."""
        if search is None:
            return dict(wanted=no_update, shown=no_update)  # not read yet
        bar = url_state.parse(search)
        chosen = ViewState(model, target, policy, dispatch=dispatch, data_tiling=bool(data_tiling) or None)
        opening = url_state.opening(chosen, bar)
        if opening is None:
            return dict(wanted=no_update, shown=no_update)
        new = url_state.encode(opening)
        # chosen again before the last choice's run was found: in place of its address
        wanted = url_state.Wanted(new, replace=bar.run is None)
        return dict(wanted=_wanted(wanted), shown=_shown(Shown(new, opening=True)))

    return {"write_link": write_link, "write_opening": write_opening}


def in_browser(app) -> None:
    # the browser's history, written there (assets/address.js): a new entry or the current one
    # replaced, as dcc.Location only adds entries
    for store in (ids.URL_WANTED, ids.URL_OPENING):
        app.clientside_callback(
            ClientsideFunction("address", "writeHistory"),
            Input(store, "data"),
            State(ids.URL, "id"),
            prevent_initial_call=True,
        )


PANEL = Panel("bar", "Address", "address", layout, register, in_browser)
