"""Softmax as ttnn's softmax program runs it, checked on one op replayed from a report row: the
writer's mask for a padded row, exp on every tile and a reciprocal a row, each row's stages begun
and handed on one after another."""

from __future__ import annotations

import pytest

from tests.compiler.profiles.replay_reports import op, t
from tests.compiler.sim.replayed import BLACKHOLE, WORMHOLE, changed, kernel_of, ns


def _softmax(width: int, rows: int = 32, heads: int = 12, arch: str = "blackhole") -> dict:
    x = t(1, heads, rows, width)
    return op("SoftmaxDeviceOperation", [x], [x], cores=64, arch=arch, dim="3", numeric_stable="true")


def test_a_softmax_over_a_padded_row_first_builds_its_mask_a_store_an_element():
    # CLIP's 19 keys: a 32 x 32 bf16 tile zeroed an element at a time, then its 13 padded columns
    # set on every row (the last 13 elements of the row's right face row, bytes 6 to 32)
    (group,) = kernel_of(_softmax(19, arch="wormhole_b0"), "softmax", WORMHOLE).groups
    assert group.setup_cycles == (1024 + 32 * 13) * 5  # Wormhole: each a store of 5 cycles
    (group,) = kernel_of(_softmax(19), "softmax").groups
    # Blackhole's store queue merges the zeroing's stores, whole 16-byte blocks, one a cycle; of a
    # row's padding, the 8 stores of its whole block one a cycle, the 5 before it one merged store
    # of 5 cycles
    assert group.setup_cycles == 1024 * 1 + 32 * (8 + 5)
    slower = ns(_softmax(19), "softmax", changed(word_store_cycles=BLACKHOLE.pipeline.word_store_cycles + 1))
    assert slower - ns(_softmax(19), "softmax") == pytest.approx(32 / BLACKHOLE.clock_hz * 1e9, rel=0.02)


def test_a_softmax_over_whole_tiles_builds_no_mask():
    (group,) = kernel_of(_softmax(64), "softmax").groups
    assert group.setup_cycles == 0


def test_a_softmax_runs_exp_on_every_tile_and_a_reciprocal_on_every_row():
    row = _softmax(128, rows=64)  # 12 heads x 2 tile rows over 24 cores, each a row of 4 tiles
    base = ns(row, "softmax")
    exp = ns(row, "softmax", changed(sfpu={"exp": BLACKHOLE.sfpu_tile_cycles("exp") + 1000}))
    reciprocal = ns(row, "softmax", changed(sfpu={"reciprocal": BLACKHOLE.sfpu_tile_cycles("reciprocal") + 1000}))
    per_core_ns = 1000 / BLACKHOLE.clock_hz * 1e9
    assert exp - base == pytest.approx(4 * per_core_ns, rel=0.05)
    assert reciprocal - base == pytest.approx(per_core_ns, rel=0.05)


def test_each_row_of_a_softmax_begins_each_of_its_stages():
    # max, exp(x - max), sum and reciprocal, scale: four stages a row; a padded row adds its mask
    one_row, two_rows = _softmax(128, rows=32), _softmax(128, rows=64)  # 12 or 24 cores, 1 row each
    dearer = changed(stage_init_cycles=BLACKHOLE.pipeline.stage_init_cycles + 1000)
    per_core_ns = 1000 / BLACKHOLE.clock_hz * 1e9
    assert ns(one_row, "softmax", dearer) - ns(one_row, "softmax") == pytest.approx(4 * per_core_ns, rel=0.05)
    padded = _softmax(120, rows=32)
    assert ns(padded, "softmax", dearer) - ns(padded, "softmax") == pytest.approx(5 * per_core_ns, rel=0.05)
    # two rows on a core (12 heads x 2 tile rows over 12 cores) begin them twice
    twelve = op("SoftmaxDeviceOperation", [t(1, 12, 64, 128)], [t(1, 12, 64, 128)], cores=12, arch="blackhole")
    assert ns(twelve, "softmax", dearer) - ns(twelve, "softmax") == pytest.approx(8 * per_core_ns, rel=0.05)
    assert ns(two_rows, "softmax", dearer) - ns(two_rows, "softmax") == pytest.approx(4 * per_core_ns, rel=0.05)


def test_a_softmax_stage_hands_its_result_on_through_a_buffer():
    # each stage but the last waits on a buffer's handshake for what the stage before packed
    row = _softmax(128, rows=32)
    slower = changed(step_sync_cycles=BLACKHOLE.pipeline.step_sync_cycles + 1000)
    per_core_ns = 1000 / BLACKHOLE.clock_hz * 1e9
    # three hand-offs between the four stages, and the pipeline's own step
    assert ns(row, "softmax", slower) - ns(row, "softmax") == pytest.approx(4 * per_core_ns, rel=0.05)
