"""Two runs' ops aligned on one time axis, as the compare view draws them: a row per run, or per
device and link of a run on several; the ops whose parameters changed outlined in both; a measured
run's ops, and those of the prediction it is compared with, laid back to back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import plotly.graph_objects as go

from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sim.tracks import device_track, is_device_track, is_link_track
from tilescope.perfdb.diff import RunDiff, Sides

from tilescope.app.web.style import TOP_LEGEND, base_layout, kind_colour, plain
from tilescope.app.web.zone_segments import segments, vertices


class RowOp(NamedTuple):
    """An op on one row of the aligned diff, shaped like a zone for `segments`."""

    track: str
    op: str
    start_ns: float
    end_ns: float
    name: str = ""
    depth: int = 0

    @property
    def label(self) -> str:
        return self.op


def timeline_rows(label: str, records: Sequence, tracks: Sequence[str], links: Mapping[str, str]) -> list:
    """(row label, records) of one run in the aligned diff: on one device a row of all its ops; on
    several each device's row of its compute and each link row of the collectives on it (`links`:
    collective -> its link row; the first by default). A simulated run's compute is every device's
    (each runs it on its piece); a measured run's ops are each their device's (their `device`)."""
    devices = [t for t in tracks if is_device_track(t)]
    link_rows = [t for t in tracks if is_link_track(t)]
    if not devices:
        return [(label, list(records))]
    if any(getattr(r, "device", 0) for r in records):
        return [(f"{label} {t}", [r for r in records if device_track(r.device) == t]) for t in devices]
    compute = [r for r in records if r.kind not in COLLECTIVES]
    rows = [(f"{label} {device}", compute) for device in devices]
    for track in link_rows:
        on = [r for r in records if r.kind in COLLECTIVES and links.get(r.name, link_rows[0]) == track]
        rows.append((f"{label} {track}", on))
    return rows


ROW_PX = 28  # per row of the aligned timelines past two
# past this many changed ops in a row, none is outlined: an outline singles an op out, and each is a
# shape the browser draws (a replay's every op may differ from its measurement, in its cores say)
MAX_OUTLINED = 100
BACK_TO_BACK = (
    "Each run's ops laid back to back on each device, in the order they ran (the idle between them left "
    "out): device time against device time, as a replay lays its predictions."
)


class LaidOp(NamedTuple):
    """An op of the aligned diff laid back to back (back_to_back)."""

    name: str
    kind: str
    device: int
    start_ns: float
    duration_ns: float


def back_to_back(records: Sequence) -> list[LaidOp]:
    """A run's ops (records with name, kind, start_ns, duration_ns and device) one after another on
    each device in the order they ran: the aligned diff of a measured run, whose device clock holds
    the host's work between ops (seconds of it in a profiled run), against a prediction, which has none."""
    clocks: dict[int, float] = {}
    laid = []
    for r in sorted(records, key=lambda r: r.start_ns):
        device = getattr(r, "device", 0)
        start = clocks.get(device, 0.0)
        laid.append(LaidOp(r.name, r.kind, device, start, r.duration_ns))
        clocks[device] = start + r.duration_ns
    return laid


def changed_ops(d: RunDiff) -> Sides[set[tuple[int, str]]]:
    """(device, name as its run's records have it) of each op whose parameters changed, in run a
    and in run b: ops aligned as sequences have other names in either run."""
    found: Sides[set[tuple[int, str]]] = Sides(set(), set())
    for op in d.ops:
        if op.changes:
            suffix = f" (device {op.device})" if op.device else ""
            found.a.add((op.device, op.name.removesuffix(suffix)))
            found.b.add((op.device, (op.b_name or op.name).removesuffix(suffix)))
    return found


def outlined(records: Sequence, changed: set[tuple[int, str]]) -> set[str]:
    """The names of `records` (one row's) that changed_ops lists."""
    return {r.name for r in records if (getattr(r, "device", 0), r.name) in changed}


def aligned_timelines(
    rows: Sequence[tuple[str, Sequence]], kinds: Mapping[str, str], changed: Sequence[set[str]]
) -> go.Figure:
    """Runs' ops (records with name, start_ns, duration_ns) on rows (label, records) on one time
    axis, A's rows above B's (timeline_rows: one per device and link on several devices), so where
    B gains or loses time against A shows as the rows drifting apart. The ops named in a row's
    `changed` (those an override changed: outlined) are outlined on it, unless there are more than
    MAX_OUTLINED (the per-op table lists them)."""
    order = sorted({kinds.get(r.name, "?") for _, records in rows for r in records})
    colour = {k: kind_colour(k) for k in order}
    fig = go.Figure()
    row = {label: i for i, (label, _) in enumerate(rows)}
    for kind in order:
        ops = [
            RowOp(label, r.name, r.start_ns, r.start_ns + r.duration_ns)
            for label, records in rows
            for r in records
            if kinds.get(r.name, "?") == kind
        ]
        x, y, op_names, _ = segments(ops, row)
        durations = [f"{plain(o.op)}<br>{(o.end_ns - o.start_ns) / 1e3:,.2f} us" for o in ops]
        fig.add_trace(
            go.Scattergl(
                x=x,
                y=y,
                text=vertices(durations, ""),
                customdata=op_names,
                mode="lines",
                name=plain(kind),
                connectgaps=False,
                line=dict(color=colour[kind], width=22 if len(rows) <= 2 else 16),
                hovertemplate="<b>%{text}</b><extra>" + plain(kind) + "</extra>",
            )
        )
    box = dict(type="rect", xref="x", yref="y", line=dict(color="#111827", width=2), fillcolor="rgba(0,0,0,0)")
    fig.update_layout(
        shapes=[
            dict(box, x0=r.start_ns / 1e3, x1=(r.start_ns + r.duration_ns) / 1e3, y0=i - 0.4, y1=i + 0.4, layer="above")
            for i, ((_, records), names) in enumerate(zip(rows, changed))
            if len(names) <= MAX_OUTLINED
            for r in records
            if r.name in names
        ]
    )
    fig.update_xaxes(title="time (us)", showgrid=True, gridcolor="#e4e7eb", zeroline=False)
    fig.update_yaxes(
        tickvals=list(range(len(rows))),
        ticktext=[label for label, _ in rows],
        range=[len(rows) - 0.4, -0.6],
        fixedrange=True,
        showgrid=False,
        zeroline=False,
    )
    fig.update_layout(legend=TOP_LEGEND, hovermode="closest", dragmode="zoom")
    return base_layout(fig, 170 + ROW_PX * max(0, len(rows) - 2), top=30)
