"""The collectives between two shardings of a tensor."""

from hypothesis import assume, given
from hypothesis import strategies as st

from tilescope.compiler.sharding.resharding import steps
from tilescope.compiler.sharding.mesh import Mesh, Sharding
from tests.fuzzing import fuzz_settings

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


def test_axes_in_another_order_are_gathered_and_split_again():
    # a piece split x-major cannot be cut into the y-major pieces without moving data
    found = steps(Sharding((("x", "y"),)), Sharding((("y", "x"),)))
    assert [(s.kind, s.axes) for s in found] == [("all_gather", ("x", "y")), ("all_slice", ("y", "x"))]
    assert found[-1].result == Sharding((("y", "x"),))


def test_a_new_axis_splits_a_piece_only_as_its_minor_axis():
    found = kinds(Sharding((("y",), ())), Sharding((("x", "y"), ())))
    assert found == [("all_gather", ("y",), 0), ("all_slice", ("x", "y"), 0)]


@st.composite
def _reshard_case(draw):
    names = [f"a{i}" for i in range(draw(st.integers(1, 4)))]
    mesh = Mesh(tuple((a, draw(st.sampled_from([1, 2, 4]))) for a in names))
    shape = tuple(draw(st.sampled_from([16, 32, 64])) for _ in range(draw(st.integers(1, 4))))

    def sharding(partial_ok: bool) -> Sharding:
        dims: list[list[str]] = [[] for _ in shape]
        partial: list[str] = []
        for axis in draw(st.permutations(names))[: draw(st.integers(0, len(names)))]:
            slot = draw(st.integers(-1 if partial_ok else 0, len(shape) - 1))
            (partial if slot < 0 else dims[slot]).append(axis)
        return Sharding(tuple(tuple(d) for d in dims), tuple(partial))

    return mesh, shape, sharding(True), sharding(False)


@fuzz_settings(default=500)
@given(_reshard_case())
def test_steps_end_at_the_wanted_sharding_through_valid_ones(case):
    mesh, shape, src, dst = case
    assume(src.problem(shape, mesh) is None and dst.problem(shape, mesh) is None)
    found = steps(src, dst)
    assert all(step.result.problem(shape, mesh) is None for step in found)
    assert (found[-1].result if found else src) == dst
