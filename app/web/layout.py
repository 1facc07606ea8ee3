"""The explorer page: run bar on top, graph and MLIR on the left, inspector and overrides on the
right, and below them the timeline, statistics, memory, roofline, and runs with their diff."""

from __future__ import annotations

from dash import dcc, html

from compiler.ir import LEVELS, MEMORY_LAYOUTS, TENSOR_LAYOUTS
from compiler.policies import DEFAULT_POLICY, POLICIES
from compiler.target import FIDELITIES, Target, builtin_names

from . import ids
from ..workbench.explorer import (
    DEFAULT_CHOICE,
    DEFAULT_FIDELITY_CHOICE,
    DOUBLE_BUFFER_CHOICES,
    OUTPUT,
    TILE_CHOICES,
    override_choices,
)
from .figures import COLOUR_MODES, graph_config
from ..workbench.model_access import MAX_SOURCE_BYTES
from .panels import runs_table, stats_table
from ..workbench.run_export import EXPORT_FORMATS


def _labelled(label: str, control, class_name: str = "field") -> html.Div:
    return html.Div([html.Label(label, className="field-label"), control], className=class_name)


def run_bar(model_options: list[str], model: str, target: str) -> html.Header:
    return html.Header(
        [
            html.Div(
                [html.Span("tile", className="brand-a"), html.Span("scope", className="brand-b")], className="brand"
            ),
            _labelled(
                "Model",
                dcc.Dropdown(id=ids.MODEL_SELECT, options=model_options, value=model, clearable=False),
                "field model",
            ),
            dcc.Upload(
                id=ids.MODEL_UPLOAD,
                children=html.Div(
                    ["Drop an ", html.B(".mlir"), " file or click"],
                    title=f"up to {MAX_SOURCE_BYTES // 2**20} MiB; larger models: tilescope run on the command line",
                ),
                # a larger file is not sent at all (the server would refuse the request)
                className="upload",
                accept=".mlir",
                multiple=False,
                max_size=MAX_SOURCE_BYTES,
            ),
            _labelled(
                "Target",
                dcc.Dropdown(
                    id=ids.TARGET_SELECT,
                    options=list(dict.fromkeys([*builtin_names(), target])),
                    value=target,
                    clearable=False,
                ),
            ),
            _labelled(
                "Policy",
                dcc.Dropdown(id=ids.POLICY_SELECT, options=list(POLICIES), value=DEFAULT_POLICY, clearable=False),
            ),
            _labelled(
                "Level",
                dcc.RadioItems(
                    id=ids.LEVEL_SELECT,
                    options=list(LEVELS),
                    value="graph",
                    inline=True,
                    className="segmented",
                ),
                "field level",
            ),
            _labelled("Run", dcc.Dropdown(id=ids.RUN_SELECT, options=[], value=None, clearable=False), "field run"),
        ],
        className="run-bar",
    )


