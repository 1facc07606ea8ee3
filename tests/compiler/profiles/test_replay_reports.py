"""The seven shipped ops perf reports (measured on Wormhole, Blackhole and 8 Blackhole p150s),
replayed: each builds ops covering at least 90% of its device time, named as its measured run."""

from __future__ import annotations

import pytest

from tilescope.compiler.profiles.naming import op_names
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import replay

REPORTS = {  # file: (the target its chip names, devices)
    "wh_clip_encoder_2.csv": ("wormhole_n150", 1),
    "bh_64_clip_encoder_1.csv": ("blackhole_p150", 1),
    "bh_p100_dlv3.csv": ("blackhole_p150", 1),
    "bh20_oft.csv": ("blackhole_p150", 1),
    "bh20_oft_integral_image_trace.csv": ("blackhole_p150", 1),  # no DEVICE ARCH: the default, with a warning
    "bh_8xp150_deepseek_v3_d_p.csv": ("blackhole_8xp150", 8),
    "ops_perf_results_2025_09_18_11_39_20.csv": ("blackhole_p150", 1),
}
COVERAGE_GOAL = 0.9


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_each_shipped_report_replays_with_most_of_its_device_time_built(perf_reports, name):
    path = perf_reports / name
    report = read_ops_report(path.read_text(encoding="utf-8-sig"), name)
    replayed = replay(report)
    target, devices = REPORTS[name]
    assert replayed.target.name == target
    assert replayed.coverage.share >= COVERAGE_GOAL, replayed.coverage.unbuilt
    assert replayed.coverage.device_ns == pytest.approx(report.device_ns)
    assert [r.name for r in replayed.ops] == list(op_names(report))
    timings = replayed.timings
    assert len({t.device for t in timings}) == devices
    assert all(t.duration_ns > 0 for t in timings if t.bound != "none")
    for device in range(devices):  # back to back on each device, in the report's order
        mine = [t for t in timings if t.device == device]
        assert all(b.start_ns == pytest.approx(a.end_ns) for a, b in zip(mine, mine[1:]))


# kinds whose kernels follow ttnn's programs closely enough to be held to a median |error| of 25%
# over every row of the reports (docs/validation.md, "Beyond matmuls"): a regression shows here
WITHIN_25 = ("groupnorm", "grid_sample", "reshape", "layernorm", "matmul", "conv2d")


@pytest.fixture(scope="module")
def every_row(perf_reports):
    rows: dict[str, list[float]] = {}
    for name in sorted(REPORTS):
        report = read_ops_report((perf_reports / name).read_text(encoding="utf-8-sig"), name)
        for r in replay(report).ops:
            if r.timing is not None and r.op.kernel_ns:
                rows.setdefault(r.kind, []).append(abs(r.op.kernel_ns / r.timing.duration_ns - 1))
    return rows


@pytest.mark.parametrize("kind", WITHIN_25)
def test_kinds_modelled_as_ttnn_runs_them_are_within_a_quarter_of_the_chip(every_row, kind):
    errors = sorted(every_row[kind])
    assert len(errors) >= 20
    assert errors[len(errors) // 2] <= 0.25, f"{kind}: median |error| {errors[len(errors) // 2]:.0%}"
