"""The statistics, roofline, graph and diff views in real headless Chromium: what a user reads
off them at the scale of real models (twelve alike layers, BERT-base, XLA's ResNet-50)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.conftest import CORPUS

from . import serving
from .test_browser import _prop, _settled, _shot, _tab, _text, _wait, browser  # noqa: F401  # browser: the fixture

pytestmark = pytest.mark.browser

LAYERS = "zoo:mlp?layers=12"
BERT = "zoo:bert-base?seq=128"
CONSUMER = "mlp.layer.0.fc2.matmul"
GRAPH = "var gd = document.querySelector('#graph-view .js-plotly-plot');"


@pytest.fixture(scope="module")
def layers_server(tmp_path_factory):
    """Twelve alike layers; (page URL, database URL)."""
    tmp = tmp_path_factory.mktemp("views")
    db = f"sqlite:///{tmp / 'ui.db'}"
    url, proc = serving.start(LAYERS, db, logs=tmp)
    yield url, db
    proc.stop()


def _grid(driver, element_id: str, script: str):
    """`script` run with the grid's API as `api` (rows in the order shown: api.forEachNodeAfterFilterAndSort)."""
    return driver.execute_script(
        "var api = window.dash_ag_grid && window.dash_ag_grid.getApi(arguments[0]); if (!api) { return null; }"
        + script,
        element_id,
    )


SHOWN_ROWS = "var rows = []; api.forEachNodeAfterFilterAndSort(function (n) { rows.push(n.data); }); return rows;"


