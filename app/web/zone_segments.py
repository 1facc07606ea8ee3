"""Zones drawn as WebGL line segments, one row each: the diff's aligned runs (the timeline draws
its zones on a canvas: app/web/timeline_figure.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tilescope.app.web.style import plain


def segments(zones: Sequence, row: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Zones (track, op, name, depth, start_ns, end_ns) as line segments for WebGL: start, middle
    and end vertices (hover and click find the nearest vertex), then a gap (NaN). Arrays, not
    lists: plotly checks a list element by element, which for a timeline of thousands of zones
    cost more than the query."""
    n = len(zones)
    start = np.fromiter((z.start_ns for z in zones), np.float64, n) / 1e3
    end = np.fromiter((z.end_ns for z in zones), np.float64, n) / 1e3
    rows = np.fromiter((row[z.track] for z in zones), np.float64, n)
    gap = np.full(n, np.nan)
    # a merged marker selects nothing; an engine's zone is that engine's phase of the op
    ops = [z.op or None for z in zones]
    labels = [plain(z.label) for z in zones]
    return (
        np.column_stack([start, (start + end) / 2, end, gap]).ravel(),
        np.column_stack([rows, rows, rows, gap]).ravel(),
        vertices(ops, None),
        vertices(labels, ""),
    )


def vertices(values: list, gap) -> np.ndarray:
    """Each value for a segment's three vertices, then `gap`."""
    out = np.empty(4 * len(values), dtype=object)
    for i in range(3):
        out[i::4] = values
    out[3::4] = gap
    return out
