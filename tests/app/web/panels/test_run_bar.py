"""The run bar: the shown run, uploads, runs stored elsewhere, and links that name a view."""

from __future__ import annotations

from tilescope.overrides import parse_item

import pytest
from dash import no_update

from tilescope.app.workbench import explorer as explorer_module
from tilescope.app.web.server import create_app
from tilescope.app.workbench.runs import execute
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.perfdb.runs import list_runs

from .conftest import FC1, MODEL, POLICY, TARGET, data_url, fired, progress, rerun, shown_run

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
    from tilescope.compiler.targets.catalog import BUILTIN_DIR

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
        ("notes.txt", b"hello", "not an .mlir or .pt2 file"),
        ("bad.mlir", b"this is not MLIR {", "bad.mlir"),
        ("binary.mlir", b"\xff\xfe\x00\x81", "not MLIR text (not UTF-8)"),
    ],
)
def test_a_bad_upload_is_one_line_on_the_page_and_changes_nothing(app, cb, name, data, reason):
    before = len(list_runs(app.explorer.sessions()))
    loaded = cb["upload_model"](progress, data_url(data), name, TARGET, POLICY)
    assert loaded["model_options"] is no_update and loaded["model"] is no_update
    text = loaded["message"].children
    assert reason in text and "\n" not in text and "Traceback" not in text
    assert len(list_runs(app.explorer.sessions())) == before


def test_an_upload_over_the_size_limit_is_refused(cb, monkeypatch):
    monkeypatch.setattr(explorer_module, "MAX_SOURCE_BYTES", 100)
    message = cb["upload_model"](progress, data_url(SMALL_MLIR), "tiny.mlir", TARGET, POLICY)["message"]
    assert message.children.startswith("tiny.mlir: ") and "MiB is over the" in message.children


def test_runs_stored_elsewhere_join_the_run_list_without_a_reload(app, cb):
    options = cb["choose_model"](MODEL, TARGET, POLICY)["run_options"]
    run_id = options[0]["value"]
    assert cb["refresh_runs"](1, MODEL, TARGET, options) is no_update  # nothing new
    # a CI pipeline stores a run of the same model on the shared database
    other = execute(
        app.explorer.sessions, MODEL, TARGET, CompileOptions([parse_item(f"{FC1}=l1")]), label="from CI"
    ).run_id
    fresh = cb["refresh_runs"](2, MODEL, TARGET, options)
    assert [o["value"] for o in fresh] == [other, run_id] and "from CI" in fresh[0]["label"]
    assert cb["refresh_runs"](3, MODEL, TARGET, fresh) is no_update


def test_the_dispatch_menu_shows_the_run_under_host_or_trace_dispatch(app, cb):
    host = shown_run(cb)
    chosen = cb["choose_model"](MODEL, TARGET, POLICY, None, "trace")
    traced = chosen["run_id"]
    assert traced != host and app.explorer.view(traced).options.dispatch == "trace"
    # the same ops, launched from a captured trace: no host wait between them
    a, b = app.explorer.view(host), app.explorer.view(traced)
    assert b.total_ns < a.total_ns and b.device_ns == pytest.approx(a.device_ns, rel=0.05)
    assert cb["choose_model"](MODEL, TARGET, POLICY, None, "trace")["run_id"] == traced  # found, not stored again
    assert cb["choose_model"](MODEL, TARGET, POLICY, None, "host")["run_id"] == host
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


def test_choosing_a_model_opens_its_baseline_not_its_newest_run(app, cb):
    """After a re-run, a tune or a CI run with overrides, the model, target, policy and dispatch
    chosen open the run with no overrides; the others are a choice in the run menu."""
    base_id = shown_run(cb)
    child = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    execute(app.explorer.sessions, MODEL, TARGET, CompileOptions([parse_item(f"{FC1}=l1")], POLICY), label="from CI")
    chosen = cb["choose_model"](MODEL, TARGET, POLICY)
    assert chosen["run_id"] == base_id and len(chosen["run_options"]) == 3
    assert app.explorer.baseline_id(app.explorer.view(child)) == base_id
    # a model with runs of overrides alone (stored from the command line) gets a baseline of its own
    wide = "zoo:mlp?layers=1&width=512"
    only = execute(app.explorer.sessions, wide, TARGET, CompileOptions([parse_item(f"{FC1}=l1")], POLICY)).run_id
    opened = cb["choose_model"](wide, TARGET, POLICY)["run_id"]
    assert opened != only and not app.explorer.run(opened).overrides
    assert app.explorer.baseline_id(app.explorer.view(only)) == opened


def test_a_link_whose_pair_is_ticked_keeps_showing_the_run_it_names(cb):
    """The runs table consumes the link's pair after the run menu consumed its run: the run the
    link named stays shown."""
    base_id = shown_run(cb)
    child = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    chosen = cb["choose_model"](MODEL, TARGET, POLICY, {"run": child, "diff": [base_id, child]})
    listed = cb["list_runs"](None, MODEL, chosen["url_state"])
    again = fired("url-state.data", cb["choose_model"], MODEL, TARGET, POLICY, listed["url_state"], shown=child)
    assert chosen["run_id"] == child and again is no_update
