"""The grids the override form offers: those a sharded layout cuts the op part's tensors into equal
shards over, the others marked with why, and a grid that does not divide moved to one that does."""

from __future__ import annotations

import pytest

from tilescope.app.workbench.explorer import Explorer
from tilescope.app.workbench.grid_choices import grid_choice
from tilescope.app.workbench.override_form import FormValues, staged_override
from tilescope.perfdb.engine import open_db, session_factory

MLP = "zoo:mlp?layers=1"
FC1 = "mlp.layer.0.fc1.matmul"
GELU = "mlp.layer.0.gelu"  # fc1's output (gelu fused in): 4x128 tiles of 32x32


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    explorer = Explorer(session_factory(open_db(f"sqlite:///{tmp_path_factory.mktemp('grids')}/t.db")))
    return explorer.view(explorer.ensure_run(MLP, "wormhole_n150"))


def _offered(options) -> list[int]:
    return [o.value for o in options if not o.why_not]


@pytest.mark.parametrize(
    "memory_layout, tile, rows, cols",
    [
        ("interleaved", "default", [1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8]),
        ("block_sharded", "default", [1, 2, 4], [1, 2, 4, 8]),  # rows divide 4, columns 128
        ("height_sharded", "default", [1, 2, 4], [1, 2, 4]),  # rows x columns divide 4
        ("width_sharded", "default", [1, 2, 4, 8], [1, 2, 4, 8]),  # rows x columns divide 128
        ("block_sharded", "16x32", [1, 2, 4, 8], [1, 2, 4, 8]),  # 8 rows of 16x32 tiles
    ],
)
def test_the_menus_offer_the_grids_that_cut_the_tensor_evenly(run, memory_layout, tile, rows, cols):
    choice = grid_choice(run, FC1, "output", memory_layout, tile, (1, 1))
    assert (_offered(choice.rows), _offered(choice.cols)) == (rows, cols)
    assert choice.grid == (1, 1) and choice.moved == ""
    # the grid the whole target's moves to is one the form may add: staging does not refuse it
    grid = grid_choice(run, FC1, "output", memory_layout, tile, (8, 8)).grid
    staged_override(run, FC1, FormValues("l1", memory_layout, *grid, "tile", "bf16", tile=tile))


def test_a_grid_not_offered_says_why(run):
    choice = grid_choice(run, FC1, "output", "block_sharded", "default", (4, 8))
    (three,) = [o for o in choice.rows if o.value == 3]
    assert three.why_not == f"no grid of 3 rows cuts {GELU} (4x128 tiles of 32x32) block_sharded into equal shards"


def test_a_grid_that_does_not_divide_moves_to_the_nearest_that_does(run):
    moved = grid_choice(run, FC1, "output", "block_sharded", "default", (8, 8))
    assert moved.grid == (4, 8)
    assert moved.moved == (
        f"block_sharded over 8x8 cores does not divide {GELU} (4x128 tiles of 32x32): grid set to 4x8"
    )
    # the dimension just chosen stays, the other moves
    assert grid_choice(run, FC1, "output", "height_sharded", "default", (4, 2), kept="rows").grid == (4, 1)
    assert grid_choice(run, FC1, "output", "height_sharded", "default", (4, 2), kept="cols").grid == (2, 2)


def test_an_operand_is_cut_as_its_own_tensor(run):
    weight = grid_choice(run, FC1, "operand 1", "block_sharded", "default", (8, 8))  # 32x128 tiles
    assert weight.grid == (8, 8) and not weight.moved
    assert _offered(weight.rows) == [1, 2, 4, 8]
    # no op, or a part the op lacks: every grid (the op's outputs), nothing moved
    assert _offered(grid_choice(run, None, "output", "block_sharded", "default", (8, 8)).rows) == list(range(1, 9))
    assert grid_choice(run, FC1, "operand 9", "block_sharded", "default", (8, 8)).grid == (4, 8)
