"""Row-major tensors as ttnn moves them: their true bytes, a stick per NoC transaction, each waited
on for a round trip, so a tensor of narrow rows costs its rows, not its bytes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import compiled_op, op_timing
from tilescope.compiler.targets.catalog import load_target

from tests.compiler.profiles.replay_reports import op, report_text, t

WORMHOLE = load_target("wormhole_n150")


def _tilize(width: int, rows: int = 16384, cores: int = 16) -> float:
    row = op(
        "TilizeWithValPaddingDeviceOperation",
        [t(1, 1, rows, width, layout="row_major")],
        [t(1, 1, rows, 32)],
        cores=cores,
    )
    (measured,) = read_ops_report(report_text(row), "r.csv").ops
    kernel, _ = compiled_op(measured, "to_layout", WORMHOLE)
    return kernel, op_timing(kernel, WORMHOLE)[0].duration_ns


def test_narrow_rows_cost_a_round_trip_each():
    kernel, ns = _tilize(1)
    sticks_per_core = 16384 / 16
    floor = sticks_per_core * WORMHOLE.noc_round_trip_cycles / WORMHOLE.clock_hz * 1e9
    assert floor <= ns <= floor * 1.5 + WORMHOLE.pipeline.launch_ns
    # twice the round trip, about twice the time; without one, only the bytes: far less
    slower = op_timing(kernel, replace(WORMHOLE, noc_round_trip_cycles=2 * WORMHOLE.noc_round_trip_cycles))[0]
    assert slower.duration_ns == pytest.approx(2 * ns, rel=0.15)
    assert op_timing(kernel, replace(WORMHOLE, noc_round_trip_cycles=0.0))[0].duration_ns < ns / 5


def test_a_row_major_tensor_moves_its_true_bytes_not_padded_tiles():
    _, narrow = _tilize(1)
    _, wide = _tilize(16)
    assert wide == pytest.approx(narrow, rel=0.1)  # the same rows: the same transactions


def test_an_op_waiting_on_round_trips_says_so():
    kernel, _ = _tilize(1)
    timing = op_timing(kernel, WORMHOLE)[0]
    assert timing.bound == "latency" and "round trip (420 cycles)" in timing.why
    # without round trips to wait on, its bytes bound it
    assert op_timing(kernel, replace(WORMHOLE, noc_round_trip_cycles=0.0))[0].bound != "latency"
