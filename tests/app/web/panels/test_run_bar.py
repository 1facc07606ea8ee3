"""The run bar: the shown run, uploads, runs stored elsewhere, and links that name a view."""

from __future__ import annotations

from overrides import parse_item

import pytest
from dash import no_update

from app.workbench import explorer as explorer_module
from app.web.server import create_app
from app.workbench.runs import execute
from perfdb import queries

from .conftest import FC1, MODEL, POLICY, TARGET, data_url, progress, rerun, shown_run

SMALL_MLIR = """
func.func @forward(%x: tensor<256x256xbf16> {ttir.name = "x"}) -> tensor<256x256xbf16> {
  %0 = "ttir.exp"(%x) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("e")
  return %0 : tensor<256x256xbf16>
}
"""


def test_page_opens_on_a_stored_run_of_the_example_model(app, cb):
    chosen = cb["choose_model"](MODEL, TARGET, POLICY)
    assert chosen["status"] is None
    assert [o["value"] for o in chosen["run_options"]] == [chosen["run_id"]]
    assert "baseline" in chosen["run_options"][0]["label"]
    mlir = cb["show_mlir"](chosen["run_id"], "graph", None)
    assert mlir["window"]["lines"][0].startswith('module @"zoo:mlp?layers=1"')


def test_a_run_on_a_target_file_reopens_and_reruns_from_what_it_stored(tmp_path):
    from compiler.target import BUILTIN_DIR

    target_file = tmp_path / "mine.toml"
    target_file.write_text(
        (BUILTIN_DIR / "wormhole_n150.toml").read_text().replace('name = "wormhole_n150"', 'name = "mine"')
    )
    app = create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, str(target_file), job_dir=str(tmp_path / "jobs"))
    cb = app.tilescope_callbacks
    first = cb["choose_model"](MODEL, str(target_file), POLICY)
    again = cb["choose_model"](MODEL, str(target_file), POLICY)
    assert again["run_id"] == first["run_id"] and len(again["run_options"]) == len(first["run_options"]) == 1
    run = app.explorer.run(first["run_id"])
    assert (run.target.name, run.target_ref) == ("mine", str(target_file)) and 'name = "mine"' in run.target.description
    target_file.unlink()  # the run keeps its own copy of the target
    assert cb["show_graph"](first["run_id"], "kernel")["figure"].data
    new_id = rerun(cb, first["run_id"], memory="l1", memory_layout="block_sharded", rows=4, cols=8)
    assert app.explorer.run(new_id).target.name == "mine"


def test_an_uploaded_mlir_file_becomes_a_model_with_a_run(app, cb):
    loaded = cb["upload_model"](progress, data_url(SMALL_MLIR), "tiny.mlir", TARGET, POLICY)
    ref = loaded["model"]
    assert ref.startswith("upload/") and ref.endswith("/tiny.mlir") and ref in loaded["model_options"]
    assert "Loaded tiny.mlir" in str(loaded["message"])
    assert loaded["contents"] is None  # so the same file can be dropped again
    # any case of the suffix; a '#' is not read as a function selector
    odd = cb["upload_model"](progress, data_url(SMALL_MLIR), "v#2.MLIR", TARGET, POLICY)
    assert odd["model"].endswith("/v_2.MLIR") and "Loaded" in str(odd["message"])
    chosen = cb["choose_model"](ref, TARGET, POLICY)
    assert chosen["status"] is None and [r["value"] for r in chosen["run_options"]] == [chosen["run_id"]]
    assert set(app.explorer.durations(chosen["run_id"])) == {"e"}
    # another policy re-compiles from the stored text: there is no such file
    other = cb["choose_model"](ref, TARGET, "greedy-l1")
    assert other["status"] is None and other["run_id"] != chosen["run_id"]
    assert app.explorer.run(other["run_id"]).model.source_text == SMALL_MLIR


@pytest.mark.parametrize(
    "name, data, reason",
    [
        ("notes.txt", b"hello", "not an .mlir file"),
        ("bad.mlir", b"this is not MLIR {", "bad.mlir"),
        ("binary.mlir", b"\xff\xfe\x00\x81", "not MLIR text (not UTF-8)"),
    ],
)
def test_a_bad_upload_is_one_line_on_the_page_and_changes_nothing(app, cb, name, data, reason):
    before = len(queries.list_runs(app.explorer.sessions()))
    loaded = cb["upload_model"](progress, data_url(data), name, TARGET, POLICY)
    assert loaded["model_options"] is no_update and loaded["model"] is no_update
    text = loaded["message"].children
    assert reason in text and "\n" not in text and "Traceback" not in text
    assert len(queries.list_runs(app.explorer.sessions())) == before


