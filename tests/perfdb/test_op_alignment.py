"""perfdb.op_alignment: two op sequences aligned as a longest common subsequence, exactly, by either
algorithm, and in tiers (ops alike first)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tilescope.perfdb import op_alignment
from tilescope.perfdb.op_alignment import align, common_subsequence

tokens = st.lists(st.integers(0, 3), max_size=40)


def lcs_length(a, b) -> int:
    """The textbook dynamic programme."""
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal, row[0] = 0, 0
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def assert_common_subsequence(pairs, a, b) -> None:
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(pairs, pairs[1:]))
    assert len(pairs) == lcs_length(a, b)


@settings(max_examples=300, deadline=None)
@given(tokens, tokens)
def test_every_way_finds_a_longest_common_subsequence(a, b):
    assert_common_subsequence(common_subsequence(a, b), a, b)
    assert_common_subsequence(op_alignment._bit_parallel(a, b), a, b)
    assert_common_subsequence(op_alignment._myers(a, b, max_d=len(a) + len(b)), a, b)


def test_myers_gives_way_past_its_budget():
    a, b = [0, 1] * 50, [1, 0] * 50
    assert op_alignment._myers(a, b, max_d=1) is None
    assert len(op_alignment._myers(a, b, max_d=200)) == 99


def test_many_rare_tokens_are_masked_on_demand():
    # a token found fewer than _Masks.KEPT times has no integer kept for it
    a = list(range(300))
    b = [*range(150, 300), *range(150)]
    assert op_alignment._Masks(b, set(a)).kept == {}
    pairs = op_alignment._bit_parallel(a, b)
    assert pairs == [(i, i - 150) for i in range(150, 300)]


def test_one_inserted_op_shifts_no_later_pair():
    layer = ["layernorm", "matmul", "matmul", "matmul", "reshape", "transpose", "softmax", "matmul", "add"]
    a = layer * 20
    b = a[:40] + ["typecast"] + a[40:]
    assert common_subsequence(a, b) == [(i, i if i < 40 else i + 1) for i in range(len(a))]


def likeness(a_alike, b_alike, a_ns=None, b_ns=None):
    """(alike, alike and equally long) of a[i] and b[j]."""

    def found(i, j):
        alike = a_alike[i] == b_alike[j]
        return (alike, alike and a_ns is not None and a_ns[i] == b_ns[j])

    return found


def test_ops_alike_are_paired_first():
    # four transposes, of q and k alike; b lost v: by op alone any three would pair with b's
    shapes = ["q", "k", "v", "o"]
    a_op, b_op = ["transpose"] * 4, ["transpose"] * 3
    assert align(a_op, b_op, likeness(shapes, ["q", "k", "o"])) == [(0, 0), (1, 1), (3, 2)]
    assert align(a_op, b_op, likeness(shapes, ["k", "v", "o"])) == [(1, 0), (2, 1), (3, 2)]
    # b lost k: as alike as losing q, but for the times
    times = [10, 11, 12, 13]
    assert align(a_op, b_op, likeness(shapes, ["q", "v", "o"], times, [10, 12, 13])) == [(0, 0), (2, 1), (3, 2)]
    assert align(a_op, b_op, likeness(["q", "q", "v", "o"], ["q", "v", "o"], times, [11, 12, 13])) == [
        (1, 0),
        (2, 1),
        (3, 2),
    ]
    # and an op b has alone
    assert align(b_op, a_op, likeness(["q", "k", "o"], shapes)) == [(0, 0), (1, 1), (2, 3)]


def test_a_hunk_slides_only_within_its_row_of_like_ops():
    # the removed matmul may sit at any of the three matmuls, never past the add between them
    a_op = ["mm", "mm", "add", "mm", "mm", "mm"]
    b_op = ["mm", "mm", "add", "mm", "mm"]
    a_alike = ["x", "y", "+", "p", "q", "r"]
    assert align(a_op, b_op, likeness(a_alike, ["x", "y", "+", "q", "r"])) == [(0, 0), (1, 1), (2, 2), (4, 3), (5, 4)]
    assert align(a_op, b_op, likeness(a_alike, ["x", "y", "+", "p", "q"])) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]
    # nothing alike: the pairs the longest common subsequence gave
    assert align(a_op, b_op, likeness(a_alike, ["1", "2", "3", "4", "5"])) == common_subsequence(a_op, b_op)


@settings(max_examples=200, deadline=None)
@given(
    tokens,
    tokens,
    st.lists(st.integers(0, 2), min_size=40, max_size=40),
    st.lists(st.integers(0, 2), min_size=40, max_size=40),
)
def test_sliding_keeps_a_longest_common_subsequence(a, b, a_alike, b_alike):
    assert_common_subsequence(align(a, b, likeness(a_alike, b_alike)), a, b)
