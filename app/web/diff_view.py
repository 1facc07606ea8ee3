"""Two runs compared, as Tracy's compare view does: the totals (with a measured run, device time)
and how they split, both runs' work once per model load, the overrides and settings that differ,
both runs on one time axis (app/web/aligned_runs.py), the per-op deltas with the ops inserted,
removed or moved between the step and the model's load, and the overlaid duration histograms."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from dash import dcc, html

from tilescope.perfdb.diff import MovedOp, RunDiff
from tilescope.perfdb.diff_ops import BY_SEQUENCE, MEASURED
from tilescope.perfdb.meshes import CollectiveOp
from tilescope.perfdb.schema import Run

from tilescope.app.web import ids
from tilescope.app.web.aligned_runs import BACK_TO_BACK
from tilescope.app.web.device_table import devices_diff_children
from tilescope.app.web.style import TOP_LEGEND, all_of, base_layout, graph_config, some_of, us
from tilescope.app.web.diff_table import SHOWN_OPS, delta_rows, delta_table, kind_table
from tilescope.app.workbench.diff import (
    DiffView,
    collective_text,
    device_parts,
    more,
    moved_text,
    settings_text,
    time_split,
)
from tilescope.app.workbench.load_time import duration_text, ops_text

SHOWN_ONLY_IN = 10  # collectives or moved ops listed by name; the rest are counted


def diff_children(found: DiffView, timelines: go.Figure | None = None) -> list:
    """Two runs compared: what makes the comparison suspect, totals and how they split between
    device and host, the overrides that differ, the two runs' ops aligned on one time axis
    (`timelines`) and each device's split; diff_body has the per-op table and the histograms."""
    a, b, d = found.runs.a, found.runs.b, found.comparison.diff
    warnings = [html.P(f"Warning: {w}", className="hint", style={"color": "var(--warn)"}) for w in d.warnings]
    labels = (f"A #{a.id}", f"B #{b.id}")
    aligned = (
        [dcc.Graph(id=ids.DIFF_TIMELINES, config=graph_config("diff-timelines"), figure=timelines)] if timelines else []
    )
    if aligned and MEASURED in (a.kind, b.kind):
        aligned.insert(0, html.P(BACK_TO_BACK, className="hint"))
    return [
        *warnings,
        _diff_head(found, a, b),
        *_aligned_note(d),
        *_diff_load(d),
        *_diff_overrides(d, MEASURED in (a.kind, b.kind)),
        *aligned,
        *devices_diff_children(found.comparison.devices, labels),
    ]


def diff_body(found: DiffView, show_unchanged: bool = False, limit: int = SHOWN_OPS) -> list:
    """Per-op deltas by impact, the ops found in one run only among them (app.web.diff_table),
    the collectives and the moves between load time and the step, and the duration histograms."""
    a, b, d = found.runs.a, found.runs.b, found.comparison.diff
    rows = delta_rows(d, show_unchanged)
    extra = []
    if len(rows) > limit:
        extra.append(html.P(f"The {limit} ops of largest |delta| of {len(rows)}.", className="hint"))
    extra += _collectives(f"Collectives only in A #{a.id}", d.collectives.removed)
    extra += _collectives(f"Collectives only in B #{b.id}", d.collectives.inserted)
    extra += _moved(f"Moved to load time in B #{b.id} (per step in A #{a.id})", d.moved_to_load)
    extra += _moved(f"Moved into the step in B #{b.id} (load time in A #{a.id})", d.moved_into_step)
    histogram = dcc.Graph(
        id=ids.DIFF_HISTOGRAM,
        config=graph_config("duration-histogram"),
        figure=duration_histogram(found.durations.a, found.durations.b, side_labels(a, b)),
    )
    kinds = kind_table(d)
    by_kind = [html.P("Summed by op kind:", className="hint"), kinds] if kinds is not None else []
    table = html.Div([*by_kind, delta_table(rows[:limit], d), *extra], className="diff-table")
    return [html.Div([table, histogram], className="diff-body")]


