"""Figure builders: axes that name what they show."""

from __future__ import annotations

import math

from app.web.figures import duration_histogram


def _ticks_us(figure) -> list[float]:
    return [10.0**t for t in figure.layout.xaxis.tickvals]


def test_duration_histogram_ticks_durations_within_one_decade():
    # two runs of two ops each, 33 to 44 us: no 1-2-5 tick falls between them
    figure = duration_histogram([40_282.0, 42_205.0], [33_999.0, 36_719.0], ("A", "B"))
    ticks = _ticks_us(figure)
    assert len(ticks) >= 3 and all(30.0 <= t <= 46.0 for t in ticks)
    assert figure.layout.xaxis.ticktext[0].endswith(" us")


def test_duration_histogram_ticks_decades_at_one_two_five():
    figure = duration_histogram([1_000.0, 900_000.0], [5_000.0], ("A", "B"))
    mantissas = {round(t / 10 ** math.floor(math.log10(t)), 6) for t in _ticks_us(figure)}
    assert mantissas == {1.0, 2.0, 5.0}
    assert min(_ticks_us(figure)) <= 1.0 and max(_ticks_us(figure)) >= 500.0
