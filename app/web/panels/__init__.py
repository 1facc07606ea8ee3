"""The page's panels, in the order the page shows them within their place (app/web/panel.py says
what a panel is). A new panel is one module here, named in PANELS."""

from __future__ import annotations

from collections.abc import Callable

from ..panel import Panel, Wiring
from . import (
    address,
    graph,
    inspector,
    memory,
    mlir,
    override_form,
    roofline,
    run_bar,
    runs,
    statistics,
    summary,
    timeline,
    tune,
)

PANELS: tuple[Panel, ...] = tuple(
    module.PANEL
    for module in (
        run_bar,
        address,
        tune,
        summary,
        graph,
        mlir,
        inspector,
        override_form,
        timeline,
        statistics,
        memory,
        roofline,
        runs,
    )
)


def register(wiring: Wiring) -> dict[str, Callable]:
    """Wire every panel: its server-side callbacks first, then those that run in the browser.
    Returns the callback functions by name, so tests can call them directly."""
    callbacks: dict[str, Callable] = {}
    for panel in PANELS:
        mine = panel.register(wiring)
        if callbacks.keys() & mine.keys():
            raise ValueError(
                f"panel {panel.key}: callbacks named as another panel's: {sorted(callbacks.keys() & mine.keys())}"
            )
        callbacks |= mine
    for panel in PANELS:
        panel.in_browser(wiring.app)
    return callbacks