def test_an_upload_over_the_size_limit_is_refused(cb, monkeypatch):
    monkeypatch.setattr(explorer_module, "MAX_SOURCE_BYTES", 100)
    message = cb["upload_model"](progress, data_url(SMALL_MLIR), "tiny.mlir", TARGET, POLICY)["message"]
    assert message.children.startswith("tiny.mlir: ") and "MiB is over the" in message.children


def test_runs_stored_elsewhere_join_the_run_list_without_a_reload(app, cb):
    options = cb["choose_model"](MODEL, TARGET, POLICY)["run_options"]
    run_id = options[0]["value"]
    assert cb["refresh_runs"](1, MODEL, TARGET, options) is no_update  # nothing new
    # a CI pipeline stores a run of the same model on the shared database
    other = execute(app.explorer.sessions, MODEL, TARGET, [parse_item(f"{FC1}=l1")], label="from CI").run_id
    fresh = cb["refresh_runs"](2, MODEL, TARGET, options)
    assert [o["value"] for o in fresh] == [other, run_id] and "from CI" in fresh[0]["label"]
    assert cb["refresh_runs"](3, MODEL, TARGET, fresh) is no_update


def test_a_link_reopens_the_model_level_run_op_and_diff_pair_it_names(cb):
    base_id = shown_run(cb)
    new_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    search = cb["write_link"](MODEL, TARGET, POLICY, "kernel", base_id, FC1, [new_id, base_id], True)
    assert "level=kernel" in search and f"run={base_id}" in search and f"diff={base_id}%2C{new_id}" in search
    assert cb["write_link"](MODEL, TARGET, POLICY, "kernel", base_id, FC1, [], False) is no_update

    opened = cb["open_link"](f"http://host/{search}", False)
    view = tuple(opened[k] for k in ("model", "target", "policy", "level", "selected", "applied"))
    assert view == (MODEL, TARGET, POLICY, "kernel", FC1, True)
    assert MODEL in opened["model_options"] and opened["url_state"] == {"run": base_id, "diff": [base_id, new_id]}
    # the link's run is shown, not the newest, and only once
    chosen = cb["choose_model"](MODEL, TARGET, POLICY, opened["url_state"])
    assert chosen["run_id"] == base_id and chosen["url_state"]["run"] is None
    assert shown_run(cb, linked=chosen["url_state"]) == new_id
    listed = cb["list_runs"](None, MODEL, chosen["url_state"])
    ticked = sorted(int(i) for i in listed["ticked"]["ids"])
    assert ticked == sorted(listed["ticked_ids"]) == [base_id, new_id] and listed["url_state"]["diff"] == []
    # what the diff reads: the table sets the ids of ticked rows only on a user's click
    diff = str(cb["show_diff"](listed["ticked_ids"], base_id))
    assert f"#{base_id}" in diff and f"#{new_id}" in diff

    assert cb["open_link"](f"http://host/{search}", True) is no_update  # read once per page load
    odd = cb["open_link"]("http://host/?level=nonsense&run=abc&diff=1", False)
    assert odd["selected"] is no_update and odd["url_state"] == {"run": None, "diff": []}
    # a run the database does not hold: the newest instead
    assert shown_run(cb, linked={"run": 99999, "diff": []}) == new_id


def test_switching_model_forgets_the_selection_and_search_a_link_keeps_them(cb):
    base_id = shown_run(cb)
    new_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    search = cb["write_link"](MODEL, TARGET, POLICY, "graph", base_id, FC1, [base_id, new_id], True)
    # the page opening a link sets the model the address names: its op stays selected
    assert cb["forget_on_model_switch"](MODEL, search) is no_update
    # the user picks another model: the last one's op and search go, and op= leaves the address
    forgot = cb["forget_on_model_switch"]("classifier.mlir", search)
    assert forgot == {"selected": None, "pattern": "", "mlir_search": ""}
    after = cb["write_link"]("classifier.mlir", TARGET, POLICY, "graph", None, forgot["selected"], [], True)
    assert "op=" not in after and "diff=" not in after
    # the last model's ticked pair does not carry over to the other model's runs
    shown_run(cb, model="classifier.mlir")
    listed = cb["list_runs"](None, "classifier.mlir", {"run": None, "diff": [base_id, new_id]})
    assert listed["rows"] and listed["ticked_ids"] == [] and listed["ticked"] == {"ids": []}


