"""The memory tab."""

from __future__ import annotations

import pytest

from .conftest import rerun, shown_run


def test_memory_view_shows_l1_over_time_and_what_makes_the_peak(app, cb):
    run_id = rerun(cb, shown_run(cb), memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    shown = cb["show_memory"](run_id)
    view = app.explorer.memory(app.explorer.view(run_id))
    used = [v for _, v in view.envelope]
    assert used and max(used) > 0 and view.capacity == 1499136
    assert list(shown["figure"].data[0].y) == [v / 1024 for v in used]
    # to the run's end: the last op's L1 holds while it runs (it stopped as the last op started)
    assert shown["figure"].data[0].x[-1] == pytest.approx(app.explorer.view(run_id).total_ns / 1e3)
    # fc1's output sits in L1 while its consumer reads it; the peak names the tensors and buffers there
    peak = view.peak
    assert peak.tensors and all(t.bytes > 0 for t in peak.tensors)
    assert peak.cbs and peak.bytes == pytest.approx(
        sum(t.bytes for t in peak.tensors) + sum(size for _, size, _ in peak.cbs)
    )
    assert f"while {peak.op} runs" in str(shown["peak"])
