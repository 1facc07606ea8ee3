"""What the page holds, in real headless Chromium: a model opens its baseline and a run with
overrides says it is not one; the override form shows every knob the shown run's override holds and
the next Apply keeps it; the grid menus offer the grids the tensor divides into; the page follows
Back and Forward, and its address says what it shows, at once when another model is chosen."""

from __future__ import annotations

import sqlite3
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from selenium.webdriver.common.by import By

from tilescope.app.workbench.explorer import Explorer
from tilescope.overrides import parse_item
from tilescope.perfdb.runs import get_run, newest_run_id
from tilescope.perfdb.engine import open_db, session_factory

from . import serving
from .test_browser import _chrome, _pick, _prop, _settled, _shot, _text, _wait

pytestmark = pytest.mark.browser

MODEL = "zoo:bert-base?layers=4&seq=128"
QUERY = "encoder.layer.3.attention.self.query.matmul"  # 1024 x 768: 32x24 tiles of 32x32
BLOCK = f"{QUERY}=block#4x3x2"
# every address the page writes, as it writes it: the history's entries are the test's subject
HISTORY = """
window.historyWrites = [];
['pushState', 'replaceState'].forEach(function (name) {
    var write = window.history[name].bind(window.history);
    window.history[name] = function (state, title, url) {
        window.historyWrites.push([name, new URL(url, window.location.href).search]);
        return write(state, title, url);
    };
});
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A server on a database holding the model's baseline and, newer, a run with a block on QUERY:
    (its address, the baseline's id, the blocked run's id, the database)."""
    tmp = tmp_path_factory.mktemp("state")
    db_url = f"sqlite:///{tmp / 'ui.db'}"
    explorer = Explorer(session_factory(open_db(db_url)))
    base = explorer.ensure_run(MODEL, "wormhole_n150")
    blocked, outcomes = explorer.apply_overrides(base, [parse_item(BLOCK)])
    assert [o["status"] for o in outcomes] == ["applied"]
    url, proc = serving.start(MODEL, db_url, logs=tmp)
    yield url, base, blocked, db_url
    proc.stop()


@pytest.fixture(scope="module")
def browser():
    driver = _chrome()
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HISTORY})
    yield driver
    driver.quit()


def _open(d, url: str, **query) -> None:
    d.get(url + ("?" + urlencode(query) if query else ""))
    _wait(d, lambda d: "run #" in _text(d, "run-summary") and _settled(d), 120)


def _query(d) -> dict:
    return {k: v[0] for k, v in parse_qs(urlsplit(d.current_url).query).items()}


def _writes(d) -> list:
    return d.execute_script("return window.historyWrites")


def _level(d, level: str) -> None:
    d.find_element(By.XPATH, f"//div[@id='level-select']//label[contains(., '{level}')]").click()
    _wait(d, lambda d: _query(d).get("level") == level and _settled(d))


def test_a_model_opens_its_baseline_and_a_run_with_overrides_says_it_is_not_one(page, browser):
    url, base, blocked, _ = page
    d = browser
    _open(d, url)  # the blocked run is the newest
    assert _prop(d, "run-select", "value") == base and "not the baseline" not in _text(d, "run-summary")
    _open(d, url, model=MODEL, run=blocked)
    _wait(d, lambda d: "not the baseline (1 override)" in _text(d, "run-not-baseline"))
    _shot(d, "50-not-the-baseline")
    d.find_element(By.CSS_SELECTOR, "#run-not-baseline button").click()
    _wait(d, lambda d: _prop(d, "run-select", "value") == base and f"run #{base}" in _text(d, "run-summary"))
    assert _query(d)["run"] == str(base)


def test_the_form_shows_the_runs_block_and_the_next_apply_keeps_it(page, browser):
    url, _, blocked, db_url = page
    d = browser
    _open(d, url, model=MODEL, run=blocked, op=QUERY)
    _wait(d, lambda d: _prop(d, "override-memory", "value") == "dram")
    assert _prop(d, "override-block", "value") == "4x3x2"
    assert {"label": "output (overridden)", "value": "output"} in _prop(d, "override-applies-to", "options")
    _pick(d, "override-dtype", "bfp8")
    _pick(d, "override-fidelity", "hifi2")
    d.find_element(By.ID, "apply-overrides").click()
    _wait(d, lambda d: "applied" in _text(d, "override-status") and _settled(d), 120)
    with session_factory(open_db(db_url))() as session:
        newest = get_run(session, newest_run_id(session, MODEL, "wormhole_n150"))
    assert newest.parent_id == blocked
    (item,) = [parse_item(o) for o in newest.overrides]
    assert (item.block, item.dtype, item.fidelity) == ((4, 3, 2), "bfp8", "hifi2")
    assert "block#4x3x2" in _text(d, "run-select")  # the new run's label names it
    assert _prop(d, "override-block", "value") == "4x3x2"  # and the form still shows it


def _options(d, menu: str, shot: str) -> dict[str, bool]:
    """A menu's options as the page draws them: label -> whether it can be chosen."""
    d.find_element(By.ID, menu).click()
    _wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=option]"), 10)
    drawn = d.execute_script(
        "return Array.from(document.querySelectorAll('[role=option]'), function (o) {"
        " return [o.innerText.trim(), !o.querySelector('input[disabled]')]; });"
    )
    _shot(d, shot)
    d.find_element(By.TAG_NAME, "body").send_keys("\ue00c")  # Escape: closed again
    return dict(drawn)


