"""Targets are TOML data files; a bad file is one TargetError naming the file and the key."""

from __future__ import annotations

import re

import pytest

from tilescope.compiler.errors import TargetError
from tilescope.compiler.targets.data_file import MAX_KEY_PARTS, parse_toml
from tilescope.compiler.targets.catalog import BUILTIN_DIR, builtin_names, load_target

SOURCE = (BUILTIN_DIR / "wormhole_n150.toml").read_text()
DEEP_KEY = f"a key of more than {MAX_KEY_PARTS} dotted parts: not a target file"


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
    assert t.dram.bytes_per_s == 192e9
    assert t.dram.scope == "device" and t.dram.channels == 6
    assert t.dram.core_bytes_per_s == 22e9 and t.multicast_bytes_per_s == 22e9
    pipe = t.pipeline
    assert pipe.pack_bytes_per_cycle == 64 and pipe.dest_tiles == 8
    # the fitted constants stay within what the hardware allows (compiler/validation/calibration.py, FITTED)
    assert 16 <= pipe.unpack_bytes_per_cycle <= 80 and 0 <= pipe.overlap_loss <= 1
    assert 0 < pipe.step_sync_cycles < 2000 and 0 < pipe.launch_ns < 20_000
    assert [t.tile_cycles("bf16", f) for f in ("lofi", "hifi2", "hifi3", "hifi4")] == [16, 32, 48, 64]
    assert t.matrix.flops_per_cycle["bf16"] == 4096
    assert t.peak_flops("bf16") == 4096 * 64 * 1e9
    assert t.peak_flops("bf16", "hifi4") == 4096 * 64 * 1e9 / 4
    assert t.default_fidelity("f32") == "hifi4" and t.default_fidelity("bfp8") == "lofi"
    assert t.compute_dtype("i32") == "bf16"  # integers are unpacked to bf16
    # the assumptions: vector-unit functions no measurement names cost what relu does; a page's
    # RISC-V work is Blackhole's fit (the same cores; Wormhole's report streams no pages)
    assert t.noc_multicast is True and t.assumed == ("vector.sfpu_cycles_per_tile", "noc.page_cycles")
    assert t.noc_bytes_per_s == 32e9
    assert t.dispatch_ns == {"host": 100_000.0, "trace": 0.0}
    assert set(t.memories) == {"l1", "dram"}


def test_builtin_names():
    assert "wormhole_n150" in builtin_names()


def test_a_copy_of_the_file_loads_by_path(tmp_path):
    t = load_target(_write(tmp_path, SOURCE))
    assert t.grid == (8, 8) and t.dram.bytes_per_s == 192e9


def test_unknown_target_lists_builtins():
    with pytest.raises(TargetError, match=r"unknown target 'blackhole_p999'.*wormhole_n150"):
        load_target("blackhole_p999")


def test_path_that_is_not_a_toml_file(tmp_path):
    with pytest.raises(TargetError, match=r"missing.toml: no such target file"):
        load_target(str(tmp_path / "missing.toml"))
    with pytest.raises(TargetError, match="unknown target"):
        load_target(_write(tmp_path, SOURCE, "t.txt"))


@pytest.mark.parametrize(
    "old, new, key",
    [
        (
            "flops_per_cycle = { bf16 = 4096, f16 = 4096, bfp8 = 4096, bfp4 = 4096, f32 = 4096 }\n",
            "",
            "matrix.flops_per_cycle",
        ),
        ("lofi = 1, ", "", "matrix.fidelity_passes.lofi"),
        ("elements_per_cycle = 128\n", "", "vector.elements_per_cycle"),
        ("clock_hz = 1.0e9\n", "", "clock_hz"),
        ("hop_cycles = 9\n", "", "noc.hop_cycles"),
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
        ("bf16 = 4096", 'bf16 = "lots"', "matrix.flops_per_cycle.bf16", "must be int"),
        ("bf16 = 4096", "bogus16 = 4096", "matrix.flops_per_cycle.bogus16", "is not a dtype"),
        ('fallback_dtype = "bf16"', 'fallback_dtype = "i8"', "matrix.fallback_dtype", "must name a dtype"),
        ("multicast = true", "multicast = 1", "noc.multicast", "must be bool"),
        ("rows = 8\n", "rows = 8.5\n", "grid.rows", "must be int"),
        ("rows = 8\n", "rows = true\n", "grid.rows", "must be int"),
        ("rows = 8\n", "rows = 0\n", "grid.rows", "must be positive"),
        ('name = "wormhole_n150"', "name = 3", "name", "must be str"),
        ("bytes_per_s = 192.0e9", 'bytes_per_s = "fast"', "memory.dram.bytes_per_s", "must be float"),
        ('scope = "core"', 'scope = "l3"', "memory.l1.scope", "must be one of core, chip, device, host"),
        ("host_ns = 100_000", "host_ns = -1", "dispatch.host_ns", "must be between 0 and 1e+09, got -1"),
    ],
)
def test_wrong_typed_value_names_the_key(tmp_path, old, new, key, fragment):
    path = _write(tmp_path, _edit(old, new))
    with pytest.raises(TargetError, match=re.escape(f"'{key}'") + ".*" + re.escape(fragment)):
        load_target(path)


