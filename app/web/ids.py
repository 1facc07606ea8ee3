"""Component ids: stable names that callbacks, CSS and browser tests share. The page's scripts
(assets/*.js) get those they need from their callbacks, as states, and type none."""

MODEL_SELECT = "model-select"
MODEL_FIELD = "model-field"  # the model menu and its label: its tooltip names the model in full
ZOO_PARAMS = "zoo-params"  # a zoo model's parameters as a query string (layers=2&seq=128)
TARGET_SELECT = "target-select"
POLICY_SELECT = "policy-select"
DISPATCH_SELECT = "dispatch-select"  # host or trace: how the simulated runs launch their ops
# IREE's data-tiling: matmuls packed into the target's inner tiles (["on"] when ticked)
DATA_TILING = "data-tiling"
LEVEL_SELECT = "level-select"
RUN_SELECT = "run-select"
RUN_FIELD = "run-field"  # the run menu and its label: its tooltip names the run in full
RUNS_POLL = "runs-poll"  # interval: runs stored elsewhere (CI, a teammate, the CLI) appear without a reload
GRAPH_VIEW = "graph-view"
MLIR_VIEW = "mlir-view"
OP_INSPECTOR = "op-inspector"
OVERRIDE_FORM = "override-form"
APPLY_OVERRIDES = "apply-overrides"
TIMELINE_VIEW = "timeline-view"
RUN_SUMMARY = "run-summary"
RUN_LOAD_TIME = "run-load-time"  # in the summary: the run's work once per model load, when it has any
SHOW_LOAD_OPS = "show-load-ops"  # pattern-matching id type of the load time's link to its ops
RUN_NOT_BASELINE = "run-not-baseline"  # in the summary: a run with overrides says so, and offers the baseline
RUN_MEASURED = "run-measured"  # in the summary: a measured run or a replay says so, not its policy and dispatch
SHOW_BASELINE = "show-baseline"  # pattern-matching id type of its button, by the baseline's run id
OVERRIDE_STATUS = "override-status"
SELECTED_OP = "selected-op"

# override form fields
OV_MEMORY = "override-memory"
OV_MEMORY_LAYOUT = "override-memory-layout"
OV_GRID_ROWS = "override-grid-rows"
OV_GRID_COLS = "override-grid-cols"
OV_GRID_NOTE = "override-grid-note"  # why the grid moved to one that divides the tensor
OV_LAYOUT = "override-layout"
OV_DTYPE = "override-dtype"
OV_FIDELITY = "override-fidelity"
OV_APPLIES_TO = "override-applies-to"
OV_TILE = "override-tile"
OV_BLOCK = "override-block"
OV_SUBBLOCK = "override-subblock"
OV_INNER_TILES = "override-inner-tiles"  # a data-tiled matmul's M0xN0xK0
OV_DOUBLE_BUFFER = "override-double-buffer"
OV_FUSE = "override-fuse"
OV_SHARDING = "override-sharding"
OV_SHARDING_FIELD = "override-sharding-field"  # its label and input, hidden for a run on one device
STAGE_OVERRIDE = "stage-override"
PENDING_OVERRIDES = "pending-overrides"  # store: override items waiting for "Apply and re-run"
PENDING_LIST = "pending-list"
PENDING_REMOVE = "pending-remove"  # pattern-matching id type of each pending item's remove button
OVERRIDES_UPLOAD = "overrides-upload"
APPLY_PROGRESS = "apply-progress"  # the stage a re-run is at
UPLOAD_PROGRESS = "upload-progress"  # the stage an uploaded model's first run is at
REPLAY_PROGRESS = "replay-progress"  # the stage a replay of the shown measured run is at
COMPILE_PROGRESS = "compile-progress"  # shown while the chosen model, target, policy or dispatch opens
COMPILE_OPENING = "compile-opening"  # what is opening
COMPILE_STAGE = "compile-stage"  # the stage of its compile, when it has no run yet
COMPILE_POLL = "compile-poll"  # interval: on while it opens, asking for the stage

# Tune: a search of overrides from the shown run
TUNE_BUDGET = "tune-budget"  # seconds
TUNE_PRECISION = "tune-precision"  # whether dtype and fidelity may change too
TUNE_START = "tune-start"
TUNE_CANCEL = "tune-cancel"
TUNE_PROGRESS = "tune-progress"
TUNE_STATUS = "tune-status"  # what the last search found

