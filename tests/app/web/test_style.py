"""Lines that name a list keep to a line: the first few items, then how many more; the tooltip
has the rest, up to its own limit."""

from __future__ import annotations

import math

import pytest

from tilescope.app.web.style import LISTED, LISTED_IN_TOOLTIP, UNKNOWN_KIND_COLOUR, all_of, cielab, kind_colour, some_of
from tilescope.compiler.ir.opset import KINDS


def test_a_long_list_is_cut_to_a_line_and_counted():
    items = [f"op{i}=l1" for i in range(238)]
    assert some_of(items) == ", ".join(items[:LISTED]) + f", ... and {238 - LISTED} more"
    assert some_of(items[:LISTED]) == ", ".join(items[:LISTED]) and some_of([]) == ""
    tip = all_of(items).splitlines()
    assert tip[:LISTED_IN_TOOLTIP] == items[:LISTED_IN_TOOLTIP] and tip[-1] == f"... and {238 - LISTED_IN_TOOLTIP} more"
    assert all_of(items[:3]) == "op0=l1\nop1=l1\nop2=l1"


def test_every_op_kind_of_the_vocabulary_has_a_colour_of_its_own():
    """Two kinds in one colour read as one kind on the timeline: every kind the compiler knows gets
    its own, far enough from every other (and from the grey of merged zones) to tell apart."""
    colours = {kind: kind_colour(kind) for kind in KINDS}
    shared = {c: sorted(k for k in KINDS if colours[k] == c) for c in set(colours.values())}
    assert not {c: kinds for c, kinds in shared.items() if len(kinds) > 1}
    lab = {c: cielab(c) for c in [*shared, UNKNOWN_KIND_COLOUR]}
    closest = min((math.dist(lab[a], lab[b]), a, b) for i, a in enumerate(lab) for b in list(lab)[i + 1 :])
    assert closest[0] >= 10, closest
    # the kinds a reader has learned keep their colours, and a kind from elsewhere takes none of these
    assert kind_colour("matmul") == "#2E91E5" and kind_colour("softmax") == kind_colour("softmax")
    assert kind_colour("ttnn.some_new_op") not in shared


def test_colours_are_compared_as_the_eye_sees_them():
    assert cielab("#ffffff") == pytest.approx((100.0, 0.0, 0.0), abs=0.05)
    assert cielab("#ff0000") == pytest.approx((53.24, 80.09, 67.20), abs=0.05)