@pytest.mark.parametrize(
    "query", ["run=99999999999999999999&diff=1,99999999999999999999", "run=%C2%B2", "run=-1&diff=0,1"]
)
def test_a_link_with_run_ids_no_database_holds_opens_the_newest_run(cb, query):
    assert cb["open_link"](f"http://host/?{query}", False)["url_state"] == {"run": None, "diff": []}
    chosen = cb["choose_model"](MODEL, TARGET, POLICY, {"run": 2**70, "diff": []})
    assert chosen["status"] is None and isinstance(chosen["run_id"], int)


def test_a_link_to_a_target_or_policy_the_page_does_not_offer_keeps_the_menus(cb):
    offered = [{"label": t, "value": t} for t in ("wormhole_n150", "blackhole_p150")]
    opened = cb["open_link"](
        "http://host/?target=/etc/x.toml&policy=nosuch&level=kernel", False, offered, ["dram-interleaved"]
    )
    assert opened["target"] is no_update and opened["policy"] is no_update and opened["level"] == "kernel"


def test_the_dispatch_menu_shows_the_run_under_host_or_trace_dispatch(app, cb):
    host = shown_run(cb)
    chosen = cb["choose_model"](MODEL, TARGET, POLICY, None, "trace")
    traced = chosen["run_id"]
    assert traced != host and app.explorer.view(traced).dispatch == "trace"
    # the same ops, launched from a captured trace: no host wait between them
    a, b = app.explorer.view(host), app.explorer.view(traced)
    assert b.total_ns < a.total_ns and b.device_ns == pytest.approx(a.device_ns, rel=0.05)
    assert cb["choose_model"](MODEL, TARGET, POLICY, None, "trace")["run_id"] == traced  # found, not stored again
    assert cb["choose_model"](MODEL, TARGET, POLICY, None, "host")["run_id"] == host
    # the address keeps it, and a link opens it
    search = cb["write_link"](MODEL, TARGET, POLICY, "graph", traced, None, [], True, "trace")
    assert "dispatch=trace" in search
    assert cb["open_link"](f"http://host/{search}", False)["dispatch"] == "trace"
    assert cb["open_link"]("http://host/?dispatch=warp", False)["dispatch"] is no_update
    # a hostile value from the page is one line, and stores nothing
    refused = cb["choose_model"](MODEL, TARGET, POLICY, None, "x" * 10_000)
    assert "dispatch must be one of host, trace" in str(refused["status"]) and len(str(refused["status"])) < 400


def test_zoo_parameters_reopen_the_model_with_them(cb):
    assert cb["show_zoo_params"]("zoo:bert-base?layers=2&seq=128") == "layers=2&seq=128"
    assert cb["show_zoo_params"]("classifier.mlir") == ""
    chosen = cb["apply_zoo_params"](1, "layers=1&seq=64 ", "zoo:bert-base?layers=2")
    assert chosen["model"] == "zoo:bert-base?layers=1&seq=64" and chosen["model"] in chosen["model_options"]
    assert cb["apply_zoo_params"](1, "", "zoo:bert-base?layers=2")["model"] == "zoo:bert-base"
    # a bad parameter is one line naming it, and the model shown stays
    bad = cb["apply_zoo_params"](1, "layers=lots", "zoo:bert-base?layers=2")
    assert bad["model"] is no_update and "parameter layers must be a positive integer" in str(bad["message"])
    unknown = cb["apply_zoo_params"](1, "heads=3", "zoo:mlp")
    assert "unknown parameter 'heads' (zoo:mlp takes batch, width, hidden, layers, dtype)" in str(unknown["message"])
    assert "at most 200 characters" in str(cb["apply_zoo_params"](1, "a" * 5000, "zoo:mlp")["message"])
    assert "apply to zoo models" in str(cb["apply_zoo_params"](1, "layers=2", "classifier.mlir")["message"])
    # the parameters compile: the page then shows that model's run
    assert shown_run(cb, model=chosen["model"]) > 0