def side_labels(a: Run, b: Run) -> tuple[str, str]:
    """`A #4`, `B #7`; with a measured run, which is measured and which predicted."""
    if MEASURED not in (a.kind, b.kind):
        return f"A #{a.id}", f"B #{b.id}"
    said = ("measured" if run.kind == MEASURED else "predicted" for run in (a, b))
    return tuple(f"{side} #{run.id} {how}" for side, run, how in zip("AB", (a, b), said))


def _diff_head(found: DiffView, a: Run, b: Run) -> html.Div:
    """The two runs and their totals; with a measured run, their device time: a report's device
    clock holds the host's work between ops (seconds of it), which no prediction has."""
    measured = MEASURED in (a.kind, b.kind)
    before, after = (a.device_ns, b.device_ns) if measured else (a.total_ns, b.total_ns)
    delta = after - before if measured else found.comparison.diff.total_delta_ns
    ratio = after / before if before else None
    verdict = "faster" if delta < 0 else "slower" if delta > 0 else "the same"
    if a.kind != b.kind and measured:
        verdict = "predicted under measured" if delta < 0 else "predicted over measured" if delta > 0 else "as measured"
    totals = f"total {us(a.total_ns):,.1f} us -> {us(b.total_ns):,.1f} us (device clock, idle included)"
    return html.Div(
        [
            html.Span(_pill(a, b), className="pill a"),
            html.Span("vs"),
            html.Span(_pill(b, a), className="pill b"),
            html.Span(f"{'device ' * measured}{us(before):,.1f} us -> {us(after):,.1f} us", className="metric"),
            html.Span(
                f"{us(delta):+z,.1f} us" + (f" (x{ratio:.3f}, {verdict})" if ratio else ""),
                className=f"metric {'worse' if delta > 0 else 'better' if delta < 0 else ''}",
            ),
            *([html.Span(totals, className="muted")] if measured else []),
            html.Span(time_split(found.comparison.diff), className="muted"),
            html.Span(device_parts(found.comparison), className="muted device-parts"),
        ],
        className="diff-head",
    )


def _pill(run: Run, other: Run) -> str:
    """`#4 baseline`, `#7 measured: clip.csv`, `#8 predicted`: a run by id and label, and whether it
    was measured, or is the prediction compared with a measured run."""
    if MEASURED in (run.kind, other.kind):
        said = "measured" if run.kind == MEASURED else "predicted"
        label = run.label.removeprefix(f"{said}: ")  # a measured run's label says so already
        return f"#{run.id} {said}" + (f": {label}" if label else "")
    return f"#{run.id} {run.label or 'baseline'}"


def _aligned_note(d: RunDiff) -> list:
    """How the ops were paired, when not by name: each run's names are then its own."""
    if d.alignment != BY_SEQUENCE:
        return []
    said = (
        "Ops aligned by op code in execution order, device by device (the runs' op names, code and count, "
        "are each run's own): an op inserted or removed shifts no other."
    )
    return [html.P(said, className="hint")]


def _diff_load(d: RunDiff) -> list:
    """Both runs' work once per model load (const-eval), when either has any: apart from the totals
    above, which are per step."""
    a, b = d.times.a, d.times.b
    if not (a.load_ops or b.load_ops):
        return []
    delta = d.load_delta_ns
    return [
        html.Div(
            [
                html.Span("load time, once per model load (const-eval, not in the totals):", className="muted"),
                html.Span(
                    f"{ops_text(a.load_ops, a.load_ns)} -> {ops_text(b.load_ops, b.load_ns)}",
                    className="metric",
                ),
                html.Span(f"({'-' if delta < 0 else '+'}{duration_text(abs(delta))})", className="muted"),
            ],
            id=ids.DIFF_LOAD,
            className="diff-head",
        )
    ]


def _diff_overrides(d: RunDiff, measured: bool) -> list:
    """The override items and settings only one run has: with a measured run (no compiler ran
    it, under no policy or dispatch) no settings, and the overrides only if the other run has some."""
    only = d.overrides
    if measured and not (only.a or only.b):
        return []
    settings = []
    if d.settings and not measured:
        settings = [html.Span("  settings: ", className="muted"), html.Code(settings_text(d.settings))]
    return [
        html.Div(
            [
                html.Span("overrides only in A: ", className="muted"),
                html.Code(some_of(only.a) or "none", title=all_of(only.a)),
                html.Span("  only in B: ", className="muted"),
                html.Code(some_of(only.b) or "none", title=all_of(only.b)),
                *settings,
            ],
            className="diff-overrides",
        )
    ]


