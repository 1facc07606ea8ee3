"""The collectives between two shardings of a tensor."""

from compiler.resharding import steps
from compiler.sharding import Mesh, Sharding

MESH = Mesh((("x", 2), ("y", 4)))


def kinds(src: Sharding, dst: Sharding) -> list[tuple[str, tuple[str, ...], int | None]]:
    return [(s.kind, s.axes, s.dim) for s in steps(src, dst)]


def test_the_same_sharding_needs_nothing():
    s = Sharding((("x",), ()))
    assert steps(s, s) == []


def test_a_split_dimension_made_whole_is_gathered():
    assert kinds(Sharding((("x",), ())), Sharding.replicated(2)) == [("all_gather", ("x",), 0)]


def test_gathers_of_one_dimension_are_one_gather():
    assert kinds(Sharding((("x", "y"), ())), Sharding.replicated(2)) == [("all_gather", ("x", "y"), 0)]


def test_splitting_a_whole_tensor_is_a_local_slice():
    assert kinds(Sharding.replicated(2), Sharding(((), ("y",)))) == [("all_slice", ("y",), 1)]


def test_an_axis_moving_between_dimensions_is_an_all_to_all():
    found = steps(Sharding((("x",), ())), Sharding(((), ("x",))))
    assert [(s.kind, s.dim, s.from_dim) for s in found] == [("all_to_all", 1, 0)]
    assert found[-1].result == Sharding(((), ("x",)))


def test_partial_sums_are_reduced_then_sliced_or_scattered():
    partial = Sharding(((), ()), partial=("y",))
    assert kinds(partial, Sharding.replicated(2)) == [("all_reduce", ("y",), None)]
    assert kinds(partial, Sharding(((), ("y",)))) == [("reduce_scatter", ("y",), 1)]


def test_every_step_ends_at_the_wanted_sharding():
    cases = [
        (Sharding((("x",), ("y",))), Sharding((("y",), ("x",)))),
        (Sharding((("x",), ()), partial=("y",)), Sharding(((), ("x",)))),
        (Sharding(((), ("x", "y"))), Sharding((("y",), ()))),
    ]
    for src, dst in cases:
        assert steps(src, dst)[-1].result == dst


def test_local_shapes_and_problems():
    s = Sharding((("x",), ("y",)))
    assert s.local_shape((8, 32), MESH) == (4, 8)
    assert s.problem((8, 30), MESH) == "dimension 1 (30) does not divide into 4"
    assert Sharding((("x",), ("x",))).problem((8, 8), MESH) == 'axis "x" used twice'
    assert Sharding((("z",),)).problem((8,), MESH) == 'mesh has no axis "z" (its axes: "x", "y")'
    assert s.problem((8,), MESH) == "2 dimensions given for a rank-1 tensor"
