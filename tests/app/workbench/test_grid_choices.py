"""The grids the override form offers: those a sharded layout gives each core a shard of the op
part's tensors over (evenly or not, as ttnn shards), the others marked with why, and a grid with
more cores than shards moved to one that fits."""

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
        ("block_sharded", "default", [1, 2, 3, 4], list(range(1, 9))),  # rows up to 4, columns up to 128
        ("height_sharded", "default", [1, 2, 3, 4], [1, 2, 3, 4]),  # rows x columns up to 4
        ("width_sharded", "default", list(range(1, 9)), list(range(1, 9))),  # rows x columns up to 128
        ("block_sharded", "16x32", list(range(1, 9)), list(range(1, 9))),  # 8 rows of 16x32 tiles
    ],
)
def test_the_menus_offer_the_grids_that_give_each_core_a_shard(run, memory_layout, tile, rows, cols):
    choice = grid_choice(run, FC1, "output", memory_layout, tile, (1, 1))
    assert (_offered(choice.rows), _offered(choice.cols)) == (rows, cols)
    assert choice.grid == (1, 1) and choice.moved == ""
    # the grid the whole target's moves to is one the form may add: staging does not refuse it
    grid = grid_choice(run, FC1, "output", memory_layout, tile, (8, 8)).grid
    staged_override(run, FC1, FormValues("l1", memory_layout, *grid, "tile", "bf16", tile=tile))


def test_a_grid_not_offered_says_why(run):
    choice = grid_choice(run, FC1, "output", "block_sharded", "default", (4, 8))
    (five,) = [o for o in choice.rows if o.value == 5]
    assert five.why_not == f"no grid of 5 rows gives each core a shard of {GELU} (4x128 tiles of 32x32) block_sharded"


def test_a_grid_with_more_cores_than_shards_moves_to_the_nearest_that_fits(run):
    moved = grid_choice(run, FC1, "output", "block_sharded", "default", (8, 8))
    assert moved.grid == (4, 8)
    assert moved.moved == (
        f"block_sharded over 8x8 cores has more cores than {GELU} (4x128 tiles of 32x32) has shards: grid set to 4x8"
    )
    # the dimension just chosen stays, the other moves
    assert grid_choice(run, FC1, "output", "height_sharded", "default", (4, 2), kept="rows").grid == (4, 1)
    assert grid_choice(run, FC1, "output", "height_sharded", "default", (4, 2), kept="cols").grid == (2, 2)


def test_an_operand_is_cut_as_its_own_tensor(run):
    weight = grid_choice(run, FC1, "operand 1", "block_sharded", "default", (8, 8))  # 32x128 tiles
    assert weight.grid == (8, 8) and not weight.moved
    assert _offered(weight.rows) == list(range(1, 9))  # the result offers 4 rows at most
    # no op, or a part the op lacks: every grid (the op's outputs), nothing moved
    assert _offered(grid_choice(run, None, "output", "block_sharded", "default", (8, 8)).rows) == list(range(1, 9))
    assert grid_choice(run, FC1, "operand 9", "block_sharded", "default", (8, 8)).grid == (4, 8)
