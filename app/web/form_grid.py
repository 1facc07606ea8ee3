"""The override form's grid menus: each offers the rows (columns) of the grids that the memory layout
gives every core a shard of the op part's tensors over (the last one partial, as ttnn shards); the
others are disabled, with why in their tooltip. A grid the form holds that no longer fits (another
memory layout, tile or op part) moves to the nearest that does, and says so."""

from __future__ import annotations

from dash import Input, Output, html, no_update

from tilescope.app.web import ids
from tilescope.app.web.callback_context import triggered
from tilescope.app.web.panel import Wiring
from tilescope.app.workbench.grid_choices import GridOption, grid_choice

GRID = dict(
    rows_options=Output(ids.OV_GRID_ROWS, "options"),
    cols_options=Output(ids.OV_GRID_COLS, "options"),
    rows=Output(ids.OV_GRID_ROWS, "value", allow_duplicate=True),
    cols=Output(ids.OV_GRID_COLS, "value", allow_duplicate=True),
    note=Output(ids.OV_GRID_NOTE, "children"),
)
KEPT = {ids.OV_GRID_ROWS: "rows", ids.OV_GRID_COLS: "cols"}  # the dimension a user just chose


def note() -> html.Div:
    return html.Div(id=ids.OV_GRID_NOTE, className="hint")


def _options(offered: tuple[GridOption, ...]) -> list[dict]:
    return [
        {"label": str(o.value), "value": o.value, "disabled": True, "title": o.why_not}
        if o.why_not
        else {"label": str(o.value), "value": o.value}
        for o in offered
    ]


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=GRID,
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            selected=Input(ids.SELECTED_OP, "data"),
            applies_to=Input(ids.OV_APPLIES_TO, "value"),
            memory_layout=Input(ids.OV_MEMORY_LAYOUT, "value"),
            tile=Input(ids.OV_TILE, "value"),
            rows=Input(ids.OV_GRID_ROWS, "value"),
            cols=Input(ids.OV_GRID_COLS, "value"),
        ),
        prevent_initial_call=True,
    )
    def offer_grids(run_id, selected, applies_to, memory_layout, tile, rows, cols):
        """The grids the op part's tensors divide into, under the form's memory layout and tile."""
        if run_id is None or explorer.view(run_id).compilation is None:  # none, or a measured run's
            return no_update
        try:
            grid = (int(rows), int(cols))
        except (TypeError, ValueError):
            grid = (1, 1)  # not a grid the menus offer: any that divides
        kept = KEPT.get(triggered())
        choice = grid_choice(explorer.view(run_id), selected, applies_to, memory_layout, tile, grid, kept)
        moved = choice.grid != grid
        return dict(
            rows_options=_options(choice.rows),
            cols_options=_options(choice.cols),
            rows=choice.grid[0] if moved else no_update,
            cols=choice.grid[1] if moved else no_update,
            # said when the grid moved (its own move does not call this again), gone at the next change
            note=choice.moved or None,
        )

    return {"offer_grids": offer_grids}
