"""The address bar: links that name a view, Back and Forward, and the address as the view changes."""

from __future__ import annotations

import pytest
from dash import no_update

from tilescope.app.web import url_state
from tilescope.app.web.url_state import Shown, ViewState

from .conftest import FC1, MODEL, POLICY, TARGET, rerun, shown_run

READ = {"search": "", "opening": False}  # the address has been read: the page writes it from now on


def link(cb, *view, shown=READ, dispatch="host") -> str:
    """The address write_link asks for, for a view (model, target, policy, level, run, op, ticked)."""
    return cb["write_link"](*view, dispatch, shown)["wanted"]["search"]


def test_a_link_reopens_the_model_level_run_op_and_diff_pair_it_names(cb):
    base_id = shown_run(cb)
    new_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    search = link(cb, MODEL, TARGET, POLICY, "kernel", base_id, FC1, [new_id, base_id])
    assert "level=kernel" in search and f"run={base_id}" in search and f"diff={base_id}%2C{new_id}" in search
    unread = cb["write_link"](MODEL, TARGET, POLICY, "kernel", base_id, FC1, [], "host", None)
    assert unread == {"wanted": no_update, "shown": no_update}  # the address has not been read yet

    opened = cb["open_link"](search, None)
    view = tuple(opened[k] for k in ("model", "target", "policy", "level", "selected"))
    assert view == (MODEL, TARGET, POLICY, "kernel", FC1) and opened["shown"] == {"search": search, "opening": True}
    assert MODEL in opened["model_options"] and opened["url_state"] == {"run": base_id, "diff": [base_id, new_id]}
    # the link's run is shown, not the baseline, and only once
    chosen = cb["choose_model"](MODEL, TARGET, POLICY, opened["url_state"])
    assert chosen["run_id"] == base_id and chosen["url_state"]["run"] is None
    assert cb["choose_model"](MODEL, TARGET, POLICY, {"run": new_id, "diff": []})["run_id"] == new_id
    listed = cb["list_runs"](None, MODEL, chosen["url_state"])
    ticked = sorted(int(i) for i in listed["ticked"]["ids"])
    assert ticked == sorted(listed["ticked_ids"]) == [base_id, new_id] and listed["url_state"]["diff"] == []
    # what the diff reads: the table sets the ids of ticked rows only on a user's click
    diff = str(cb["show_diff"](listed["ticked_ids"], base_id))
    assert f"#{base_id}" in diff and f"#{new_id}" in diff

    # the address the page wrote itself is the view already
    assert cb["open_link"](search, {"search": search, "opening": False}) is no_update
    odd = cb["open_link"]("?level=nonsense&run=abc&diff=1", None)
    assert odd["selected"] is no_update and odd["url_state"] == {"run": None, "diff": []}
    # a run the database does not hold: the baseline instead
    assert shown_run(cb, linked={"run": 99999, "diff": []}) == base_id


def test_back_and_forward_show_the_view_their_address_names(cb):
    """An address the page did not write (Back, Forward) is shown whole: an op it does not name
    is no longer selected."""
    base_id = shown_run(cb)
    kernel = link(cb, MODEL, TARGET, POLICY, "kernel", base_id, FC1, [])
    layout = link(cb, MODEL, TARGET, POLICY, "layout", base_id, None, [])
    back = cb["open_link"](kernel, {"search": layout, "opening": False})
    assert (back["level"], back["selected"], back["shown"]) == ("kernel", FC1, {"search": kernel, "opening": True})
    forward = cb["open_link"](layout, {"search": kernel, "opening": False})
    assert (forward["level"], forward["selected"]) == ("layout", None)


def test_the_view_is_a_new_history_entry_and_an_address_being_opened_is_filled_in(cb):
    base_id = shown_run(cb)
    view = ViewState(MODEL, TARGET, POLICY, "graph", base_id, None, (), "host")
    full = url_state.encode(view)
    # a change of view: a new entry
    assert url_state.written(view, Shown("?level=kernel")) == (url_state.Wanted(full), Shown(full))
    # the address being opened (a link, Back, another model) filled in: in place
    assert url_state.written(view, Shown("?model=x", opening=True)) == (url_state.Wanted(full, True), Shown(full))
    # the address says it already: nothing to write; an opening one is settled
    assert url_state.written(view, Shown(full, opening=True)) == (None, Shown(full))
    assert url_state.written(view, Shown(full)) == (None, None)
    assert url_state.written(view, None) == (None, None)  # before the address is read
    written = cb["write_link"](
        MODEL, TARGET, POLICY, "graph", base_id, None, [], "host", {"search": "?model=x", "opening": True}
    )
    assert written == {"wanted": {"search": full, "replace": True}, "shown": {"search": full, "opening": False}}


