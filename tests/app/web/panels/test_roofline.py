"""The roofline tab."""

from __future__ import annotations

from .conftest import CONSUMER, FC1, shown_run


def test_roofline_places_compute_ops_under_the_roofs_and_selects_on_click(app, cb):
    run_id = shown_run(cb)
    found = app.explorer.roofline(app.explorer.view(run_id))
    assert {p.name for p in found.points} == {FC1, CONSUMER}
    for p in found.points:  # nothing beats the roofline of its memory
        assert p.achieved <= min(found.peak_flops, found.roofs[p.memory] * p.intensity) * 1.0001
    figure = cb["show_roofline"](run_id, FC1)
    assert {t.name for t in figure.data} >= {"dram roof", "l1 roof"}
    ring = figure.data[0]
    assert ring.name == "selected" and len(ring.x) == 1
    assert cb["select_in_roofline"]({"points": [{"customdata": CONSUMER}]}) == CONSUMER
