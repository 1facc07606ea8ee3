"""The per-op table of two runs compared: the ops of both by the size of their delta, the ops only
one run has as rows of their own (marked), and the ops that did not change left out unless asked
for: after an override of one op, a model's other ops fill hundreds of rows of 0.00. Over it, for a
long diff (a prediction against a measurement of 1,872 ops), the same summed by op kind. Columns
say which run was measured and which predicted; ops aligned as sequences show each run's name."""

from __future__ import annotations

from collections.abc import Sequence

from tilescope.perfdb.diff import RunDiff
from tilescope.perfdb.diff_ops import BY_SEQUENCE, MEASURED

from tilescope.app.web import ids
from tilescope.app.web.grids import column, grid, grid_style
from tilescope.app.web.style import us
from tilescope.app.workbench.diff import change_note, unchanged
from tilescope.app.workbench.kind_deltas import kind_deltas
from tilescope.app.workbench.natural_order import GRID_COMPARATOR, natural_key

SHOWN_OPS = 2000  # rows of the per-op delta table (the grid renders those in view): a CLIP report's all
TABLE_PX = 380  # the table's height at most; it scrolls past it
GROWN_ROWS = 20  # a table of so few rows grows to hold them all (it renders every row)
CHANGES_CHARS = 90  # of an op's changes on one line of the table, about, at the page's usual width
DELTA_COLUMNS = (
    ("name", "op", "text"),
    ("b_name", "op in B", "text"),  # ops aligned as sequences only
    ("kind", "kind", "text"),
    ("a_us", "A us", "us"),
    ("b_us", "B us", "us"),
    ("delta_us", "delta us", "us"),
    ("error_us", "+- us", "us"),  # the model's error on the delta
    ("ratio", "B/A", "ratio"),
    ("changes", "changes", "text"),
)
KIND_COLUMNS = (
    ("kind", "kind", "text"),
    ("a_ops", "A ops", "count"),
    ("b_ops", "B ops", "count"),
    ("a_us", "A us", "us"),
    ("b_us", "B us", "us"),
    ("delta_us", "delta us", "us"),
    ("ratio", "B/A", "ratio"),
)
KINDS_FROM = 20  # ops: a diff of more has its table by kind
KINDS_PX = 220
# a slower op's delta in red, a faster one's in green; one within the model's error in grey
DELTA_STYLE = {
    "function": "params.data && params.data.within ? {color: '#6b7280', fontStyle: 'italic'} : "
    "params.value > 0 ? {color: '#b91c1c', fontWeight: 600} : "
    "params.value < 0 ? {color: '#15803d', fontWeight: 600} : null"
}
# an op only one run has: B's (inserted) tinted as B's pill, A's (removed) as A's
ONLY_STYLE = {
    "function": "params.data && params.data.only === 'B' ? {background: '#fef3c7'} : "
    "params.data && params.data.only === 'A' ? {background: '#dbeafe'} : null"
}


def sides(found: RunDiff) -> tuple[str, str]:
    """What the columns call runs A and B: `A` and `B`, with `measured` and `predicted` when one was
    measured and the other simulated."""
    kinds = (found.kinds.a, found.kinds.b)
    if kinds.count(MEASURED) != 1:
        return ("A", "B")
    return tuple(f"{side} ({'measured' if kind == MEASURED else 'predicted'})" for side, kind in zip("AB", kinds))


def delta_rows(found: RunDiff, show_unchanged: bool = False) -> list[dict]:
    """The table's rows, by |delta| (equal ones in natural order of their names): the ops of both
    runs (those unchanged only if asked for), and each op only one run has, its delta its whole
    time. A row's id is its op's name; aligned as sequences, run B's names are its own and may be
    run A's too, so an op only B has is `B:` and its name, and has none in A's column."""
    rows = [
        {
            "id": op.name,
            "name": op.name,
            "b_name": op.b_name or op.name,
            "kind": op.kind,
            "a_us": us(op.a_ns),
            "b_us": us(op.b_ns),
            "delta_us": us(op.delta_ns),
            "error_us": us(op.error_ns) if op.error_ns is not None else None,
            "within": op.within_error,
            "ratio": round(op.ratio, 3) if op.ratio is not None else None,
            "changes": change_note(op),
            "only": None,
        }
        for op in found.ops
        if show_unchanged or not unchanged(op)
    ]
    only = (
        ("B", found.inserted, 1, f"inserted: only in B #{found.b}"),
        ("A", found.removed, -1, f"removed: only in A #{found.a}"),
    )
    aligned = found.alignment == BY_SEQUENCE
    for side, ops, sign, said in only:
        for op in ops:
            time = us(op.ns)
            rows.append(
                {"id": f"B:{op.name}" if aligned and side == "B" else op.name, "kind": op.kind}
                | {"name": "" if aligned and side == "B" else op.name, "b_name": op.name if side == "B" else ""}
                | {"a_us": time if side == "A" else None, "b_us": time if side == "B" else None}
                | {"delta_us": sign * time, "error_us": None, "within": False}
                | {"ratio": None, "changes": said, "only": side}
            )
    return sorted(rows, key=lambda row: (-abs(row["delta_us"]), natural_key(row["name"] or row["b_name"])))


def kind_table(found: RunDiff):
    """The diff summed by op kind (app.workbench.kind_deltas), a grid; None for a diff of KINDS_FROM
    ops or fewer, whose per-op table reads at a glance."""
    if len(found.ops) + len(found.removed) + len(found.inserted) <= KINDS_FROM:
        return None
    a, b = sides(found)
    rows = [
        {"id": row.kind, "kind": row.kind, "a_ops": row.a_ops, "b_ops": row.b_ops, "a_us": us(row.a_ns)}
        | {"b_us": us(row.b_ns), "delta_us": us(row.delta_ns), "ratio": row.ratio and round(row.ratio, 3)}
        for row in kind_deltas(found)
    ]
    columns = [
        column(key, _side_label(label, a, b), kind, cellStyle=DELTA_STYLE if key == "delta_us" else None)
        for key, label, kind in KIND_COLUMNS
    ]
    return grid(ids.DIFF_KINDS, columns, rows, height=KINDS_PX)


def _side_label(label: str, a: str, b: str) -> str:
    """A column's label with each run as `sides` calls it: `A us` -> `A (measured) us`."""
    if label.startswith("A "):
        return f"{a}{label[1:]}"
    if label.startswith("B "):
        return f"{b}{label[1:]}"
    return label


def delta_table(rows: Sequence[dict], found: RunDiff | None = None):
    """The rows as a grid: an op's changes wrap in their column rather than being cut; each run's
    name of an op when `found` aligned them as sequences."""
    a, b = sides(found) if found else ("A", "B")
    aligned = found is not None and found.alignment == BY_SEQUENCE
    banded = any(row.get("error_us") is not None for row in rows)  # predictions carry the model's error
    columns = [
        column(
            key,
            "op in A" if key == "name" and aligned else _side_label(label, a, b),
            kind,
            flex=3 if kind == "text" and key != "kind" else 1,
            cellStyle=DELTA_STYLE if key == "delta_us" else None,
            comparator=GRID_COMPARATOR if key in ("name", "b_name") else None,
            **({"wrapText": True, "autoHeight": True, "minWidth": 220} if key == "changes" else {}),
        )
        for key, label, kind in DELTA_COLUMNS
        if (key != "b_name" or aligned) and (key != "error_us" or banded)
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
