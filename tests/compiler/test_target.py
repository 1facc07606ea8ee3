"""Targets are TOML data files; a bad file is one TargetError naming the file and the key."""

from __future__ import annotations

import re

import pytest

from compiler.errors import TargetError
from compiler.target import BUILTIN_DIR, builtin_names, load_target

SOURCE = (BUILTIN_DIR / "wormhole_n150.toml").read_text()


def _write(tmp_path, text, name="t.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _edit(old, new, count=1):
    assert old in SOURCE, old
    return SOURCE.replace(old, new, count)


def test_wormhole_n150_numbers(wormhole):
    t = wormhole
    assert t.name == "wormhole_n150"
    assert t.grid == (8, 8) and t.cores == 64
    assert t.clock_hz == 1e9
    assert t.tile == (32, 32)
    assert t.core_memory.name == "l1"
    assert t.core_memory.capacity_bytes == 1499136
    assert t.core_memory.bytes_per_s == 256e9  # 256 B/cycle at 1 GHz
    assert t.dram.bytes_per_s == 258e9
    assert t.dram.scope == "device" and t.dram.channels == 6
    assert t.cycles_per_tile == {"lofi": 16, "hifi2": 32, "hifi3": 48, "hifi4": 64}
    assert t.matrix_flops_per_cycle == 4096
    assert t.peak_flops == 4096 * 64 * 1e9
    assert t.noc_bytes_per_s == 32e9
    assert t.dispatch_ns == {"host": 100_000.0, "trace": 0.0}
    assert set(t.memories) == {"l1", "dram"}


def test_builtin_names():
    assert "wormhole_n150" in builtin_names()


def test_a_copy_of_the_file_loads_by_path(tmp_path):
    t = load_target(_write(tmp_path, SOURCE))
    assert t.grid == (8, 8) and t.dram.bytes_per_s == 258e9


def test_unknown_target_lists_builtins():
    with pytest.raises(TargetError, match=r"unknown target 'blackhole_p999'.*wormhole_n150"):
        load_target("blackhole_p999")


def test_path_that_is_not_a_toml_file(tmp_path):
    with pytest.raises(TargetError, match="unknown target"):
        load_target(str(tmp_path / "missing.toml"))
    with pytest.raises(TargetError, match="unknown target"):
        load_target(_write(tmp_path, SOURCE, "t.txt"))


@pytest.mark.parametrize(
    "old, new, key",
    [
        ("flops_per_cycle = 4096\n", "", "matrix.flops_per_cycle"),
        ("lofi = 16, ", "", "matrix.cycles_per_tile.lofi"),
        ("elements_per_cycle = 128\n", "", "vector.elements_per_cycle"),
        ("clock_hz = 1.0e9\n", "", "clock_hz"),
        ("hop_cycles = 9\n", "", "noc.hop_cycles"),
        ("[memory.dram]", "[memory.hbm]", "memory.dram"),
    ],
)
def test_missing_key_is_named(tmp_path, old, new, key):
    path = _write(tmp_path, _edit(old, new))
    with pytest.raises(TargetError) as err:
        load_target(path)
    message = str(err.value)
    assert message.startswith(path)
    assert f"missing key '{key}'" in message


@pytest.mark.parametrize(
    "old, new, key, fragment",
    [
        ("flops_per_cycle = 4096", 'flops_per_cycle = "lots"', "matrix.flops_per_cycle", "must be int"),
        ("rows = 8\n", "rows = 8.5\n", "grid.rows", "must be int"),
        ("rows = 8\n", "rows = true\n", "grid.rows", "must be int"),
        ("rows = 8\n", "rows = 0\n", "grid.rows", "must be positive"),
        ('name = "wormhole_n150"', "name = 3", "name", "must be str"),
        ("bytes_per_s = 258.0e9", 'bytes_per_s = "fast"', "memory.dram.bytes_per_s", "must be float"),
        ('scope = "core"', 'scope = "chip"', "memory.l1.scope", "core or device"),
        ("host_ns = 100_000", "host_ns = -1", "dispatch.host_ns", ">= 0"),
    ],
)
def test_wrong_typed_value_names_the_key(tmp_path, old, new, key, fragment):
    path = _write(tmp_path, _edit(old, new))
    with pytest.raises(TargetError, match=re.escape(f"'{key}'") + ".*" + re.escape(fragment)):
        load_target(path)


def test_two_core_memories_are_rejected(tmp_path):
    path = _write(tmp_path, _edit('[memory.dram]\nscope = "device"', '[memory.dram]\nscope = "core"'))
    with pytest.raises(TargetError, match='exactly one memory with scope = "core"'):
        load_target(path)


def test_invalid_toml(tmp_path):
    path = _write(tmp_path, SOURCE + "\n[[[ not toml\n")
    with pytest.raises(TargetError, match=re.escape(path) + ": not valid TOML"):
        load_target(path)


def test_modified_numbers_are_used(tmp_path):
    t = load_target(_write(tmp_path, _edit("rows = 8\ncols = 8", "rows = 4\ncols = 2")))
    assert t.grid == (4, 2) and t.cores == 8


def test_bad_channels_is_a_target_error(tmp_path):
    path = _write(tmp_path, _edit("channels = 6", 'channels = "six"'))
    with pytest.raises(TargetError, match="memory.dram.channels"):
        load_target(path)


def test_dispatch_not_a_table_is_a_target_error(tmp_path):
    text = SOURCE.split("[dispatch]")[0].replace('name = "wormhole_n150"', 'name = "wormhole_n150"\ndispatch = 5')
    path = _write(tmp_path, text)
    with pytest.raises(TargetError, match="dispatch"):
        load_target(path)