def test_a_target_without_device_memory_is_rejected(tmp_path):
    path = _write(tmp_path, _edit('[memory.dram]\nscope = "device"', '[memory.dram]\nscope = "host"'))
    with pytest.raises(TargetError, match='exactly one memory with scope = "device"'):
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


BUILTIN = {  # name: (grid, clock, core memory KiB, DRAM GB/s, bf16 peak TFLOPS at the fastest fidelity, memories)
    "wormhole_n150": ((8, 8), 1.0e9, 1464, 192, 262.144, {"l1", "dram"}),
    "blackhole_p150": ((10, 13), 1.35e9, 1536, 344, 718.848, {"l1", "dram"}),
    "mtia_v1": ((8, 8), 0.8e9, 128, 176, 51.2, {"l1", "lls", "dram"}),
    "corsair": ((4, 8), 1.0e9, 65536, 400, 600.0, {"l1", "dram"}),
    # one of the Corsair card's eight chiplets: an eighth of the card (compiler/targets/systems/corsair_card.toml)
    "corsair_chiplet": ((4, 1), 1.0e9, 65536, 50, 75.0, {"l1", "dram"}),
    # CPUs: a core's L2 is its memory, the L3 the shared one; bf16 at the vdpbf16ps / BFMMLA rate
    "x86_avx512": ((8, 12), 3.55e9, 1024, 460.8, 64 * 96 * 3.55e9 / 1e12, {"l1", "lls", "dram"}),
    "aarch64_sve": ((8, 8), 2.6e9, 1024, 307.2, 64 * 64 * 2.6e9 / 1e12, {"l1", "lls", "dram"}),
}
SYSTEMS = [
    "blackhole_8xp150",
    "blackhole_p300",
    "corsair_card",
    "galaxy",
    "mtia_v1_host",
    "t3k",
    "wormhole_n300",
    "x86_avx512_2p",
]


def test_builtin_targets_are_the_devices_and_the_systems():
    assert builtin_names() == sorted([*BUILTIN, *SYSTEMS])


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_target_numbers(name):
    grid, clock, l1_kib, dram_gbs, peak_tflops, memories = BUILTIN[name]
    t = load_target(name)
    assert t.grid == grid and t.clock_hz == clock
    assert t.core_memory.capacity_bytes == l1_kib * 1024
    assert t.dram.bytes_per_s == dram_gbs * 1e9
    assert t.peak_flops("bf16") / 1e12 == pytest.approx(peak_tflops, rel=1e-3)
    assert set(t.memories) == memories


def test_published_peaks_follow_from_the_per_core_rates():
    # MTIA v1: 102.4 INT8 TOPS; Corsair: 2.4 PFLOPS MXINT8, 9.6 PFLOPS MXINT4
    assert load_target("mtia_v1").peak_flops("i8") == pytest.approx(102.4e12)
    corsair = load_target("corsair")
    assert corsair.peak_flops("mxint8") == pytest.approx(2.4e15)
    assert corsair.peak_flops("mxint4") == pytest.approx(9.6e15)
    assert corsair.compute_dtype("bf16") == "mxint16"  # block floating point only


