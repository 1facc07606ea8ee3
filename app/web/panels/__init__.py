"""The page's panels, in the order the page shows them within their place (app/web/panel.py says
what a panel is). A new panel is one module here, named in PANELS."""

from __future__ import annotations

from collections.abc import Callable

from tilescope.app.web.panel import Panel, Wiring
from tilescope.app.web.panels import address
from tilescope.app.web.panels import graph
from tilescope.app.web.panels import inspector
from tilescope.app.web.panels import memory
from tilescope.app.web.panels import mlir
from tilescope.app.web.panels import opening
from tilescope.app.web.panels import override_form
from tilescope.app.web.panels import roofline
from tilescope.app.web.panels import run_bar
from tilescope.app.web.panels import runs
from tilescope.app.web.panels import statistics
from tilescope.app.web.panels import summary
from tilescope.app.web.panels import timeline
from tilescope.app.web.panels import tune

PANELS: tuple[Panel, ...] = tuple(
    module.PANEL
    for module in (
        run_bar,
        opening,
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
