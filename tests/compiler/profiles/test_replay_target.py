"""The grid a measured op's cores are replayed on: a rectangle of the target's grid."""

from __future__ import annotations

import pytest

from tilescope.compiler.profiles.replay_target import config_grid, grid_of


@pytest.mark.parametrize(
    "cores, grid, expected",
    [
        (64, (8, 8), (8, 8)),
        (110, (10, 13), (10, 11)),  # ttnn's 11 x 10 compute grid on a Blackhole
        (20, (10, 13), (4, 5)),
        (1, (8, 8), (1, 1)),
        (103, (10, 13), (8, 13)),  # prime: the nearest count, 104
        (38, (8, 8), (5, 8)),  # 36 and 40 are as near: the larger
        (140, (10, 13), (10, 13)),  # more than the target has: all of it
    ],
)
def test_a_core_count_is_the_nearest_rectangle_of_the_target_s_grid(cores, grid, expected):
    assert grid_of(cores, grid) == expected


def test_a_program_config_s_grid_is_taken_when_it_holds_the_op_s_cores():
    config = "MatmulMultiCoreReuseMultiCastProgramConfig(compute_with_storage_grid_size=(x=11;y=10);in0_block_w=14)"
    assert config_grid(config, 110, (10, 13)) == (10, 11)
    assert config_grid(config, 100, (10, 13)) is None  # ran on fewer cores than the config's grid
    assert config_grid(config, 110, (8, 8)) is None  # does not fit the target
    assert config_grid("std::nullopt", 64, (8, 8)) is None