def test_a_cpus_f16_is_computed_in_f32_and_takes_the_f32_inner_tile():
    cpu = load_target("x86_avx512")
    assert cpu.compute_dtype("f16") == "f32"
    assert cpu.inner_tile("f16") == cpu.inner_tile("f32") == (16, 16, 1)
    assert cpu.inner_tile("bfp8") is None or cpu.inner_tile("bfp8") == cpu.inner_tile("f32")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[data_tiling]\nf32 = [16, 16]", "three integers"),
        ("[data_tiling]\nf32 = [16, 0, 1]", "three integers"),
        ("[data_tiling]\nf99 = [16, 16, 1]", "not a dtype"),
        ("[iree]\nflags = [1]", "iree.flags"),
    ],
)
def test_a_bad_data_tiling_or_iree_table_is_one_line(tmp_path, table, message):
    # the file's own [data_tiling] table (up to the next table's header) replaced by `table`
    without = re.sub(r"(?ms)^\[data_tiling\]$.*?(?=^\[[a-z_.]+\]$|\Z)", "", SOURCE)
    assert "[data_tiling]" not in without
    path = _write(tmp_path, without + "\n" + table + "\n")
    with pytest.raises(TargetError, match=message) as err:
        load_target(path)
    assert "\n" not in str(err.value)


def test_mtia_has_a_shared_on_chip_scratch():
    lls = load_target("mtia_v1").memories["lls"]
    assert (lls.scope, lls.capacity_bytes, lls.bytes_per_s, lls.shared) == ("chip", 128 * 2**20, 800e9, True)


def test_assumed_values_are_flagged():
    assert "vector.elements_per_cycle" in load_target("mtia_v1").assumed
    assert "clock_hz" in load_target("corsair").assumed
    assert "memory.l1.capacity_bytes" not in load_target("blackhole_p150").assumed
    assert "memory.l1.bytes_per_cycle" in load_target("blackhole_p150").assumed


def test_short_tiles_cost_their_rows_but_at_least_the_minimum_pass(wormhole):
    full = wormhole.tile_cycles("bf16", "lofi")
    assert wormhole.tile_cycles("bf16", "lofi", rows=16) == full / 2
    assert wormhole.tile_cycles("bf16", "lofi", rows=8) == full / 4
    assert wormhole.tile_cycles("bf16", "lofi", rows=1) == full / 4  # still a full 8-row pass
    assert wormhole.tile_cycles("bf16", "lofi", rows=64) == full


# --- hostile target files: one TargetError line naming the file and the field -----------------------


def test_a_grid_of_ten_billion_cores_is_refused_before_anything_is_allocated(tmp_path, capsys, tiny_path):
    from tilescope.app.cli import main

    path = _write(tmp_path, _edit("rows = 8\ncols = 8", "rows = 100000\ncols = 100000"), "my.toml")
    with pytest.raises(TargetError) as err:
        load_target(path)
    assert str(err.value) == f"{path}: grid 100000x100000: at most 256x256 cores"
    # through the CLI: one line, where the simulator's per-core arrays took 75 GB
    assert main(["show", tiny_path, "--target", path]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"tilescope: error: {path}: grid 100000x100000: at most 256x256 cores"
    ]
    assert load_target(_write(tmp_path, _edit("rows = 8\ncols = 8", "rows = 256\ncols = 256"))).cores == 65536