def override_form(target: Target) -> html.Div:
    memories, rows, cols, dtypes = override_choices(target)
    return html.Div(
        [
            html.H3("Override"),
            html.Div(
                [
                    _labelled(
                        "Applies to",
                        dcc.Dropdown(id=ids.OV_APPLIES_TO, options=[OUTPUT], value=OUTPUT, clearable=False),
                    ),
                    _labelled("Memory", dcc.Dropdown(id=ids.OV_MEMORY, options=memories, clearable=False)),
                    _labelled(
                        "Memory layout",
                        dcc.Dropdown(id=ids.OV_MEMORY_LAYOUT, options=list(MEMORY_LAYOUTS), clearable=False),
                    ),
                    _labelled("Grid rows", dcc.Dropdown(id=ids.OV_GRID_ROWS, options=rows, clearable=False)),
                    _labelled("Grid cols", dcc.Dropdown(id=ids.OV_GRID_COLS, options=cols, clearable=False)),
                    _labelled("Layout", dcc.Dropdown(id=ids.OV_LAYOUT, options=list(TENSOR_LAYOUTS), clearable=False)),
                    _labelled("Dtype", dcc.Dropdown(id=ids.OV_DTYPE, options=dtypes, clearable=False)),
                    _labelled(
                        "Tile",
                        dcc.Dropdown(id=ids.OV_TILE, options=list(TILE_CHOICES), value=DEFAULT_CHOICE, clearable=False),
                    ),
                    _labelled(
                        "Math fidelity",
                        dcc.Dropdown(
                            id=ids.OV_FIDELITY, options=[DEFAULT_FIDELITY_CHOICE, *FIDELITIES], clearable=False
                        ),
                    ),
                    _labelled(
                        "Matmul block MxNxK",
                        dcc.Input(
                            id=ids.OV_BLOCK,
                            type="text",
                            value="",
                            placeholder="default",
                            debounce=True,
                            className="text-input",
                        ),
                    ),
                    _labelled(
                        "Double buffer",
                        dcc.Dropdown(
                            id=ids.OV_DOUBLE_BUFFER,
                            options=list(DOUBLE_BUFFER_CHOICES),
                            value=DEFAULT_CHOICE,
                            clearable=False,
                        ),
                    ),
                ],
                className="form-grid",
            ),
            html.Div(
                [
                    html.Button(
                        "Apply and re-run", id=ids.APPLY_OVERRIDES, n_clicks=0, className="primary", disabled=True
                    ),
                    html.Button(
                        "Add to pending", id=ids.STAGE_OVERRIDE, n_clicks=0, className="secondary", disabled=True
                    ),
                ],
                className="buttons",
            ),
            html.Div(id=ids.APPLY_PROGRESS, className="progress"),
            html.Div(id=ids.OVERRIDE_STATUS, className="status"),
            html.Div(
                [
                    html.Div(
                        [
                            html.Span("Pending", className="field-label"),
                            dcc.Upload(
                                id=ids.OVERRIDES_UPLOAD,
                                children=html.Span("import overrides file"),
                                className="import",
                                multiple=False,
                            ),
                        ],
                        className="pending-head",
                    ),
                    html.Div(id=ids.PENDING_LIST),
                ],
                className="pending",
            ),
        ],
        id=ids.OVERRIDE_FORM,
        className="panel",
    )


def export_control() -> html.Div:
    """Download the shown run: its overrides, its trace or its ops table."""
    return html.Div(
        [
            dcc.Dropdown(
                id=ids.EXPORT_FORMAT,
                options=[{"label": label, "value": k} for k, (label, _) in EXPORT_FORMATS.items()],
                value="chrome",
                clearable=False,
                className="export-format",
            ),
            html.Button("Export", id=ids.EXPORT_BUTTON, n_clicks=0, className="secondary"),
            dcc.Download(id=ids.EXPORT_DOWNLOAD),
        ],
        className="export",
    )


def graph_controls() -> html.Div:
    """Colour mode, regex search and the open groups (a click on a big square opens its group)."""
    return html.Div(
        [
            _labelled(
                "Colour by",
                dcc.Dropdown(
                    id=ids.GRAPH_COLOUR,
                    options=[{"label": v, "value": k} for k, v in COLOUR_MODES.items()],
                    value="duration",
                    clearable=False,
                ),
                "field colour",
            ),
            _labelled(
                "Search (regex)",
                dcc.Input(
                    id=ids.GRAPH_SEARCH,
                    type="text",
                    debounce=True,
                    placeholder="e.g. layer\\.1\\..*matmul",
                    className="search",
                ),
                "field search",
            ),
            _labelled(
                "Open groups",
                dcc.Dropdown(
                    id=ids.GRAPH_GROUPS,
                    options=[],
                    value=None,
                    multi=True,
                    placeholder="all groups closed",
                ),
                "field groups",
            ),
        ],
        className="graph-controls",
    )


def _tab(label: str, value: str, children: list) -> dcc.Tab:
    return dcc.Tab(
        label=label,
        value=value,
        children=html.Div(children, className="tab-body"),
        className="tab",
        selected_className="tab selected",
    )


