"""Pages: the stretches of a run's timeline its blocks are cut into (perfdb.blocks), chosen by what
the run holds, so that a re-run's unchanged stretches are cut where its parent's were.

An op whose name hashes to 0 modulo the run's page size starts a page at its start time:
content-defined chunking, as rsync and restic cut files, so an op added or removed moves no cut but
its own page's. The page size is a power of two near ops / PAGES, and at least MIN_PAGE_OPS, so a
large run has PAGES to 2 x PAGES pages: a window of the whole run reads about that many blocks per
track, and a re-run after one change stores about one page in PAGES again. A small run has fewer
(each page's blocks cost a row and a header; a small run's store costs little anyway). A re-run
takes its parent's page size, so one op more cuts its pages where its parent's were.

A page's zones, markers and counters are those that start in it. Its level-of-detail buckets are
counted from its start (perfdb.lod), so a page shifted in time holds its markers shifted with it,
and a re-run shifted by a change before it stores the page as its parent's
(perfdb.shared_blocks). Markers do not merge zones across a page's start.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

PAGES = 16  # pages a large run is cut into, to twice as many
MIN_PAGE_OPS = 64  # bert-base's 140 ops: 2 to 3 pages


def page_ops(ops: int) -> int:
    """The page size, in ops on average, of a run of `ops` ops."""
    return 2 ** max(int(math.log2(max(ops, 1) / PAGES)), int(math.log2(MIN_PAGE_OPS)))


def cuts(ops: Sequence[tuple[str, float]], size: int) -> np.ndarray:
    """The times pages of `size` ops start at, sorted, from each op's (name, start): a name's CRC-32
    (the same in every process, unlike Python's hash) picks the ops that start one."""
    return np.unique(np.array([start for name, start in ops if zlib.crc32(name.encode()) % size == 0], np.float64))


def page_of(page_cuts: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Each time's page: 0 before the first cut, i from the i-th."""
    return np.searchsorted(page_cuts, times, side="right")


def page_start(page_cuts: np.ndarray, pages: np.ndarray) -> np.ndarray:
    """Where each page starts: 0 for page 0."""
    return np.concatenate([[0.0], page_cuts])[pages]
