"""Kept: a cache of the newest values, bounded."""

from __future__ import annotations

from tilescope.app.workbench.kept import Kept


def test_values_are_made_once_and_the_oldest_goes_first():
    made = []
    kept = Kept(2)

    def make(key):
        made.append(key)
        return key * 10

    assert [kept.of(k, lambda k=k: make(k)) for k in (1, 2, 1)] == [10, 20, 10]
    assert made == [1, 2]  # 1 was kept, not made again
    kept.of(3, lambda: make(3))  # 1 was made longest ago: it goes, although read since
    assert len(kept) == 2 and kept.get(1) is None and kept.get(2) == 20 and kept.get(3) == 30


def test_keeping_again_makes_a_value_the_newest():
    kept = Kept(2)
    kept.keep("a", 1)
    kept.keep("b", 2)
    kept.keep("a", 3)  # a is now the newest: b goes next
    kept.keep("c", 4)
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == (3, None, 4)
    kept.clear()
    assert len(kept) == 0
