"""Two sequences of ops aligned as a diff aligns lines: the pairs of a longest common subsequence, so
an op inserted or removed shifts no later pair. perfdb.diff aligns the ops of two runs whose names
are no identities across them (a measured report names its ops by op code and count) this way.

Why not difflib.SequenceMatcher: a model's op codes are a short alphabet repeated layer after layer.
With its autojunk, every op code of a long run counts as junk and nothing matches; without it, it is
quadratic in Python per longest block, and its longest-block-first rule pairs a layer with the next
(a 2,000-op model with ten edits kept 1,117 pairs of 1,990). A longest common subsequence is the
alignment diff tools keep, computed here two ways, each exact:
  - Myers' O((N+M)D) greedy algorithm (Myers 1986, "An O(ND) difference algorithm and its
    variations"), with its diagonal runs compared a slice at a time: milliseconds when the runs
    differ by few ops (two versions of one model), whatever their length;
  - past about a thousand differences (fewer in shorter runs: _myers_budget), the bit-parallel
    LCS of Hyyro ("Bit-parallel LCS-length computation revisited", 2004) on Python integers, one
    row of the table per op in a handful of machine-word operations, the path read back from every
    isqrt(N)-th row kept: O(N*M/64) words, seconds for two unrelated 100k-op runs.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Hashable, Sequence

Pairs = list[tuple[int, int]]  # (index in a, index in b), both increasing
Likeness = Callable[[int, int], tuple[int, ...]]  # of a[i] paired with b[j]: more is better, first counts most


def align(a: Sequence[Hashable], b: Sequence[Hashable], likeness: Likeness) -> Pairs:
    """Pairs of a longest common subsequence of a and b (tokens: which op each is), and, among those
    a row of equal tokens leaves open, the one whose pairs are most alike (`likeness`): an op removed
    from a row of four transposes is the one whose removal leaves the other three paired with those
    they ran as."""
    pairs = [(-1, -1), *common_subsequence(a, b), (len(a), len(b))]
    for k in range(len(pairs) - 1):
        (i0, j0), (i1, j1) = pairs[k], pairs[k + 1]
        if (i1 - i0 > 1) != (j1 - j0 > 1):  # ops of one run alone between two pairs
            _slide(pairs, k, a, b, likeness)
    return pairs[1:-1]


def _slide(pairs: Pairs, k: int, a: Sequence, b: Sequence, likeness: Likeness) -> None:
    """Move the ops of one run alone after pairs[k] (a hunk) along the row of equal tokens around
    it, as git slides a diff's hunks, to where the pairs it moves are most alike; the pairs around
    it are rewritten in place. Every place it can take pairs as many equal tokens."""
    removed = pairs[k + 1][0] - pairs[k][0] > 1  # a's ops alone, else b's: seen from that run as x
    x = a if removed else b
    view = (lambda p: p) if removed else (lambda p: (p[1], p[0]))
    like = likeness if removed else (lambda i, j: likeness(j, i))
    (start, j), (end, _) = view(pairs[k]), view(pairs[k + 1])
    start, size = start + 1, end - start - 1  # the hunk: x[start:start + size]
    up = 0  # places it can move earlier: the pairs before it consecutive, the op before it equal to its last
    while k - up >= 1 and view(pairs[k - up]) == (start - 1 - up, j - up) and x[start - 1 - up] == x[end - 1 - up]:
        up += 1
    down = 0  # and later: the pairs after it consecutive, the op after it equal to its first
    while (
        k + 1 + down < len(pairs) - 1
        and view(pairs[k + 1 + down]) == (end + down, j + 1 + down)
        and x[start + down] == x[end + down]
    ):
        down += 1
    if not (up or down):
        return
    first, others = start - up, range(j - up + 1, j + 1 + down)  # the window's first op, the other run's in it
    before = [like(first + t, o) for t, o in enumerate(others)]  # each of those paired with an op before the hunk
    after = [like(first + t + size, o) for t, o in enumerate(others)]  # or after it

    cut = max(range(up + down + 1), key=_totals(before, after, up).__getitem__)
    for t, o in enumerate(others):
        i = first + t if t < cut else first + t + size
        pairs[k - up + 1 + t] = (i, o) if removed else (o, i)


def _totals(before: list[tuple[int, ...]], after: list[tuple[int, ...]], now: int) -> list[tuple]:
    """For each cut c of a window's pairs (c of them before the hunk), their likeness summed (those
    before it paired as in `before`, the rest as in `after`), and whether c is where it is `now`."""
    width = len(before[0])
    heads = [(0,) * width]  # the first c pairs' sums as in `before`
    for found in before:
        heads.append(tuple(p + q for p, q in zip(heads[-1], found)))
    tails = [(0,) * width]  # the last pairs' sums as in `after`, from the end
    for found in reversed(after):
        tails.append(tuple(p + q for p, q in zip(tails[-1], found)))
    tails.reverse()
    return [(tuple(p + q for p, q in zip(heads[c], tails[c])), c == now) for c in range(len(before) + 1)]


def common_subsequence(a: Sequence[Hashable], b: Sequence[Hashable]) -> Pairs:
    """The pairs of a longest common subsequence of a and b."""
    ids: dict[Hashable, int] = {}
    x, y = [ids.setdefault(t, len(ids)) for t in a], [ids.setdefault(t, len(ids)) for t in b]
    n, m = len(x), len(y)
    head = _common_run(x, y, 0, 0)
    tail = 0
    while tail < min(n, m) - head and x[n - 1 - tail] == y[m - 1 - tail]:
        tail += 1
    mid = (x[head : n - tail], y[head : m - tail])
    found = _myers(*mid, max_d=_myers_budget(len(mid[0]), len(mid[1])))
    if found is None:
        found = _bit_parallel(*mid)
    pairs = [(k, k) for k in range(head)] + [(head + i, head + j) for i, j in found]
    return pairs + [(n - tail + k, m - tail + k) for k in range(tail)]


def _myers_budget(n: int, m: int) -> int:
    """The differences Myers' algorithm may take before giving way to the bit-parallel one: at most
    a quarter of the other's time spent in vain. Measured on one core: Myers about 1 us per
    diagonal it follows (D^2 / 2 of them), the bit-parallel rows about n * (2 us + m * 0.22 ns) with
    the path back (2.4 s for 100k x 100k)."""
    return max(64, math.isqrt(n * (2000 + m // 4) // 2000))


def _common_run(a: list[int], b: list[int], x: int, y: int) -> int:
    """How many equal tokens a[x:] and b[y:] start with: compared in slices doubling in length, so
    a run of 100k equal ops is a few dozen comparisons in C rather than 100k steps in Python."""
    limit = min(len(a) - x, len(b) - y)
    if not limit or a[x] != b[y]:
        return 0
    lo, step = 1, 1  # a[x:x+lo] == b[y:y+lo]
    while lo < limit:
        hi = min(lo + step, limit)
        if a[x + lo : x + hi] == b[y + lo : y + hi]:
            lo, step = hi, step * 2
        elif step > 1:
            step //= 2
        else:
            break
    return lo


def _myers(a: list[int], b: list[int], max_d: int) -> Pairs | None:
    """Myers' greedy forward search for the shortest edit script: after d edits, the furthest x
    reached on each diagonal k = x - y (trace[d][k + d]), kept for the path back; None past max_d
    edits. Arrays of machine integers: a dict of Python ints per step took ten times the memory."""
    n, m = len(a), len(b)
    if not n or not m:
        return []
    trace: list[array] = []
    before = array("q")  # after d - 1 edits
    for d in range(max_d + 1):
        now = array("q", bytes(8 * (2 * d + 1)))
        for k in range(-d, d + 1, 2):
            if d == 0:
                x = 0
            elif k == -d or (k != d and before[k + d - 2] < before[k + d]):
                x = before[k + d]  # down from diagonal k + 1: b's op inserted
            else:
                x = before[k + d - 2] + 1  # right from diagonal k - 1: a's op removed
            if x < n and x - k < m and a[x] == b[x - k]:
                x += _common_run(a, b, x, x - k)
            now[k + d] = x
            if x >= n and x - k >= m:
                trace.append(now)
                return _path(trace, n, m)
        trace.append(now)
        before = now
    return None


def _path(trace: list[array], n: int, m: int) -> Pairs:
    """The matched pairs of the path to (n, m), read back from the furthest points after each edit
    count: each edit is preceded by the point it came from and followed by a run of matches."""
    pairs: Pairs = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        before, k = trace[d - 1], x - y
        prev_k = k + 1 if k == -d or (k != d and before[k + d - 2] < before[k + d]) else k - 1
        prev_x = before[prev_k + d - 1]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x, y = x - 1, y - 1
            pairs.append((x, y))
        x, y = prev_x, prev_y
    pairs += [(i, i) for i in range(x - 1, -1, -1)]  # the matches before the first edit
    pairs.reverse()
    return pairs


def _bit_parallel(a: list[int], b: list[int]) -> Pairs:
    """A longest common subsequence by Hyyro's bit-parallel rows: bit j of row i is 0 where the
    LCS of a[:i] and b[:j+1] is one longer than of a[:i] and b[:j]. Every `step`-th row is kept;
    the path back recomputes the rows between two kept ones."""
    n, m = len(a), len(b)
    if not n or not m:
        return []
    masks = _Masks(b, set(a))
    full = (1 << m) - 1
    step = max(1, math.isqrt(n))
    kept, row = [full], full
    for i, token in enumerate(a, 1):
        match = row & masks.of(token)
        row = ((row + match) | (row - match)) & full
        if i % step == 0:
            kept.append(row)
    pairs: Pairs = []
    i, j, size = n, m, (m + 7) // 8
    while i > 0 and j > 0:
        first = (i - 1) // step * step
        row, rows = kept[first // step], []
        for token in a[first:i]:
            match = row & masks.of(token)
            row = ((row + match) | (row - match)) & full
            rows.append(row)
        bits: dict[int, bytes] = {}
        while i > first and j > 0:
            if a[i - 1] == b[j - 1]:  # a match always lies on some longest path
                i, j = i - 1, j - 1
                pairs.append((i, j))
                continue
            here = bits.get(i) or bits.setdefault(i, rows[i - first - 1].to_bytes(size, "little"))
            if here[(j - 1) >> 3] >> ((j - 1) & 7) & 1:
                j -= 1  # as long without b[j-1]: it is inserted
            else:
                i -= 1  # a[i-1] is removed
    pairs.reverse()
    return pairs


class _Masks:
    """Each token's positions in b as the bits of an integer. Those of a token found often are
    kept; a rare token's are made when asked for: kept, 100k distinct tokens would take 100k
    integers of 100k bits (1.25 GB)."""

    KEPT = 64  # occurrences from which a token's mask is kept: at most len(b) / 64 masks

    def __init__(self, b: list[int], wanted: set[int]) -> None:
        self.size = (len(b) + 7) // 8
        self.positions: dict[int, list[int]] = {}
        for j, token in enumerate(b):
            if token in wanted:
                self.positions.setdefault(token, []).append(j)
        self.kept = {t: self._made(p) for t, p in self.positions.items() if len(p) >= self.KEPT}

    def of(self, token: int) -> int:
        found = self.kept.get(token)
        if found is not None:
            return found
        positions = self.positions.get(token)
        return self._made(positions) if positions else 0

    def _made(self, positions: list[int]) -> int:
        bits = bytearray(self.size)
        for j in positions:
            bits[j >> 3] |= 1 << (j & 7)
        return int.from_bytes(bits, "little")