def _console_warnings(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") in ("WARNING", "SEVERE")]


def test_statistics_add_up_to_the_run_in_natural_order_and_the_roofline_counts_alike_ops(layers_server, browser):  # noqa: F811
    d = browser
    d.get(layers_server[0])
    _wait(d, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=60)
    _tab(d, "Statistics")
    _wait(d, lambda d: len(_grid(d, "stats-table", SHOWN_ROWS) or []) == 24)
    rows = _grid(d, "stats-table", SHOWN_ROWS)
    # the twelve fc2 of equal time, 0 to 11: not 0, 1, 10, 11, 2, ...
    assert [r["name"] for r in rows[:12]] == [f"mlp.layer.{i}.fc2.matmul" for i in range(12)]
    # the time no op runs, pinned under the ops: the shares add up to the whole run
    _wait(d, lambda d: "host / idle" in _text(d, "stats-table"))
    idle = _grid(d, "stats-table", "return api.getPinnedBottomRow(0).data;")
    # each share is shown to 0.01%: rounded, 25 of them may sum to 100 +- 0.125
    assert idle["pct_of_run"] > 5 and sum(r["pct_of_run"] for r in rows) + idle["pct_of_run"] == pytest.approx(
        100, abs=0.005 * (len(rows) + 1)
    )
    # sorting by name, numbers as numbers
    d.find_element(By.XPATH, "//div[@id='stats-table']//span[contains(@class, 'ag-header-cell-text')][.='op']").click()
    _wait(d, lambda d: _grid(d, "stats-table", SHOWN_ROWS)[0]["name"] == "mlp.layer.0.fc1.matmul")
    names = [r["name"] for r in _grid(d, "stats-table", SHOWN_ROWS)]
    assert names.index("mlp.layer.2.fc1.matmul") < names.index("mlp.layer.10.fc1.matmul")
    _shot(d, "40-statistics-idle-natural-order")

    _tab(d, "Roofline")
    _wait(d, lambda d: "×12" in _text(d, "roofline-view"))
    dots = d.execute_script(
        "var gd = document.querySelector('#roofline-view .js-plotly-plot');"
        "return gd.data.filter(function (t) { return /-bound$/.test(t.name); })"
        ".map(function (t) { return [t.text, t.marker.size]; });"
    )
    counts = sorted(int(text[1:] or 1) for texts, _ in dots for text in texts)
    assert sum(counts) == 24 and counts[-1] == 12  # twelve fc2 in one dot that says so
    _shot(d, "41-roofline-stacked")


def test_the_diff_lists_inserted_ops_as_rows_hides_unchanged_ones_and_shows_both_histograms(layers_server, browser):  # noqa: F811
    d = browser
    url, db = layers_server
    # a second run (from the command line, as CI stores one) whose fc2 reads its operand 1 from
    # L1: a to_layout inserted, the other ops unchanged
    override = f"{CONSUMER}=operand#1:l1:width_sharded:1x8"
    stored = subprocess.run(
        [
            sys.executable,
            "-m",
            "tilescope.app.cli",
            "run",
            LAYERS,
            "--db",
            db,
            "--override",
            override,
            "--label",
            "fc2 from L1",
        ],
        capture_output=True,
        text=True,
    )
    assert stored.returncode == 0, stored.stderr
    d.get_log("browser")  # what earlier pages logged
    d.get(url + "?diff=1,2")
    _wait(d, lambda d: "run #" in _text(d, "run-summary") and _settled(d), timeout=60)
    _tab(d, "Runs & diff")
    _wait(d, lambda d: "#2 fc2 from L1" in _text(d, "diff-view"))
    _wait(d, lambda d: _grid(d, "diff-table", SHOWN_ROWS))
    rows = {r["name"]: r for r in _grid(d, "diff-table", SHOWN_ROWS)}
    inserted = f"{CONSUMER}.in1.to_layout"
    assert rows[inserted]["changes"] == "inserted: only in B #2" and rows[inserted]["a_us"] is None
    # marked: tinted as run B's pill
    tint = d.execute_script(
        "var row = document.querySelector("
        "  '#diff-table .ag-center-cols-container .ag-row[row-id=\"' + arguments[0] + '\"]');"
        "return row ? getComputedStyle(row).backgroundColor : null;",
        inserted,
    )
    assert tint == "rgb(254, 243, 199)"
    # a table of a few rows is as tall as they are: none cut off behind a scroll bar
    hidden = d.execute_script(
        "var v = document.querySelector('#diff-table .ag-body-viewport');return v.scrollHeight - v.clientHeight;"
    )
    assert hidden <= 1
    # the unchanged ops of the other eleven layers are left out, counted by the toggle
    assert "mlp.layer.5.fc1.matmul" not in rows and len(rows) < 10
    toggle = _text(d, "diff-unchanged")
    count = int(re.search(r"show the (\d+) unchanged ops", toggle).group(1))
    d.find_element(By.CSS_SELECTOR, "#diff-unchanged input").click()
    _wait(d, lambda d: len(_grid(d, "diff-table", SHOWN_ROWS) or []) == len(rows) + count)
    # the changes of an op wrap rather than being cut
    changes = d.find_element(By.CSS_SELECTOR, f"#diff-table .ag-row[row-id='{CONSUMER}'] [col-id='changes']")
    assert "operand 1 grid 1x1->1x8" in changes.text and changes.size["height"] > 30
    histogram = d.execute_script("return document.querySelector('#diff-histogram .js-plotly-plot').layout.barmode;")
    assert histogram == "group"
    d.execute_script("document.getElementById('diff-ops').scrollIntoView()")
    _shot(d, "42-diff-inserted-rows")
    assert not [w for w in _console_warnings(d) if "getRowId" in w or "warning #" in w]


@pytest.fixture(scope="module")
def bert_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("views-bert")
    url, proc = serving.start(BERT, f"sqlite:///{tmp / 'ui.db'}", logs=tmp)
    yield url
    proc.stop()


def _node_px(driver) -> float:
    return driver.execute_script(
        GRAPH + "var t = gd.data.find(function (t) { return t.name === 'ops'; }); return t.marker.size[0];"
    )


def _fanned(driver):
    """[x, y] of the node whose hover says its edges are left to a selection, and its op."""
    return driver.execute_script(
        GRAPH + "for (var k = 0; k < gd.data.length; k++) { var t = gd.data[k];"
        "  if (!t.meta || !t.meta.labels) { continue; }"
        "  var values = window.dash_clientside.plotly_arrays.values, x = values(t.x), y = values(t.y);"
        "  for (var i = 0; i < x.length; i++) { if (/read by 12 nodes/.test(t.hovertext[i])) {"
        "    return [x[i], y[i], t.customdata[i]]; } } } return null;"
    )


def _edges_from(driver, trace: str, at) -> int:
    """Segments of a lines trace (the edges, or the selection's) that start at `at`."""
    return driver.execute_script(
        GRAPH + "var t = arguments[0] === 'selected' ? gd.data[0] :"
        "  gd.data.find(function (t) { return t.mode === 'lines'; });"
        "var n = 0; for (var i = 0; i + 1 < t.x.length; i += 1) {"
        "  if (t.x[i] === arguments[1] && t.y[i] === arguments[2] && t.x[i + 1] !== null) { n++; } } return n;",
        trace,
        at[0],
        at[1],
    )


def test_bert_graph_scales_with_zoom_leaves_the_mask_fan_to_a_selection_and_lists_groups_in_order(bert_server, browser):  # noqa: F811
    d = browser
    d.set_window_size(1600, 1300)
    d.get(bert_server)
    _wait(d, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=90)
    _wait(d, lambda d: d.execute_script(GRAPH + "return !!(gd && gd.data && gd.layout.meta.home);"))
    # open groups in natural order
    opened = [g for g in _prop(d, "graph-groups", "value") if g.startswith("group:encoder.layer.")]
    assert opened == [f"group:encoder.layer.{i}" for i in range(12)]
    # the attention mask, read by every layer: no fan of edges until it is selected
    mask = _fanned(d)
    assert mask and "attention_mask" in mask[2] and _edges_from(d, "lines", mask) == 0
    _shot(d, "43-bert-graph-no-fan")
    before = _node_px(d)
    d.execute_script(
        GRAPH + "var x = gd._fullLayout.xaxis.range, y = gd._fullLayout.yaxis.range;"
        "var mx = (x[0] + x[1]) / 2, my = (y[0] + y[1]) / 2, hx = (x[1] - x[0]) / 8, hy = (y[1] - y[0]) / 8;"
        "window.Plotly.relayout(gd, {'xaxis.range': [mx - hx, mx + hx], 'yaxis.range': [my - hy, my + hy]});"
    )
    _wait(d, lambda d: _node_px(d) == pytest.approx(before * 4, rel=0.01))  # a quarter of the width: 4x
    _shot(d, "44-bert-graph-zoomed-nodes")
    d.get(bert_server + "?op=" + mask[2])
    _wait(d, lambda d: _settled(d) and d.execute_script(GRAPH + "return !!(gd && gd.data);"), timeout=60)
    _wait(d, lambda d: _edges_from(d, "selected", _fanned(d)) == 12)
    _shot(d, "45-bert-graph-mask-selected")
    # a search of escaped dots reads as typed
    search = d.find_element(By.ID, "graph-search")
    search.send_keys(r"layer\.1\..*query", Keys.ENTER)
    _wait(d, lambda d: "ops match" in _text(d, "graph-note"))
    assert r"'layer\.1\..*query'" in _text(d, "graph-note")


@pytest.fixture(scope="module")
def resnet_server(tmp_path_factory):
    path = CORPUS / "resnet50_xla.mlir"
    if not path.is_file():
        pytest.skip(f"MLIR corpus not found at {CORPUS}")
    tmp = tmp_path_factory.mktemp("views-resnet")
    url, proc = serving.start(str(path), f"sqlite:///{tmp / 'ui.db'}", logs=tmp)
    yield url
    proc.stop()


def test_xla_resnet50_opens_as_boxes_of_its_modules(resnet_server, browser):  # noqa: F811
    d = browser
    d.get(resnet_server)
    _wait(d, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=90)
    _wait(d, lambda d: d.execute_script(GRAPH + "return !!(gd && gd.layout.meta && gd.layout.meta.boxes);"))
    boxes = d.execute_script(GRAPH + "return gd.layout.meta.boxes.map(function (b) { return b[3]; });")
    # not a flat chain of some 50 conv blocks: the model's stages as boxes, its layers in them
    assert {"resnet", "embedder.embedder", "encoder.stages"} | {f"stages.{i}.layers" for i in range(4)} <= set(boxes)
    labels = d.execute_script(
        GRAPH + "var out = []; gd.data.forEach(function (t) { if (t.meta && t.meta.labels) {"
        "  out = out.concat(t.meta.labels); } }); return out;"
    )
    assert len([label for label in labels if label.startswith("layers.0 (")]) == 4  # each stage's first
    assert len(labels) < 40
    _shot(d, "46-resnet50-xla-modules")
    assert not [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