@pytest.mark.parametrize(
    "old, key",
    [
        ("clock_hz = 1.0e9", "clock_hz"),
        ("bytes_per_s = 192.0e9", "memory.dram.bytes_per_s"),
        ("bytes_per_cycle = 256", "memory.l1.bytes_per_cycle"),
        ("host_ns = 100_000", "dispatch.host_ns"),
        ("trace_ns = 0", "dispatch.trace_ns"),
    ],
)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
def test_nan_and_infinity_are_refused(tmp_path, old, key, value):
    path = _write(tmp_path, _edit(old, f"{old.split(' = ')[0]} = {value}"))
    with pytest.raises(
        TargetError, match=re.escape(f"{path}: key '{key}' must be ") + ".*" + re.escape(f"got {value.lstrip('+')}")
    ):
        load_target(path)


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("clock_hz = 1.0e9", "clock_hz = 1000.0", "key 'clock_hz' must be between 1e+06 and 1e+10, got 1000.0"),
        ("clock_hz = 1.0e9", "clock_hz = 1e12", "key 'clock_hz' must be between 1e+06 and 1e+10, got 1000000000000.0"),
        ("rows = 32\ncols = 32", "rows = 32\ncols = 100000", "key 'tile.cols' must be between 1 and 1,024, got 100000"),
        ("min_rows = 8", "min_rows = 1000000000", "key 'matrix.min_rows' must be between 1 and 1,024"),
        (
            "bf16 = 4096",
            "bf16 = 9223372036854775807",
            "key 'matrix.flops_per_cycle.bf16' must be between 1 and 1,073,741,824",
        ),
        ("hifi4 = 4", "hifi4 = 100", "key 'matrix.fidelity_passes.hifi4' must be between 1 and 64, got 100"),
        (
            "elements_per_cycle = 128",
            "elements_per_cycle = 0",
            "key 'vector.elements_per_cycle' must be positive, got 0",
        ),
        (
            "capacity_bytes = 1499136",
            "capacity_bytes = 9223372036854775807",
            "key 'memory.l1.capacity_bytes' must be between 1 and 1,125,899,906,842,624",
        ),
        (
            "bytes_per_s = 192.0e9",
            "bytes_per_s = 1e300",
            "key 'memory.dram.bytes_per_s' must be between 1000 and 1e+16, got 1e+300",
        ),
        (
            "bytes_per_s = 192.0e9",
            "bytes_per_s = 1e-300",
            "key 'memory.dram.bytes_per_s' must be between 1000 and 1e+16, got 1e-300",
        ),
        (
            "channels = 6",
            "channels = 6\nlatency_ns = -1",
            "key 'memory.dram.latency_ns' must be between 0 and 1e+09, got -1",
        ),
        ("channels = 6", "channels = 100000", "key 'memory.dram.channels' must be between 1 and 1,024"),
        ("overlap_loss = 0.15", "overlap_loss = 1.5", "key 'pipeline.overlap_loss' must be between 0 and 1, got 1.5"),
        (
            "unpack_bytes_per_cycle = 59.5",
            "unpack_bytes_per_cycle = 0",
            "key 'pipeline.unpack_bytes_per_cycle' must be positive, got 0",
        ),
        ("launch_ns = 928", "launch_ns = -5", "key 'pipeline.launch_ns' must be between 0 and 1e+09, got -5"),
        (
            "sfpu_cycles_per_tile = { default",
            "sfpu_cycles_per_tile = { bogus = 3, default",
            "key 'vector.sfpu_cycles_per_tile.bogus' is no kind of the vocabulary",
        ),
        ("relu = 226,", "relu = 0,", "key 'vector.sfpu_cycles_per_tile.relu' must be positive, got 0"),
        (
            "core_bytes_per_cycle = 22",
            "core_bytes_per_cycle = 1e40",
            "key 'memory.dram.core_bytes_per_cycle' must be between",
        ),
        ("count = 2", "count = 1000", "key 'noc.count' must be between 1 and 64"),
        ("hop_cycles = 9", "hop_cycles = 10000000", "key 'noc.hop_cycles' must be between 1 and 1,000,000"),
        ("host_ns = 100_000", "host_ns = 1e300", "key 'dispatch.host_ns' must be between 0 and 1e+09, got 1e+300"),
        # a 400-digit integer: float() of it overflows, so it is compared first
        ("clock_hz = 1.0e9", "clock_hz = 1" + "0" * 400, "key 'clock_hz' must be between 1e+06 and 1e+10, got 1000"),
        ('name = "wormhole_n150"', 'name = "' + "n" * 300 + '"', "key 'name' must have 1 to 256 characters, got 300"),
        (
            'description = "Tenstorrent',
            'description = { a = 1 }\nx = "Tenstorrent',
            "key 'description' must be str, got {'a': 1}",
        ),
        (
            "[memory.l1]",
            '[memory."l1 \\n 2"]',
            "key 'memory.l1 \\n 2': a memory's name is 1 to 32 letters, digits, _ or -",
        ),
        ("[memory.dram]", "[memory." + "d" * 40 + "]", f"key 'memory.{'d' * 40}': a memory's name is 1 to 32 letters"),
        ('bf16 = "hifi2"', 'bogus = 3, bf16 = "hifi2"', "key 'matrix.default_fidelity.bogus' is not a dtype"),
    ],
)
def test_numbers_outside_their_documented_range_are_refused(tmp_path, old, new, message):
    path = _write(tmp_path, _edit(old, new))
    with pytest.raises(TargetError) as err:
        load_target(path)
    assert str(err.value).startswith(f"{path}: {message}") and "\n" not in str(err.value)
    assert len(str(err.value)) < 400  # a huge value is quoted cut


