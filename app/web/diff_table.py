"""The per-op table of two runs compared: the ops of both by the size of their delta, the ops only
one run has as rows of their own (marked), and the ops that did not change left out unless asked
for: after an override of one op, a model's other ops fill hundreds of rows of 0.00."""

from __future__ import annotations

from collections.abc import Sequence

from tilescope.perfdb.diff import RunDiff

from tilescope.app.web import ids
from tilescope.app.web.grids import column, grid, grid_style
from tilescope.app.web.style import us
from tilescope.app.workbench.diff import changes_text, unchanged
from tilescope.app.workbench.natural_order import GRID_COMPARATOR, natural_key

SHOWN_OPS = 1000  # rows of the per-op delta table (the grid renders those in view)
TABLE_PX = 380  # the table's height at most; it scrolls past it
GROWN_ROWS = 20  # a table of so few rows grows to hold them all (it renders every row)
CHANGES_CHARS = 90  # of an op's changes on one line of the table, about, at the page's usual width
DELTA_COLUMNS = (
    ("name", "op", "text"),
    ("a_us", "A us", "us"),
    ("b_us", "B us", "us"),
    ("delta_us", "delta us", "us"),
    ("ratio", "B/A", "ratio"),
    ("changes", "changes", "text"),
)
# a slower op's delta in red, a faster one's in green
DELTA_STYLE = {
    "function": "params.value > 0 ? {color: '#b91c1c', fontWeight: 600} : "
    "params.value < 0 ? {color: '#15803d', fontWeight: 600} : null"
}
# an op only one run has: B's (inserted) tinted as B's pill, A's (removed) as A's
ONLY_STYLE = {
    "function": "params.data && params.data.only === 'B' ? {background: '#fef3c7'} : "
    "params.data && params.data.only === 'A' ? {background: '#dbeafe'} : null"
}


def delta_rows(found: RunDiff, show_unchanged: bool = False) -> list[dict]:
    """The table's rows, by |delta| (equal ones in natural order of their names): the ops of both
    runs (those unchanged only if asked for), and each op only one run has, its delta its whole
    time."""
    rows = [
        {
            "id": op.name,
            "name": op.name,
            "a_us": us(op.a_ns),
            "b_us": us(op.b_ns),
            "delta_us": us(op.delta_ns),
            "ratio": round(op.ratio, 3) if op.ratio is not None else None,
            "changes": changes_text(op.changes),
            "only": None,
        }
        for op in found.ops
        if show_unchanged or not unchanged(op)
    ]
    only = (
        ("B", found.inserted, 1, f"inserted: only in B #{found.b}"),
        ("A", found.removed, -1, f"removed: only in A #{found.a}"),
    )
    for side, ops, sign, said in only:
        for op in ops:
            time = us(op.ns)
            rows.append(
                {"id": op.name, "name": op.name, "a_us": time if side == "A" else None}
                | {"b_us": time if side == "B" else None, "delta_us": sign * time, "ratio": None}
                | {"changes": said, "only": side}
            )
    return sorted(rows, key=lambda row: (-abs(row["delta_us"]), natural_key(row["name"])))


def delta_table(rows: Sequence[dict]):
    """The rows as a grid: an op's changes wrap in their column rather than being cut."""
    columns = [
        column(
            key,
            label,
            kind,
            flex=3 if kind == "text" else 1,
            cellStyle=DELTA_STYLE if key == "delta_us" else None,
            comparator=GRID_COMPARATOR if key == "name" else None,
            **({"wrapText": True, "autoHeight": True, "minWidth": 220} if key == "changes" else {}),
        )
        for key, label, kind in DELTA_COLUMNS
    ]
    if len(rows) <= GROWN_ROWS:  # as tall as its rows as the browser wraps them: none cut off
        table = grid(ids.DIFF_TABLE, columns, rows, getRowStyle=ONLY_STYLE, domLayout="autoHeight")
        table.style = {"width": "100%"}
        return table
    table = grid(ids.DIFF_TABLE, columns, rows, height=TABLE_PX, getRowStyle=ONLY_STYLE)
    # fitted to its rows as they wrap: a row of many changes takes a line per CHANGES_CHARS
    lines = sum(max(1, -(-len(row["changes"]) // CHANGES_CHARS)) for row in rows)
    table.style = grid_style(lines, TABLE_PX)
    return table


def unchanged_toggle(found: RunDiff | None) -> list[dict]:
    """The toggle's option, naming how many ops it shows; none when no op is left out."""
    count = sum(unchanged(op) for op in found.ops) if found else 0
    return [{"label": f" show the {count:,} unchanged ops", "value": "show"}] if count else []