def test_another_model_is_in_the_address_at_once_without_the_last_ones_run_op_and_pair(cb):
    """The address changes as the model is chosen, before its run is found (a compile may take
    minutes); what no longer applies leaves it; another target keeps the selected op."""
    base_id = shown_run(cb)
    before = link(cb, MODEL, TARGET, POLICY, "kernel", base_id, FC1, [1, base_id])
    now = cb["write_opening"]("zoo:bert-base", TARGET, POLICY, "host", before)
    opening = url_state.encode(ViewState("zoo:bert-base", TARGET, POLICY, "kernel", None, None, (), "host"))
    assert now == {"wanted": {"search": opening, "replace": False}, "shown": {"search": opening, "opening": True}}
    assert "run=" not in opening and "op=" not in opening and "diff=" not in opening
    # then filled in with its run, in place of the entry just written
    bert = cb["write_link"]("zoo:bert-base", TARGET, POLICY, "kernel", 7, None, [], "host", now["shown"])
    assert bert["wanted"] == {"search": opening.replace("&dispatch", "&run=7&dispatch"), "replace": True}
    # chosen again before that run is found: in place of the address that named it
    again = cb["write_opening"]("classifier.mlir", TARGET, POLICY, "host", opening)["wanted"]
    assert again["replace"] is True and "classifier" in again["search"]
    target = cb["write_opening"](MODEL, "blackhole_p150", POLICY, "host", before)["wanted"]
    assert "target=blackhole_p150" in target["search"] and "op=" in target["search"] and "run=" not in target["search"]
    # a link being opened sets the model its address names: nothing to write
    assert cb["write_opening"](MODEL, TARGET, POLICY, "host", before)["wanted"] is no_update
    assert cb["write_opening"]("zoo:bert-base", TARGET, POLICY, "host", None)["wanted"] is no_update


def test_switching_model_forgets_the_selection_and_search_a_link_keeps_them(cb):
    base_id = shown_run(cb)
    new_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    search = link(cb, MODEL, TARGET, POLICY, "graph", base_id, FC1, [base_id, new_id])
    # the page opening a link sets the model the address names: its op stays selected
    assert cb["forget_on_model_switch"](MODEL, search) is no_update
    # the user picks another model: the last one's op and search go
    forgot = cb["forget_on_model_switch"]("classifier.mlir", search)
    assert forgot == {"selected": None, "pattern": "", "mlir_search": ""}
    # the last model's ticked pair does not carry over to the other model's runs
    shown_run(cb, model="classifier.mlir")
    listed = cb["list_runs"](None, "classifier.mlir", {"run": None, "diff": [base_id, new_id]})
    assert listed["rows"] and listed["ticked_ids"] == [] and listed["ticked"] == {"ids": []}


@pytest.mark.parametrize(
    "query", ["run=99999999999999999999&diff=1,99999999999999999999", "run=%C2%B2", "run=-1&diff=0,1"]
)
def test_a_link_with_run_ids_no_database_holds_opens_the_baseline(cb, query):
    assert cb["open_link"](f"?{query}", None)["url_state"] == {"run": None, "diff": []}
    chosen = cb["choose_model"](MODEL, TARGET, POLICY, {"run": 2**70, "diff": []})
    assert chosen["status"] is None and chosen["run_id"] == shown_run(cb)


def test_a_link_to_a_target_or_policy_the_page_does_not_offer_keeps_the_menus(cb):
    offered = [{"label": t, "value": t} for t in ("wormhole_n150", "blackhole_p150")]
    opened = cb["open_link"]("?target=/etc/x.toml&policy=nosuch&level=kernel", None, offered, ["dram-interleaved"])
    assert opened["target"] is no_update and opened["policy"] is no_update and opened["level"] == "kernel"


def test_a_link_keeps_the_dispatch(cb):
    traced = cb["choose_model"](MODEL, TARGET, POLICY, None, "trace")["run_id"]
    search = link(cb, MODEL, TARGET, POLICY, "graph", traced, None, [], dispatch="trace")
    assert "dispatch=trace" in search
    assert cb["open_link"](search, None)["dispatch"] == "trace"
    assert cb["open_link"]("?dispatch=warp", None)["dispatch"] is no_update


def test_data_tiling_is_in_the_address_and_a_link_ticks_it(cb):
    base_id = shown_run(cb)
    search = cb["write_link"](MODEL, TARGET, POLICY, "layout", base_id, None, [], "host", READ, ["on"])["wanted"]
    assert "data_tiling=1" in search["search"]
    assert url_state.parse(search["search"]).data_tiling is True
    assert cb["open_link"](search["search"], None)["data_tiling"] == ["on"]
    # what the page shows already is not set again (that would choose the model's run again)
    assert cb["open_link"](search["search"], None, tiled=["on"])["data_tiling"] is no_update
    # off is the default, and not written
    assert "data_tiling" not in link(cb, MODEL, TARGET, POLICY, "layout", base_id, None, [])
    assert cb["open_link"]("?level=layout&data_tiling=yes", None, tiled=["on"])["data_tiling"] == []
