"""Tables as AG Grid draws them: it renders only the rows in view, so the per-op statistics of a
100k-op model scroll like those of a small one; sorting and formatting run in the browser."""

from __future__ import annotations

from collections.abc import Sequence

import dash_ag_grid as dag

from tilescope.app.web.style import FONT

# Balham is AG Grid's dense theme, for data-heavy tables; its colours follow the page's
THEME = {
    "function": (
        "themeBalham.withParams({"
        f"fontFamily: '{FONT}', fontSize: 12, foregroundColor: '#1f2933', headerTextColor: '#616e7c', "
        "headerBackgroundColor: '#f5f7fa', borderColor: '#e4e7eb', accentColor: '#2563eb', "
        "rowHoverColor: '#eff6ff', selectedRowBackgroundColor: '#dbeafe', wrapperBorderRadius: 6"
        "})"
    )
}
# every number of a kind reads alike in every table: us to 2 places, counts with separators
_FORMATS = {
    "us": ",.2f",
    "us_ns": ",.3f",  # to the nanosecond: the zones find zone lists may differ by less than 10 ns
    "count": ",d",
    "pct": ".2f",
    "ratio": ".3f",
}
ROW_PX = 25  # Balham's row height


def column(field: str, header: str, kind: str = "text", **more) -> dict:
    """A column: `kind` is "text" (left-aligned, with a filter: find an op among 100k) or a number
    format of _FORMATS (right-aligned; an empty cell for None)."""
    spec = {"field": field, "headerName": header} | {k: v for k, v in more.items() if v is not None}
    if kind == "text":
        return spec | {"filter": "agTextColumnFilter", "tooltipField": field}
    fmt = _FORMATS[kind]
    return spec | {
        "type": "rightAligned",
        "valueFormatter": {"function": f"params.value == null ? '' : d3.format('{fmt}')(params.value)"},
    }


def grid(component_id: str, columns: Sequence[dict], rows: Sequence[dict] = (), height: int = 360, **options):
    """A table of `rows` (each with an "id" that names it in a click's `cellClicked.rowId`)."""
    return dag.AgGrid(
        id=component_id,
        rowData=list(rows),
        columnDefs=list(columns),
        getRowId="'' + params.data.id",  # AG Grid takes strings alone: a run's number warned, and was cast
        defaultColDef={"sortable": True, "resizable": True, "minWidth": 70, "flex": 1},
        dashGridOptions={
            "theme": THEME,
            "rowHeight": ROW_PX,
            "headerHeight": 28,
            "tooltipShowDelay": 300,
            "animateRows": False,
            "suppressCellFocus": False,
            **options,
        },
        # a table built with its rows fits them, up to `height`: two rows are not a tall empty box
        style=grid_style(len(rows), height),
        className="grid",
    )


def grid_style(rows: int, height: int) -> dict:
    """A grid's size: `rows` rows fitted, up to `height` px, past which it scrolls."""
    fitted = height if not rows else min(height, 30 + ROW_PX * max(rows, 3) + 4)
    return {"height": f"{fitted}px", "width": "100%"}
