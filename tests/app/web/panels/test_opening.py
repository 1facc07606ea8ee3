"""The line under the run bar while a model opens: the stage of its compile, asked for while the
run bar's choose_model waits."""

from __future__ import annotations

import contextlib

from dash import no_update

from tilescope.app.workbench import openings

from .conftest import POLICY, TARGET


def test_the_stage_a_model_is_at_is_shown_while_it_opens_and_nothing_once_none_is(cb):
    model = "zoo:mlp?layers=2"
    with openings.reporting(openings.key(model, TARGET, POLICY, "host", [])) as say:
        assert cb["show_stage"](1, model, TARGET, POLICY, "host", []) is no_update  # nothing said yet
        say("simulating 12 ops")
        assert cb["show_stage"](2, model, TARGET, POLICY, "host", []) == " Now simulating 12 ops\u2026"
        assert cb["show_stage"](3, model, TARGET, POLICY, "trace", []) is no_update  # another opening
    assert cb["show_stage"](4, model, TARGET, POLICY, "host", []) is no_update


def test_choosing_a_model_with_no_run_reports_each_stage_of_its_compile_under_what_the_page_asks_for(cb, monkeypatch):
    said: dict[tuple, list[str]] = {}
    real = openings.reporting

    @contextlib.contextmanager
    def recording(key):
        with real(key) as say:
            yield lambda stage: (said.setdefault(key, []).append(stage), say(stage))

    monkeypatch.setattr(openings, "reporting", recording)
    model = "zoo:mlp?layers=3"
    assert isinstance(cb["choose_model"](model, TARGET, POLICY, None, "host", None, [])["run_id"], int)
    stages = said[openings.key(model, TARGET, POLICY, "host", [])]
    assert stages[:3] == ["reading the model", "importing 15 ops", "compiling"]
    assert stages[3].startswith("simulating ") and stages[4:] == ["storing the run"]
