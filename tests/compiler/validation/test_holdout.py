"""The held-out half: decided by shape, the same everywhere, about half of the shapes."""

from __future__ import annotations

from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.validation.holdout import FIT, HELD_OUT, shape_key, side_of

from tests.compiler.profiles.replay_reports import op, report_text, t


def _report(*rows):
    return read_ops_report(report_text(*rows), "r.csv")


def test_rows_of_one_shape_fall_on_one_side_whatever_else_differs():
    rows = [
        op("UnaryDeviceOperation", [t(1, 1, 64, 128)], [t(1, 1, 64, 128)], ns=ns, cores=c)
        for ns, c in ((1, 8), (9, 64))
    ]
    a, b = _report(*rows).ops
    assert shape_key(a) == shape_key(b) and side_of(a) == side_of(b)


def test_about_half_of_many_shapes_are_held_out():
    rows = [op("UnaryDeviceOperation", [t(1, 1, 32 * n, 128)], [t(1, 1, 32 * n, 128)]) for n in range(1, 201)]
    sides = [side_of(o) for o in _report(*rows).ops]
    assert 70 <= sides.count(HELD_OUT) <= 130 and sides.count(FIT) + sides.count(HELD_OUT) == 200