def _op_list(title: str, ops: Sequence[CollectiveOp | MovedOp], total_ns: float, describe, per: str = "") -> list:
    """A titled list of ops with their total: the first SHOWN_ONLY_IN by name, the rest counted."""
    if not ops:
        return []
    items = [html.Li(f"{op.name}  {op.kind}  {describe(op)}") for op in ops[:SHOWN_ONLY_IN]]
    items += [html.Li(line) for line in more(len(ops) - SHOWN_ONLY_IN)]
    return [
        html.P(f"{title}: {len(ops)} op{'s' * (len(ops) != 1)}, {total_ns / 1e3:,.2f} us{per}", className="hint"),
        html.Ul(items, className="outcomes"),
    ]


def _collectives(title: str, ops: Sequence[CollectiveOp]) -> list:
    """The collectives one run's mesh needs and the other's does not, apart from the ops an
    override inserted: kind, devices exchanging data, bytes each sends, one device's time."""
    return _op_list(title, ops, sum(op.ns for op in ops), collective_text, per=" per device")


def _moved(title: str, ops: Sequence[MovedOp]) -> list:
    """Ops one run does in every step and the other once per model load, with both times."""
    return _op_list(title, ops, sum(op.step_ns for op in ops), moved_text, per=" per step")


def _tallest_bin(durations: Sequence[float], bins: np.ndarray) -> int:
    logs = [math.log10(d / 1e3) for d in durations if d > 0]
    return int(np.histogram(logs, bins)[0].max(initial=0))


def duration_histogram(a: Sequence[float], b: Sequence[float], labels: tuple[str, str]) -> go.Figure:
    """Two runs' op durations on shared log bins, each bin's two bars side by side."""
    fig = go.Figure()
    values = [d for d in (*a, *b) if d > 0]
    ticks: list[float] = []
    if values:
        lo, hi = math.log10(min(values) / 1e3), math.log10(max(values) / 1e3)
        size = max((hi - lo) / 40, 1e-3)
        for durations, label, colour in ((a, labels[0], "#2563eb"), (b, labels[1], "#f59e0b")):
            fig.add_trace(
                go.Histogram(
                    x=[math.log10(d / 1e3) for d in durations if d > 0],
                    name=label,
                    marker_color=colour,
                    xbins=dict(start=lo - size, end=hi + size, size=size),
                    hovertemplate="%{y} ops<extra>" + label + "</extra>",
                )
            )
        ticks = _log_ticks(lo - size, hi + size)
        bins = np.arange(lo - size, hi + 2 * size, size)
        tallest = max(_tallest_bin(durations, bins) for durations in (a, b))
        if tallest <= 8:  # whole ops: Plotly's own ticks of a short axis are 0.5, 1.5
            fig.update_yaxes(dtick=1)
    fig.update_xaxes(
        title="op duration", tickvals=ticks, ticktext=[f"{10.0**t:.3g} us" for t in ticks], gridcolor="#e4e7eb"
    )
    fig.update_yaxes(title="ops", gridcolor="#e4e7eb", rangemode="tozero")
    # side by side: overlaid, the bars of near-equal runs blend into one colour
    fig.update_layout(barmode="group", bargap=0.15, legend={**TOP_LEGEND, "title": None})
    return base_layout(fig, 260, top=30)


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Tick positions (log10 of us) between lo and hi: 1, 2, 5 times a power of ten, or, when the
    range holds fewer than three of those (durations within one decade), round steps across it."""
    ticks = [k + math.log10(m) for k in range(math.floor(lo), math.ceil(hi) + 1) for m in (1, 2, 5)]
    inside = [t for t in ticks if lo <= t <= hi]
    if len(inside) >= 3:
        return inside
    low, high = 10.0**lo, 10.0**hi
    rough = (high - low) / 8  # at most about eight ticks
    magnitude = 10.0 ** math.floor(math.log10(rough))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= rough)
    first = math.ceil(low / step) * step
    return [math.log10(first + i * step) for i in range(int((high - first) / step) + 1) if first + i * step > 0]
