"""Lines that name a list keep to a line: the first few items, then how many more; the tooltip
has the rest, up to its own limit."""

from __future__ import annotations

from app.web.style import LISTED, LISTED_IN_TOOLTIP, all_of, some_of


def test_a_long_list_is_cut_to_a_line_and_counted():
    items = [f"op{i}=l1" for i in range(238)]
    assert some_of(items) == ", ".join(items[:LISTED]) + f", ... and {238 - LISTED} more"
    assert some_of(items[:LISTED]) == ", ".join(items[:LISTED]) and some_of([]) == ""
    tip = all_of(items).splitlines()
    assert tip[:LISTED_IN_TOOLTIP] == items[:LISTED_IN_TOOLTIP] and tip[-1] == f"... and {238 - LISTED_IN_TOOLTIP} more"
    assert all_of(items[:3]) == "op0=l1\nop1=l1\nop2=l1"
