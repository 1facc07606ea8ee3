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


def _dots(figure) -> list:
    return [t for t in figure.data if t.name.endswith("-bound")]


def test_identical_layers_stack_into_one_dot_that_counts_and_names_them(cb):
    one = _dots(cb["show_roofline"](shown_run(cb), None))
    run_id = shown_run(cb, "zoo:mlp?layers=12")
    dots = _dots(cb["show_roofline"](run_id, None))
    # 24 matmuls, twelve alike at each of two places (the first fc1 waits on the host to issue it:
    # bound otherwise, a dot of its own colour at the same place): a dot per place and bound
    counts = {c: int(text[1:] or 1) for t in dots for c, text in zip(t.customdata, t.text)}
    assert counts == {"mlp.layer.0.fc2.matmul": 12, "mlp.layer.1.fc1.matmul": 11, "mlp.layer.0.fc1.matmul": 1}
    fc2 = next(h for t in dots for c, h in zip(t.customdata, t.hovertext) if c == "mlp.layer.0.fc2.matmul")
    assert "12 ops alike" in fc2 and all(f"mlp.layer.{i}.fc2.matmul<br>" in fc2 for i in range(10))
    assert "... and 2 more" in fc2  # the first ten named, the rest counted
    # bigger than a dot of one op
    sizes = {c: s for t in dots for c, s in zip(t.customdata, t.marker.size)}
    assert (
        sizes["mlp.layer.0.fc2.matmul"] > sizes["mlp.layer.1.fc1.matmul"] > max(s for t in one for s in t.marker.size)
    )
    assert sizes["mlp.layer.0.fc1.matmul"] == max(s for t in one for s in t.marker.size)
