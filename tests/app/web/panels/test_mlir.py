"""The MLIR panel's callback, called as Dash calls it: the window it sends the browser (lines,
tokens, matches, marks, the op of each line), the search's count and steps, and hostile searches."""

from __future__ import annotations

import pytest

from tilescope.app.web.panels.mlir import MAX_TOKENS, MLIR_PAGE, Asked, mlir_view
from tilescope.app.workbench.mlir_page import MAX_MATCHES, MAX_QUERY, find_matches

from .conftest import CONSUMER, FC1, marked_text, shown_run

LONG = "zoo:mlp?layers=12"  # its kernel level is 581 lines: more than a window


def _level(app, run_id: int, level: str) -> tuple[str, dict]:
    return app.explorer.view(run_id).compilation.mlir_with_lines(level)


def _tokens(window: dict, line: int) -> list[tuple[str, str]]:
    """The coloured tokens of one line of the window (0-based in it): (text, kind)."""
    text, flat = window["lines"][line], window["tokens"][line]
    return [(text[flat[i] : flat[i + 1]], window["kinds"][flat[i + 2]]) for i in range(0, len(flat), 3)]


def _matched(window: dict) -> list[tuple[int, str]]:
    """The search's matches the window marks: (line in the level, 0-based; text)."""
    return [
        (window["first"] - 1 + n, window["lines"][n][spans[i] : spans[i + 1]])
        for n, spans in enumerate(window["matches"])
        for i in range(0, len(spans), 2)
    ]


def test_the_window_carries_each_lines_tokens_by_kind(cb):
    run_id = shown_run(cb)
    window = cb["show_mlir"](run_id, "input", None)["window"]
    at = next(i for i, line in enumerate(window["lines"]) if '"ttir.matmul"' in line)
    assert _tokens(window, at) == [
        ("%0", "ssa"),
        ('"ttir.matmul"', "op"),
        ("%arg0", "ssa"),
        ("%arg1", "ssa"),
        ("tensor<128x1024xbf16>", "type"),
        ("tensor<1024x4096xbf16>", "type"),
        ("tensor<128x4096xbf16>", "type"),
        ('loc("mlp.layer.0.fc1.matmul")', "loc"),
    ]
    kernel = cb["show_mlir"](run_id, "kernel", None)["window"]
    read = next(i for i, line in enumerate(kernel["lines"]) if '"ts.read"' in line)
    assert [kind for _, kind in _tokens(kernel, read)] == ["op", "num", "type", "str", "str"]
    assert {('@"zoo:mlp?layers=1"', "sym"), ('"kernel"', "str"), ("module", "op")} <= set(_tokens(kernel, 0))
    # a tensor type with its layout is one token
    assert ("tensor<128x1024xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>", "type") in _tokens(
        kernel, 1
    )


def test_the_selected_ops_lines_are_marked_and_each_line_names_its_op(app, cb):
    run_id = shown_run(cb)
    _, spans = _level(app, run_id, "kernel")
    shown = cb["show_mlir"](run_id, "kernel", CONSUMER)
    window = shown["window"]
    first, last = spans[CONSUMER]
    assert window["marks"] == [[first - 1, last]] and window["focus"] == "op"
    assert marked_text(shown).startswith('    %1 = "ts.matmul"')
    # a click on any line of an op's body selects that op: the browser looks the line up in `ops`
    assert [tuple(run) for run in window["ops"]] == [(*spans[FC1], FC1), (*spans[CONSUMER], CONSUMER)]
    assert not any(first <= 1 <= last for first, last, _ in window["ops"])  # the module's line: no op
    # what the click sets (the selected op) marks those lines; the short text stays whole
    clicked = cb["show_mlir"](run_id, "kernel", FC1, None, 0, 0, 0, shown["state"])
    assert FC1 in marked_text(clicked) and clicked["window"]["first"] == 1
    assert clicked["note"] == "click an op's line to select it"