def test_the_grid_menus_offer_the_grids_that_give_every_core_a_shard(page, browser, tmp_path):
    url, base, _, _ = page
    d = browser
    _open(d, url, model=MODEL, run=base, op=QUERY)
    _wait(d, lambda d: _prop(d, "override-grid-rows", "value") == 8)
    _pick(d, "override-memory", "l1")
    _pick(d, "override-memory-layout", "height_sharded")  # 32 tile rows: at most 32 cores, the last shard partial
    _wait(d, lambda d: (_prop(d, "override-grid-rows", "value"), _prop(d, "override-grid-cols", "value")) == (4, 8))
    assert "grid set to 4x8" in _text(d, "override-grid-note")
    rows = _options(d, "override-grid-rows", "51-grid-menus")
    # every row count has a column count with no more cores than the 32 tile rows (3x8: shards of 2 rows)
    assert [r for r, can in rows.items() if not can] == []
    d.find_element(By.ID, "stage-override").click()
    _wait(d, lambda d: _prop(d, "pending-overrides", "data"))
    assert _prop(d, "pending-overrides", "data") == [f"{QUERY}=4x8:l1:height_sharded:tile:bf16"]
    assert "Not added" not in _text(d, "override-status")

    # one override that cannot apply is named as one
    (tmp_path / "one.txt").write_text("override-output-layout=encoder.nosuch.matmul=l1")
    d.find_element(By.CSS_SELECTOR, "#overrides-upload input[type=file]").send_keys(str(tmp_path / "one.txt"))
    _wait(d, lambda d: "1 override added to pending" in _text(d, "override-status"))
    d.find_element(By.ID, "apply-overrides").click()
    _wait(d, lambda d: "cannot apply" in _text(d, "override-status"), 60)
    assert "Not re-run: 1 override cannot apply, so none was applied. Fix or remove it, then apply again." in _text(
        d, "override-status"
    )


def test_back_and_forward_show_the_view_their_address_names(page, browser):
    url, base, blocked, _ = page
    d = browser
    _open(d, url)
    opened = _writes(d)
    _level(d, "kernel")
    _level(d, "layout")
    d.back()
    _wait(d, lambda d: _prop(d, "level-select", "value") == "kernel" and _settled(d))
    assert _query(d)["level"] == "kernel" and "ts.cores" in _text(d, "mlir-view")
    d.back()
    _wait(d, lambda d: _prop(d, "level-select", "value") == "graph" and _settled(d))
    d.forward()
    _wait(d, lambda d: _prop(d, "level-select", "value") == "kernel" and _settled(d))
    assert _query(d)["level"] == "kernel"
    # the address the page opened is filled in where it stands (Back from it leaves the page), each
    # level is an entry, and following an address writes none: Forward still leads on
    assert [name for name, _ in opened] == ["replaceState"] and "run" in parse_qs(opened[0][1].lstrip("?"))
    assert [name for name, _ in _writes(d)] == ["replaceState", "pushState", "pushState"]
    d.forward()
    _wait(d, lambda d: _prop(d, "level-select", "value") == "layout" and _settled(d))

    # another run, then Back: the run before, and its op
    _open(d, url, model=MODEL, run=blocked, op=QUERY)
    d.find_element(By.CSS_SELECTOR, "#run-not-baseline button").click()
    _wait(d, lambda d: _query(d).get("run") == str(base) and _settled(d))
    d.back()
    _wait(d, lambda d: _prop(d, "run-select", "value") == blocked and _settled(d))
    assert _prop(d, "selected-op", "data") == QUERY and f"run #{blocked}" in _text(d, "run-summary")
    severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe


def test_another_model_is_in_the_address_at_once_and_back_returns_to_the_link(page, browser):
    """The address names the chosen model while its run is found (here compiled), without the last
    model's run, op and pair; then its run fills it in, in place."""
    url, _, _, db_url = page
    d = browser
    link = {"model": "zoo:mlp", "op": "mlp.layer.0.fc1.matmul", "diff": "1,1"}
    _open(d, url, **link)
    _wait(d, lambda d: _prop(d, "selected-op", "data") == link["op"])
    opened = _query(d)
    assert opened["model"] == "zoo:mlp" and opened["op"] == link["op"] and "run" in opened
    d.execute_script("window.historyWrites = [];")
    # the database locked for writing: bert-base compiles but cannot store its run until released
    lock = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        _pick(d, "model-select", "zoo:bert-base")
        _wait(d, lambda d: _query(d).get("model") == "zoo:bert-base")
        assert "busy" in _prop(d, "compile-progress", "className")  # its run is still to come
        assert not {"run", "op", "diff"} & _query(d).keys()
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    _wait(d, lambda d: "zoo:bert-base on" in _text(d, "run-summary") and _settled(d), 300)
    (first, then) = _writes(d)
    assert first[0] == "pushState" and parse_qs(first[1].lstrip("?"))["model"] == ["zoo:bert-base"]
    assert then[0] == "replaceState" and _query(d)["run"] == str(_prop(d, "run-select", "value"))
    assert _query(d)["model"] == "zoo:bert-base" and "op" not in _query(d)
    d.back()
    _wait(d, lambda d: "zoo:mlp on" in _text(d, "run-summary") and _settled(d), 60)
    assert _query(d) == opened and _prop(d, "selected-op", "data") == link["op"]
