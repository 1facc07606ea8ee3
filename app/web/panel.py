"""The contract of a part of the page: where it sits, what it draws, and the callbacks that keep
it current. A panel is one module of app/web/panels/ exporting PANEL, named once in PANELS."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from dash import Dash, no_update
from dash.background_callback.managers import BaseBackgroundCallbackManager

from tilescope.compiler.targets.chip import Target

from tilescope.app.workbench.explorer import Explorer

Place = Literal["bar", "main", "side", "tab"]  # the run bar on top, the two columns, the analysis tabs


@dataclass(frozen=True)
class PageContext:
    """What the page frame knows when it draws the panels."""

    model_options: list[str]
    model: str
    target: Target


@dataclass(frozen=True)
class Wiring:
    """What a panel's callbacks are given: the app to register them on, and the workbench below."""

    app: Dash
    explorer: Explorer
    rerun_jobs: BaseBackgroundCallbackManager | None = None  # where re-runs go (None: the app's manager)


def _nothing(_app: Dash) -> None:
    return None


@dataclass(frozen=True)
class Panel:
    place: Place
    title: str  # its heading, or its tab's label
    key: str  # its tab's value
    layout: Callable[[PageContext], Any]
    register: Callable[[Wiring], dict[str, Callable]]  # returns its callbacks by name, for tests
    # callbacks that run in the browser; registered after every panel's server-side ones, so a
    # selection's views are asked for before the timeline's outline is redrawn
    in_browser: Callable[[Dash], None] = _nothing


def outputs(names, **given) -> dict:
    """A callback's named outputs: those `given`, the rest left as they are (a group of outputs, such
    as a form's fields, as a group of no_update: Dash checks the result's shape against the outputs')."""
    return {name: given[name] if name in given else _unchanged(names[name]) for name in names}


def _unchanged(spec):
    if isinstance(spec, dict):
        return {key: _unchanged(inner) for key, inner in spec.items()}
    return [no_update] * len(spec) if isinstance(spec, (list, tuple)) else no_update
