"""Pages are cut at ops chosen by their names: the same wherever the ops run, and an op added
moves no cut but its own page's."""

from __future__ import annotations

import zlib

import numpy as np

from tilescope.perfdb import pages


def _ops(names: list[str]) -> list[tuple[str, float]]:
    return [(name, 10.0 * i) for i, name in enumerate(names)]


def test_an_op_added_moves_no_other_cut_and_shifted_ops_cut_at_their_new_times():
    names = [f"layer.{i}.matmul" for i in range(2000)]
    size = pages.page_ops(2000)
    cuts = pages.cuts(_ops(names), size)
    cut_names = {n for n in names if zlib.crc32(n.encode()) % size == 0}
    assert size == pages.page_ops(2001) == 64  # a power of two near 2000 / PAGES
    assert len(cuts) == len(cut_names) and pages.PAGES / 2 < len(cuts) < pages.PAGES * 4
    added = names[:1000] + ["layer.500.to_layout"] + names[1000:]  # every later op starts 10 ns later
    after = pages.cuts(_ops(added), size)
    starts = dict(_ops(added))
    assert set(after.tolist()) == {starts[n] for n in cut_names}


def test_a_large_run_has_pages_to_twice_as_many_and_a_small_one_fewer():
    for ops in (pages.PAGES * pages.MIN_PAGE_OPS, 10_000, 100_000, 1_000_000):
        assert pages.PAGES <= ops / pages.page_ops(ops) < 2 * pages.PAGES
    assert pages.page_ops(10) == pages.page_ops(140) == pages.MIN_PAGE_OPS


def test_each_time_is_in_the_page_its_cut_starts():
    cuts = np.array([100.0, 250.0])
    at = pages.page_of(cuts, np.array([0.0, 99.0, 100.0, 249.0, 250.0, 1e9]))
    assert at.tolist() == [0, 0, 1, 1, 2, 2]
    assert pages.page_start(cuts, at).tolist() == [0.0, 0.0, 100.0, 100.0, 250.0, 250.0]
