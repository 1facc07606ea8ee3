"""The timeline's zone card, which assets/timeline.js draws (its fillCard): what it shows of
an op, and a zone pinned to it from elsewhere on the page (find zone's list)."""

from __future__ import annotations


def op_info(record) -> list:
    """An op's kind, time (us), bound, why and the band of its time (us; None when none is known),
    as the card reads them."""
    band = record.error_band
    error = None if band is None else round(band * record.duration_ns / 1e3, 3)
    return [record.kind, round(record.duration_ns / 1e3, 3), record.bound, record.why, error]


def pinned(record, track: str, start_us: float, duration_us: float) -> dict:
    """One of `record`'s zones (on `track`, from `start_us` for `duration_us`) as the card shows it."""
    return dict(
        name=record.name,
        op=record.name,
        start=start_us,
        end=round(start_us + duration_us, 3),
        row=track,
        lane="",
        info=op_info(record),
    )