@pytest.mark.parametrize(
    "extra, message",
    [
        ("x = " + "[" * 100_000 + "]" * 100_000, "not valid TOML: arrays or tables nested too deeply"),
        ("x = " + "{a=" * 100_000 + "1" + "}" * 100_000, "not valid TOML: arrays or tables nested too deeply"),
        ("x = " + "9" * 5000, "not valid TOML: a number with too many digits"),
        # tomllib's work grows with the square of a key's parts: 20,000 of them took 11 s
        ("a." * 20_000 + "b = 1", DEEP_KEY),
        ("[" + "a ." * 20_000 + "b]", DEEP_KEY),
        ("[[" + "'a'." * 20_000 + "b]]", DEEP_KEY),
        ("x = {" + '"a".' * 20_000 + "b = 1}", DEEP_KEY),
        ('s = """ " "" """"\n' + "a." * 40 + "b = 1", DEEP_KEY),  # after a string that ends in a quote
    ],
)
def test_deep_nesting_and_endless_digits_are_one_line(tmp_path, extra, message):
    path = _write(tmp_path, SOURCE + "\n" + extra + "\n")
    with pytest.raises(TargetError) as err:
        load_target(path)
    assert str(err.value) == f"{path}: {message}"


def test_only_keys_count_as_dotted_parts():
    """Dots in strings, comments and numbers are no key's; a key of the most parts allowed is read."""
    many = ".".join(["a"] * 100)
    text = "\n".join(
        [
            f'basic = "{many}" # {many}',
            f"literal = '{many}'",
            f'multi = """\n{many}\n"" {many} \\""" {many}"""',
            "raw = '''\n" + many + "'''",
            "floats = [" + ", ".join(["1.5"] * 100) + "]",
            "when = 1979-05-27T07:32:00.999999-07:00",
            ".".join(f"k{i}" for i in range(MAX_KEY_PARTS)) + " = 1",
        ]
    )
    data = parse_toml(text, "x.toml")
    assert data["basic"] == many and len(data["floats"]) == 100
    with pytest.raises(TargetError, match=f"x.toml: {DEEP_KEY}"):
        parse_toml(text + "\n" + ".".join(f"j{i}" for i in range(MAX_KEY_PARTS + 1)) + " = 1", "x.toml")
    # where a string never ends TOML stops, and so does the count (each such string read to the
    # end of the text again made it quadratic: 224 KB of them took minutes)
    with pytest.raises(TargetError, match="x.toml: not valid TOML"):
        parse_toml('\\"""x"\n' * 5_000 + "a." * 40 + "b = 1", "x.toml")


def test_a_file_over_1_mib_is_refused_unread(tmp_path):
    path = _write(tmp_path, SOURCE + "#" * (1 << 20))
    with pytest.raises(TargetError, match=re.escape(path) + ": more than 1024 KiB: not a target file"):
        load_target(path)
    with pytest.raises(TargetError, match="stored.toml: more than 1024 KiB"):
        load_target("stored.toml", SOURCE + "#" * (1 << 20))  # a stored run's copy of a file


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_builtin_target_is_inside_the_limits(name):
    from tilescope.compiler.targets.chip_file import LIMITS, MAX_GRID

    t = load_target(name)
    assert max(t.grid) <= MAX_GRID
    low, high = LIMITS["clock_hz"]
    assert low <= t.clock_hz <= high
    for memory in t.memories.values():
        assert LIMITS["memory.<name>.bytes_per_s"][0] <= memory.bytes_per_s <= LIMITS["memory.<name>.bytes_per_s"][1]