# export of the shown run
EXPORT_FORMAT = "export-format"
EXPORT_BUTTON = "export-button"
EXPORT_DOWNLOAD = "export-download"
REPLAY_BUTTON = "replay-button"  # beside the export: replay the shown measured run, then compare the two

# analysis panels under the workspace
ANALYSIS_TABS = "analysis-tabs"
TIMELINE_SHOW = "timeline-show"  # what the timeline adds: engine lanes, counter plots
TIMELINE_ZONE = "timeline-zone"  # the card beside the timeline: the zone last clicked
TIMELINE_TIP = "timeline-tip"  # the card that follows the pointer over a zone
TIMELINE_PIN = "timeline-pin"  # store: a zone pinned to the timeline's card from elsewhere (find zone's list)
TIMELINE_ZOOM = "timeline-zoom"  # store: the run and time range (us) the timeline asks the server for (zoom, pan)
TIMELINE_RANGE = "timeline-range"  # store: the run and time range (us) the timeline shows, as the browser last drew it
STATS_BY = "stats-by"
STATS_TABLE = "stats-table"
MEMORY_VIEW = "memory-view"
MEMORY_PEAK = "memory-peak"
ROOFLINE_VIEW = "roofline-view"
RUNS_TABLE = "runs-table"
TICKED_RUNS = "ticked-runs"  # the ids of the runs ticked in the runs table
DIFF_VIEW = "diff-view"  # the comparison: its head, the toggle of unchanged ops, its body
DIFF_HEAD = "diff-summary"  # totals, overrides, the aligned timelines, each device's split
DIFF_TABLE = "diff-table"
DIFF_KINDS = "diff-kinds"  # the diff summed by op kind, over the per-op table of a long diff
DIFF_BODY = "diff-ops"  # the per-op table and the histograms, under the toggle of unchanged ops
DIFF_UNCHANGED = "diff-unchanged"  # ticked: the per-op table lists the ops that did not change too
DIFF_LOAD = "diff-load"  # both runs' work once per model load, under the totals
DIFF_HISTOGRAM = "diff-histogram"
DIFF_TIMELINES = "diff-timelines"  # the two runs' ops aligned on one time axis
DIFF_DEVICES = "diff-devices"  # each device's step in both runs, side by side
LOAD_OPS_VIEW = "load-ops-view"  # the shown run's work once per model load, under the statistics
LOAD_OPS_TABLE = "load-ops-table"
DEVICES_TABLE = "devices-table"
FIND_ZONE = "find-zone"  # histogram of one op's zones (or one op type's ops) under the statistics
FIND_ZONE_OF = "find-zone-of"  # store: the run and op (or op type) find zone shows, and the op picked in its list
FIND_ZONE_NOTE = "find-zone-note"  # what the buckets picked on the histogram hold
FIND_ZONE_TABLE = "find-zone-table"  # the zones of the buckets picked, the longest first
MODEL_UPLOAD = "model-upload"
REPORT_UPLOAD = "report-upload"  # a profile measured on hardware: an ops perf report or a JSON trace
PAGE_MESSAGE = "page-message"

# graph view controls
GRAPH_COLOUR = "graph-colour"
GRAPH_SEARCH = "graph-search"
GRAPH_GROUPS = "graph-groups"
GRAPH_NOTE = "graph-note"

# the view in the address bar
URL = "url"
URL_STATE = "url-state"  # store: the link's run and diff pair, until the page has shown them
URL_SHOWN = "url-shown"  # store: the address as the page last read or wrote it (url_state.Shown)
URL_WANTED = "url-wanted"  # store: the address the page asks the browser to show (url_state.Wanted)
# the same, written at once as another model is chosen: a store of its own, as Dash holds back a
# callback whose input a running callback may still change (the view's, until the model's run is found)
URL_OPENING = "url-opening"

# MLIR view: a search of the level's text, stepping through its matches, and what the view shows
MLIR_SEARCH = "mlir-search"
MLIR_NEXT = "mlir-next"
MLIR_PREV = "mlir-prev"
MLIR_FOUND = "mlir-found"  # "3 of 57 matches"
MLIR_NOTE = "mlir-note"  # which lines of the level the view holds
MLIR_WINDOW = "mlir-window"  # store: the lines the view draws, with their tokens, matches and marks
MLIR_STATE = "mlir-state"  # store: the window shown, the search and its current match
