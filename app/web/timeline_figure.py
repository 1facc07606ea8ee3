"""The timeline's figure. Zones are not Plotly traces: they go to the browser as columns (a row,
lane, start, end, kind, op and count per zone or merged marker, in the figure's meta) and
assets/timeline_draw.js draws them on a canvas over the figure's plot area, as Tracy draws, every frame of a
zoom or pan from what it holds. WebGL lines cost about 1.5 s a frame for bert-base's 14k zones on
software GL, a canvas's rectangles a few milliseconds. The Plotly figure keeps what it is good at:
the time axis, the counter plots under the zones on that axis, and a legend of the kinds drawn."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tilescope.compiler.sim.tracks import ENGINES, core_track, parse_track

from tilescope.app.web.style import TOP_LEGEND, base_layout, ink, kind_colour, plain
from tilescope.app.web.zone_card import op_info

MERGED = "merged"  # legend entry of "N zones" markers
MERGED_COLOUR = "#9ca3af"
ROW_PX = 16  # height of a row of its own zones (the device's, a core's)
LANE_PX = 10  # height of one engine's lane: a core's row with its engines is three
MIN_ROW_PX = 4  # rows are drawn at least this tall
MAX_ZONE_PX = 900  # rows without lanes get thinner past this, down to MIN_ROW_PX
LABEL_PX = 86  # room left of the zones for the rows' names
COUNTER_PX = 90  # height of one counter plot
TOP_PX = 58  # above the zones: the legend, then the time axis
MARGIN = 0.02  # zoom and pan go past the run's ends by this share of it, no further
OP_INFO_BUDGET = 20_000  # ops whose kind, time and why a figure carries for hover and the zone card
# counter name -> (title of its plot, unit divisor, unit, axis label)
COUNTER_PLOTS = {
    "l1_bytes": ("L1 in use, fullest core", 1024, "KiB", "L1"),
    "dram_bytes_per_s": ("DRAM bandwidth", 1e9, "GB/s", "DRAM"),
    "lls_bytes_per_s": ("LLS bandwidth", 1e9, "GB/s", "LLS"),
    "link_bytes_per_s": ("link bandwidth, sent per device", 1e9, "GB/s", "link"),  # on several devices
}


def view_bounds(total: float) -> tuple[float, float]:
    """How far a view of a run `total` us long goes (us): the run and MARGIN of it either side. The
    server keeps a range asked for within them, and the browser each frame of a zoom or pan (the
    figure's meta carries them)."""
    return -MARGIN * total, total * (1 + MARGIN)


@dataclass(frozen=True)
class Window:
    """What a figure holds of its run, for assets/timeline.js to know when to ask for more: the time it
    holds (us), the width of the view it was made for (us), whether every zone there is drawn one
    by one, the run's length (us: zoom and pan stay within its view_bounds) and the run's id."""

    loaded: tuple[float, float]
    span: float
    complete: bool
    total: float
    run_id: int


def row_key(track: str) -> tuple[int, int, int]:
    """The device row first, then cores in row-major order, each followed by its engines."""
    core = parse_track(track)
    return (-1, -1, -1) if core is None else (core.row, core.col, core.rank)


def row_label(track: str) -> str:
    core = parse_track(track)
    return f"↳ {core.engine}" if core and core.engine else track


def core_row(track: str) -> str:
    """The row `track` is drawn in: an engine's zones go in a lane of its core's row."""
    core = parse_track(track)
    return core_track((core.row, core.col)) if core and core.engine else track


def lane(track: str) -> int:
    """The lane of its row `track` is drawn in (ENGINES' order), -1 for a row's own zones."""
    core = parse_track(track)
    return ENGINES.index(core.engine) if core and core.engine in ENGINES else -1


def laned(rows: Sequence[str], lanes: bool) -> list[bool]:
    """Which rows are drawn in engine lanes: every core's, when `lanes`."""
    return [lanes and parse_track(t) is not None for t in rows]


def row_heights(tall: Sequence[bool]) -> list[float]:
    """Each row's height in pixels: a row of lanes (`tall`) has room for three engines' names;
    rows of their own zones alone share MAX_ZONE_PX, down to MIN_ROW_PX each."""
    if any(tall):
        return [3 * LANE_PX if t else ROW_PX for t in tall]
    return [max(MIN_ROW_PX, min(ROW_PX, MAX_ZONE_PX / max(len(tall), 1)))] * len(tall)


def packed(values: np.ndarray) -> dict:
    """An array as the browser reads it (assets/plotly_arrays.js): its type and its bytes, base64; a list
    of 100k numbers in JSON is 10 times the bytes and parsed one by one."""
    kinds = {np.float64: "f8", np.int32: "i4", np.int16: "i2", np.int8: "i1"}
    return {
        "dtype": kinds[values.dtype.type],
        "bdata": base64.b64encode(values.astype(f"<{values.dtype.str[1:]}").tobytes()).decode(),
    }


def zone_columns(zones: Sequence, kinds: Mapping[str, str], rows: Sequence[str]) -> dict:
    """The zones and markers to draw, as columns for assets/timeline_draw.js: each one's row and lane, start
    and end (us), kind (an index into `kinds`, -1 for a marker), op and label (indices into
    `names`; op -1 for a marker) and count of zones (1 but for a marker). Kinds come with their
    colours and the colour of names written on them."""
    at = {track: i for i, track in enumerate(rows)}
    names: dict[str, int] = {}
    kind_at: dict[str, int] = {}
    n = len(zones)
    row, lanes, kind, op, label = (np.empty(n, np.int32) for _ in range(5))
    for i, z in enumerate(zones):
        row[i] = at[core_row(z.track)]
        lanes[i] = lane(z.track)
        kind[i] = kind_at.setdefault(kinds.get(z.op, "?"), len(kind_at)) if z.op else -1
        op[i] = names.setdefault(z.op, len(names)) if z.op else -1
        label[i] = names.setdefault(z.label, len(names))
    colours = [kind_colour(k) for k in kind_at]
    columns = {
        "row": packed(row),
        "lane": packed(lanes.astype(np.int8)),
        "start": packed(np.fromiter((z.start_ns for z in zones), np.float64, n) / 1e3),
        "end": packed(np.fromiter((z.end_ns for z in zones), np.float64, n) / 1e3),
        "kind": packed(kind.astype(np.int16)),
        "op": packed(op),
        "label": packed(label),
        "count": packed(np.fromiter((z.count for z in zones), np.int32, n)),
        "names": [plain(n) for n in names],  # escaped, as every name in a figure; drawn as text
        "kinds": [plain(k) for k in kind_at],
        "colours": colours,
        "inks": [ink(c) for c in colours],
        "merged": [MERGED_COLOUR, ink(MERGED_COLOUR)],
    }
    # what the browser keeps them by, decoded: Dash hands Plotly a deep copy of the figure after
    # each change, so the columns' objects are new each time and the same data is known by this
    digest = hashlib.blake2b(json.dumps(columns, sort_keys=True).encode(), digest_size=12)
    return {**columns, "key": digest.hexdigest()}


def op_infos(zones: Sequence, records: Mapping) -> dict:
    """Each drawn op's kind, time, bound and why, for the hover and zone cards (sent once per op,
    not once per zone)."""
    drawn = {z.op for z in zones if z.op}
    if len(drawn) > OP_INFO_BUDGET:
        return {}
    return {plain(name): op_info(r) for name in drawn if (r := records.get(name)) is not None}


def timeline_figure(
    zones: Sequence,
    kinds: Mapping[str, str],
    selected: str | None,
    window: Window | None = None,
    rows: Sequence[str] | None = None,
    counters: Mapping[str, Sequence[tuple[float, float]]] | None = None,
    records: Mapping | None = None,
    view: tuple[float, float] | None = None,
    engines: bool | None = None,
) -> go.Figure:
    """One row per core (`rows`; by default those the zones are on), under the device row, an
    engine's zones in a lane of its core's row; times in us. The zones go in the meta for
    assets/timeline_draw.js to draw (zone_columns), coloured by op kind, merged markers in grey, the
    `selected` op's outlined; the legend names the kinds. Under them, one plot per counter
    (`counters`: name -> (t_ns, value) steps) on the same time axis, shown over `view` (us;
    default all the figure holds); `engines` (default: whether any zone is an engine's) puts the
    core rows in lanes. `window` says what the figure holds of its run (default: the zones' time,
    all of it)."""
    if window is None:
        end = max((z.end_ns / 1e3 for z in zones), default=1.0)
        window = Window((0.0, end), end, True, end, 0)
    rows = list(rows or sorted({core_row(z.track) for z in zones}, key=row_key))
    lanes = any(lane(z.track) >= 0 for z in zones) if engines is None else engines
    tall = laned(rows, lanes)
    heights = row_heights(tall)
    plots = [name for name in COUNTER_PLOTS if (counters or {}).get(name)]
    zone_px = round(sum(heights))
    fig = make_subplots(
        rows=1 + len(plots),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=min(0.04, 40 / (zone_px + COUNTER_PX * len(plots))) if plots else 0,
        row_heights=[zone_px, *[COUNTER_PX] * len(plots)],
    )
    columns = zone_columns(zones, kinds, rows)
    _add_legend(fig, columns, any(z.count > 1 for z in zones))
    for i, name in enumerate(plots, start=2):
        _add_counter(fig, name, counters[name], i)
    shown = list(view or window.loaded)
    for i in range(1, 2 + len(plots)):
        fig.update_xaxes(showgrid=True, gridcolor="#e4e7eb", zeroline=False, range=shown, autorange=False, row=i, col=1)
    # ticks are not measured against the figure's edges: a zoom redraws them, and measuring cost more than drawing
    fig.update_xaxes(ticklabeloverflow="allow")
    fig.update_yaxes(ticklabeloverflow="allow")
    # the zones' time axis and its grid are drawn with them, on the canvas (above them, as Tracy's:
    # the rows of a large chip run off the screen)
    fig.update_xaxes(showticklabels=False, showgrid=False, row=1, col=1)
    fig.update_xaxes(title="time (us)", row=1 + len(plots), col=1)
    fig.update_yaxes(range=[1, 0], visible=False, fixedrange=True, row=1, col=1)
    fig.update_layout(
        legend={**TOP_LEGEND, "y": 1 + 26 / max(zone_px, 1), "font": {"size": 11}},
        hovermode="closest",
        hoverdistance=20,
        dragmode="pan",
        showlegend=True,
        meta={
            "rows": [plain(t) for t in rows],  # names escaped, as every name in a figure (a mesh's axes)
            "labels": [plain(row_label(t)) for t in rows],
            "heights": heights,
            "laned": tall,
            "cores_from": next((i for i, t in enumerate(rows) if parse_track(t) is not None), len(rows)),
            "lanes": list(ENGINES) if lanes else [],
            "loaded": list(window.loaded),
            "span": window.span,
            "complete": window.complete,
            "total": window.total,
            "bounds": list(view_bounds(window.total)),
            "run": window.run_id,
            "selected": plain(selected) if selected else None,
            "zones": columns,
            "ops": op_infos(zones, records or {}),
        },
    )
    base_layout(fig, zone_px + TOP_PX + 40 + (COUNTER_PX + 24) * len(plots), top=TOP_PX)
    fig.update_layout(margin={"l": LABEL_PX + (40 if lanes else 0)})
    return fig


def _add_legend(fig: go.Figure, columns: dict, merged: bool) -> None:
    """A legend entry per kind drawn (clicking one hides or shows its zones), the merged markers'
    last; the first, nameless, holds the zones' axes (a subplot without a trace is not drawn)."""
    entries = sorted(zip(columns["kinds"], columns["colours"]))
    entries = [(None, MERGED_COLOUR), *entries, *([(MERGED, MERGED_COLOUR)] if merged else [])]
    for kind, colour in entries:
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker=dict(symbol="square", size=10, color=colour),
                name=plain(kind) if kind else None,
                legendgroup=plain(kind) if kind else None,  # as the zones name it: the kinds hidden here are not drawn
                showlegend=kind is not None,
                hoverinfo="skip",
            ),
            row=1,
            col=1,
        )


def _add_counter(fig: go.Figure, name: str, steps: Sequence[tuple[float, float]], at: int) -> None:
    title, unit, label, short = COUNTER_PLOTS[name]
    xy = np.asarray(steps, dtype=np.float64).reshape(-1, 2)
    fig.add_trace(
        go.Scatter(
            x=xy[:, 0] / 1e3,
            y=xy[:, 1] / unit,
            mode="lines",
            line_shape="hv",
            fill="tozeroy",
            line=dict(color="#2563eb" if name == "l1_bytes" else "#dc2626", width=1),
            name=title,
            showlegend=False,
            hovertemplate="%{x:.2f} us<br>%{y:,.1f} " + label + "<extra>" + title + "</extra>",
        ),
        row=at,
        col=1,
    )
    fig.update_yaxes(
        title=dict(text=f"{short} {label}", font=dict(size=10)), rangemode="tozero", gridcolor="#e4e7eb", row=at, col=1
    )