def test_a_search_counts_over_the_whole_level_and_steps_through_it(app, cb):
    run_id = shown_run(cb, LONG)
    text, _ = _level(app, run_id, "kernel")
    total = text.lower().count("fc2.weight")
    where = find_matches(text, "fc2.weight").at  # (line, nth in the line) of each
    first = cb["show_mlir"](run_id, "kernel", None, "FC2.Weight")
    assert str(first["found"][0].children) == f"1 of {total} matches"
    # the window holds 500 of the 581 lines: it marks fewer matches than the level holds
    on_page = _matched(first["window"])
    assert 0 < len(on_page) < total and {m.lower() for _, m in on_page} == {"fc2.weight"}
    assert first["window"]["current"] == [where[0][0] - first["window"]["first"] + 1, 0]
    # Enter (or the down arrow) steps to the next match, the up arrow back, both wrapping around
    state, seen = first["state"], []
    for presses in range(1, total + 1):
        shown = cb["show_mlir"](run_id, "kernel", None, "FC2.Weight", presses, 0, 0, state)
        state, window = shown["state"], shown["window"]
        seen.append(state["match"])
        line, nth = where[state["match"]]
        assert window["first"] - 1 <= line < window["first"] - 1 + len(window["lines"])  # the window moves to it
        assert window["current"] == [line - window["first"] + 1, nth] and window["focus"] == "match"
    assert seen == [*range(1, total), 0]
    lo = window["first"] - 1
    assert len(window["lines"]) == MLIR_PAGE and shown["note"].startswith(f"lines {lo + 1}-{lo + MLIR_PAGE} of 581 ")
    back = cb["show_mlir"](run_id, "kernel", None, "FC2.Weight", total, 0, 1, state)
    assert back["state"]["match"] == total - 1 and str(back["found"][0].children) == f"{total} of {total} matches"
    # another search starts again from its first match
    other = cb["show_mlir"](run_id, "kernel", None, "fc1.weight", total, 0, 1, back["state"])
    assert other["state"]["match"] == 0 and str(other["found"][0].children).startswith("1 of ")


def test_a_selection_moves_the_window_to_its_op_and_one_in_view_keeps_it(app, cb):
    run_id = shown_run(cb, LONG)
    _, spans = _level(app, run_id, "kernel")
    last_op = "mlp.layer.11.fc2.matmul"
    far = cb["show_mlir"](run_id, "kernel", last_op)
    lo = far["window"]["first"] - 1
    assert lo > 0 and lo <= spans[last_op][0] - 1 < lo + MLIR_PAGE and far["window"]["marks"]
    # a click on an op's line in view: the window stays where it is
    near = "mlp.layer.10.fc1.matmul"
    assert lo <= spans[near][0] - 1
    kept = cb["show_mlir"](run_id, "kernel", near, None, 0, 0, 0, far["state"])
    assert kept["window"]["first"] == far["window"]["first"] and near in marked_text(kept)
    # the level's first op is out of view: the window goes back to it
    back = cb["show_mlir"](run_id, "kernel", "mlp.layer.0.fc1.matmul", None, 0, 0, 0, kept["state"])
    assert back["window"]["first"] == 1


@pytest.mark.parametrize(
    "query, said",
    [
        ("x" * (MAX_QUERY + 1), f"search: at most {MAX_QUERY} characters (this one has {MAX_QUERY + 1:,})"),
        ("fc1\nfc2", "search: one line of text (the search matches within a line)"),
    ],
)
def test_a_hostile_search_is_one_line_and_the_text_still_shows(cb, query, said):
    run_id = shown_run(cb)
    shown = cb["show_mlir"](run_id, "kernel", FC1, query)
    (error,) = shown["found"]
    assert error.children == said and error.className == "error"
    assert not any(shown["window"]["matches"]) and shown["window"]["current"] is None
    assert FC1 in marked_text(shown)


def test_a_hostile_state_or_count_reads_as_a_page_that_showed_nothing(cb):
    run_id = shown_run(cb)
    fresh = cb["show_mlir"](run_id, "kernel", None, "fc1.weight")
    for state in (
        {"run": run_id, "level": "kernel", "query": "fc1.weight", "match": "x", "window": ["a", None]},
        {"run": run_id, "level": "kernel", "query": ["fc1"], "forward": {}, "back": -3, "window": [0, 10**30]},
        ["not", "a", "dict"],
    ):
        shown = cb["show_mlir"](run_id, "kernel", None, "fc1.weight", "1", None, True, state)
        assert str(shown["found"][0].children) == str(fresh["found"][0].children)  # "1 of N matches"
        assert shown["window"]["first"] == 1 and shown["state"]["match"] == 0
    assert cb["show_mlir"](run_id, "kernel", None, {"query": 1})["found"] == []  # not text: no search


def test_a_text_matching_everywhere_costs_the_page_a_bounded_window():
    """A model of pathological lines: the count stops at its cap, and the window carries at most
    MAX_MATCHES marks and MAX_TOKENS tokens, however many its lines hold."""
    text = "\n".join(["%a " * 20_000, "a" * 30_000, *(["%0 = x.y %a : f32"] * 5_000)])
    shown = mlir_view(text, {}, [], Asked(1, "kernel", "A"))
    assert str(shown["found"][0].children) == f"1 of {MAX_MATCHES:,}+ matches"
    window = shown["window"]
    assert len(window["lines"]) == MLIR_PAGE and shown["note"].startswith("lines 1-500 of 5,002 ")
    assert sum(len(spans) // 2 for spans in window["matches"]) == MAX_MATCHES
    assert sum(len(tokens) // 3 for tokens in window["tokens"]) == MAX_TOKENS
