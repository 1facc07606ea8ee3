"""The page as panels: each in its place, each wiring its own callbacks; a new panel is one module
named in PANELS."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest
from dash import Dash, Input, Output, html, no_update

from tilescope.app.web import ids
from tilescope.app.web import page as page_module
from tilescope.app.web import panels
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.web.server import ASSETS, create_app
from tilescope.compiler.targets.catalog import load_target

from .conftest import FC1, MODEL, TARGET, shown_run


def test_every_panel_module_is_named_in_panels_once():
    modules = [
        importlib.import_module(f"tilescope.app.web.panels.{m.name}") for m in pkgutil.iter_modules(panels.__path__)
    ]
    assert sorted(m.PANEL.key for m in modules) == sorted(p.key for p in panels.PANELS)
    assert len({p.key for p in panels.PANELS}) == len(panels.PANELS)


def test_a_new_panel_is_one_module_named_in_one_list(tmp_path, monkeypatch):
    """A panel written elsewhere and added to PANELS gets its tab on the page and its callbacks."""

    def layout(_page):
        return [html.Div(id="ops-count")]

    def register(wiring):
        @wiring.app.callback(Output("ops-count", "children"), Input("run-select", "value"))
        def count_ops(run_id):
            return no_update if run_id is None else f"{len(wiring.explorer.op_records(run_id))} ops"

        return {"count_ops": count_ops}

    extra = Panel("tab", "Op count", "op-count", layout, register)
    monkeypatch.setattr(panels, "PANELS", (*panels.PANELS, extra))
    monkeypatch.setattr(page_module, "PANELS", panels.PANELS)
    app = create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, TARGET, job_dir=str(tmp_path / "jobs"))
    tabs = app.layout.children[-1].children
    assert [t.label for t in tabs.children][-1] == "Op count"
    run_id = shown_run(app.tilescope_callbacks)
    assert app.tilescope_callbacks["count_ops"](run_id) == f"{len(app.explorer.op_records(run_id))} ops"


def test_the_frame_places_each_panel_where_it_says(app):
    page = page_module.page(PageContext([MODEL], MODEL, load_target(TARGET)))
    text = str(page)
    for panel in panels.PANELS:
        if panel.place == "tab":
            assert f"label='{panel.title}'" in text or f'label="{panel.title}"' in text
    assert {p.place for p in panels.PANELS} == {"bar", "main", "side", "tab"}


def test_two_panels_may_not_name_a_callback_alike(app, monkeypatch):
    clash = Panel("tab", "Clash", "clash", lambda _page: [], lambda wiring: {"show_graph": print})
    monkeypatch.setattr(panels, "PANELS", (*panels.PANELS, clash))
    with pytest.raises(ValueError, match="panel clash: callbacks named as another panel's"):
        panels.register(Wiring(Dash(__name__), app.explorer))


def test_hidden_analysis_views_wait_for_their_tab(cb):
    run_id = shown_run(cb)
    assert cb["show_statistics"](run_id, "name", "timeline") is no_update
    assert cb["show_memory"](run_id, "timeline") is no_update
    assert cb["show_roofline"](run_id, FC1, "statistics") is no_update
    assert cb["show_diff"](None, run_id, "memory") is no_update
    assert FC1 in {row["name"] for row in cb["show_statistics"](run_id, "name", "statistics")["data"]}
    assert cb["show_roofline"](run_id, FC1, "roofline").data


def test_what_runs_in_the_browser_is_a_function_of_its_panel_s_script(app):
    """Each callback run in the browser names its function (Dash's ClientsideFunction) in a
    namespace of window.dash_clientside that a script of assets/ of the same name makes: no
    JavaScript is written in Python. (test_browser checks the page has each of them.)"""
    named = [c["clientside_function"] for c in app._callback_list if c.get("clientside_function")]
    assert {n["namespace"] for n in named} >= {"graph", "mlir", "timeline", "run_bar", "runs", "address"}
    assert not app._inline_scripts
    for function in named:
        script = (ASSETS / f"{function['namespace']}.js").read_text()
        assert f"dc.{function['namespace']} = dc.{function['namespace']} || {{}}" in script, function
        assert re.search(rf"\b{function['function_name']}\s*[:=]\s*function\b", script), function


def test_the_scripts_are_handed_the_ids_of_the_page_s_parts_and_type_none():
    """A component's id is written once, in app/web/ids.py: the scripts get the ids they need
    from their callbacks (as states), so renaming one renames it for them too."""
    names = [value for key, value in vars(ids).items() if key.isupper() and isinstance(value, str)]
    for script in sorted(ASSETS.glob("*.js")):
        text = script.read_text()
        typed = [name for name in names if re.search(rf"['\"#]{re.escape(name)}['\". ]", text)]
        assert not typed, f"{script.name} types the ids {typed}"
