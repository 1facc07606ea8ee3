"""The page's callbacks, called directly as Dash calls them: named inputs in, named outputs out."""

from __future__ import annotations

import base64
from dataclasses import asdict

import pytest

from tilescope.app.web.server import create_app
from tilescope.app.workbench.override_form import FormValues
from tilescope.perfdb import timeline
from tilescope.perfdb.runs import op_records

MODEL = "zoo:mlp?layers=1"
TARGET = "wormhole_n150"
POLICY = "dram-interleaved"
FC1 = "mlp.layer.0.fc1.matmul"  # bias add and gelu fused in
CONSUMER = "mlp.layer.0.fc2.matmul"
STAGES: list = []  # what background jobs reported, newest last


@pytest.fixture
def app(tmp_path):
    return create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, TARGET, job_dir=str(tmp_path / "jobs"))


@pytest.fixture
def cb(app):
    return app.tilescope_callbacks


def progress(value) -> None:
    STAGES.append(value[0])


def form(**fields) -> dict:
    """The override form as the page sends it: a tile layout in bf16 unless said otherwise."""
    return asdict(FormValues(**{"layout": "tile", "dtype": "bf16", **fields}))


def shown_run(cb, model: str = MODEL, target: str = TARGET, policy: str = POLICY, linked=None) -> int:
    """The run the page shows for a model, target and policy (stored first if there is none)."""
    return cb["choose_model"](model, target, policy, linked)["run_id"]


def apply(cb, run_id: int, selected: str | None = FC1, pending=(), **fields) -> dict:
    """ "Apply and re-run" with the form filled in by `fields`."""
    return cb["apply_override"](
        progress, _clicks=1, run_id=run_id, selected=selected, pending=list(pending), form=form(**fields)
    )


def rerun(cb, run_id: int, **fields) -> int:
    """The id of the run an Apply stores."""
    new_id = apply(cb, run_id, **fields)["run_id"]
    assert isinstance(new_id, int), "the re-run stored nothing"
    return new_id


def data_url(data: bytes | str) -> str:
    data = data.encode() if isinstance(data, str) else data
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def records(app, run_id: int) -> dict:
    with app.explorer.sessions() as session:
        return {r.name: r for r in op_records(session, run_id)}


def marked_text(shown: dict) -> str:
    """The lines the MLIR view marks (the selected op's), as the browser draws them."""
    window = shown["window"]
    return "\n".join("\n".join(window["lines"][start:end]) for start, end in window["marks"])


def zones(app, run_id: int, depth: int | None = None) -> list:
    with app.explorer.sessions() as session:
        return timeline.zones(session, run_id, depth=depth)


def fired(prop_id: str, callback, *args, **kwargs):
    """`callback` called as Dash calls it when input `prop_id` ("component.property") changed:
    for callbacks that do something else for each of their inputs."""
    from contextvars import copy_context

    from dash._callback_context import context_value
    from dash._utils import AttributeDict

    def call():
        context_value.set(AttributeDict(triggered_inputs=[{"prop_id": prop_id, "value": None}]))
        return callback(*args, **kwargs)

    return copy_context().run(call)
