"""A target file with values changed: the rest of it, comments and all, as written."""

from __future__ import annotations

import pytest

from tilescope.compiler.errors import TargetError
from tilescope.compiler.targets.catalog import load_target, target_text
from tilescope.compiler.targets.file_values import with_table, with_values

TEXT = """# a chip
name = "a"  # its name

[pipeline]
# why launch costs this
launch_ns = 2779
overlap_loss = 0.15

[noc]
count = 2
"""


def test_a_value_is_replaced_on_its_line_and_its_comment_kept():
    out = with_values(TEXT, {"pipeline.launch_ns": 3000.5}, why="fitted")
    assert "launch_ns = 3000.5  # fitted" in out
    assert "# why launch costs this" in out and "overlap_loss = 0.15" in out
    assert out.count("launch_ns") == 1


def test_a_missing_key_goes_at_the_end_of_its_table_and_a_missing_table_at_the_end():
    out = with_values(TEXT, {"noc.round_trip_cycles": 420, "fusion.bias": 1, "name": "b"})
    lines = out.splitlines()
    assert lines[lines.index("count = 2") + 1] == "round_trip_cycles = 420"
    assert lines[-2:] == ["[fusion]", "bias = 1"]
    assert 'name = "b"' in lines and 'name = "a"  # its name' not in lines


def test_a_table_written_whole_replaces_the_old_one():
    once = with_table(TEXT, "error_bands", {"default": 0.5, "matmul": 0.2}, "bands")
    twice = with_table(once, "error_bands", {"default": 0.4}, "bands")
    assert twice.count("[error_bands]") == 1 and twice.count("# bands") == 1  # its comment replaced too
    assert "matmul" not in twice and twice.rstrip().endswith("default = 0.4")


def test_a_chip_file_with_bands_reads_them_and_refuses_bad_ones():
    text = with_table(target_text("wormhole_n150")[0], "error_bands", {"default": 0.5, "matmul": 0.12})
    target = load_target("banded.toml", text=text)
    assert target.error_band("matmul") == 0.12
    assert target.error_band("softmax") == 0.5
    bad = with_table(target_text("wormhole_n150")[0], "error_bands", {"matmul": -1.0})
    with pytest.raises(TargetError, match="error_bands.matmul"):
        load_target("bad.toml", text=bad)
    worse = with_table(target_text("wormhole_n150")[0], "error_bands", {}) + 'matmul = "wide"\n'
    with pytest.raises(TargetError, match="must be float"):
        load_target("worse.toml", text=worse)