def analysis_tabs() -> html.Div:
    """Tracy's timeline and statistics, the memory and roofline views, and the runs with their diff."""
    return html.Div(
        dcc.Tabs(
            id=ids.ANALYSIS_TABS,
            value="timeline",
            className="tabs",
            children=[
                _tab(
                    "Timeline",
                    "timeline",
                    [
                        html.Div(
                            [
                                html.P(
                                    "The device row, then one row per core; wheel to zoom, drag to select a range; "
                                    "click a zone to select its op.",
                                    className="hint",
                                ),
                                dcc.Checklist(
                                    id=ids.TIMELINE_SHOW,
                                    value=["counters"],
                                    inline=True,
                                    className="checks",
                                    options={
                                        "engines": "engine rows (reader, compute, writer)",
                                        "counters": "counters (L1 in use, DRAM bandwidth)",
                                    },
                                ),
                            ],
                            className="timeline-controls",
                        ),
                        dcc.Graph(id=ids.TIMELINE_VIEW, config=graph_config("timeline")),
                    ],
                ),
                _tab(
                    "Statistics",
                    "statistics",
                    [
                        dcc.RadioItems(
                            id=ids.STATS_BY,
                            options={"name": "per op", "kind": "per op type"},
                            value="name",
                            inline=True,
                            className="segmented light",
                        ),
                        stats_table(),
                        html.H4("Find zone", className="subhead"),
                        html.P(
                            "Select an op for the spread of its zones over the cores, or click a row of the "
                            "per-type table for the spread of that type's ops.",
                            className="hint",
                        ),
                        dcc.Graph(id=ids.FIND_ZONE, config=graph_config("find-zone")),
                    ],
                ),
                _tab(
                    "Memory",
                    "memory",
                    [
                        dcc.Graph(id=ids.MEMORY_VIEW, config=graph_config("memory")),
                        html.Div(id=ids.MEMORY_PEAK),
                    ],
                ),
                _tab("Roofline", "roofline", [dcc.Graph(id=ids.ROOFLINE_VIEW, config=graph_config("roofline"))]),
                _tab(
                    "Runs & diff",
                    "runs",
                    [
                        html.P(
                            "Tick two runs to compare them; "
                            "otherwise the shown run is compared with the run it came from.",
                            className="hint",
                        ),
                        runs_table(),
                        html.Div(id=ids.DIFF_VIEW, className="diff-view"),
                    ],
                ),
            ],
        ),
        className="panel analysis",
    )


RUNS_POLL_MS = 5000  # how often the page looks for runs stored by others


def page(model_options: list[str], model: str, target: Target) -> html.Div:
    return html.Div(
        [
            dcc.Store(id=ids.SELECTED_OP, data=None),
            dcc.Store(id=ids.PENDING_OVERRIDES, data=[]),
            dcc.Location(id=ids.URL, refresh=False),
            dcc.Store(id=ids.URL_STATE, data=None),
            dcc.Store(id=ids.URL_APPLIED, data=False),
            dcc.Store(id=ids.TIMELINE_ZOOM, data=None),
            dcc.Interval(id=ids.RUNS_POLL, interval=RUNS_POLL_MS),
            run_bar(model_options, model, target.name),
            html.Div(
                [html.Div(id=ids.UPLOAD_PROGRESS, className="progress"), html.Div(id=ids.PAGE_MESSAGE)],
                className="page-message",
            ),
            html.Div(
                [html.Div(id=ids.RUN_SUMMARY, className="run-summary"), export_control()], className="summary-row"
            ),
            html.Main(
                [
                    html.Section(
                        [
                            html.Div(
                                [
                                    html.H3("Graph"),
                                    graph_controls(),
                                    dcc.Graph(id=ids.GRAPH_VIEW, config=graph_config("graph")),
                                    html.Div(id=ids.GRAPH_NOTE, className="graph-note"),
                                ],
                                className="panel",
                            ),
                            html.Div(
                                [html.H3("MLIR"), html.Pre(id=ids.MLIR_VIEW, className="mlir")], className="panel"
                            ),
                        ],
                        className="col-main",
                    ),
                    html.Aside(
                        [
                            html.Div(
                                [
                                    html.H3("Op inspector"),
                                    html.Div("Click an op in the graph or the timeline.", id=ids.OP_INSPECTOR),
                                ],
                                className="panel",
                            ),
                            override_form(target),
                        ],
                        className="col-side",
                    ),
                ],
                className="workspace",
            ),
            analysis_tabs(),
        ],
        className="page",
    )
