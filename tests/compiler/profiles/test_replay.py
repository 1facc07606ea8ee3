"""Replaying a measured report: every family of ops builds, is laid out as recorded, simulated, and
named as the measured run names it; what cannot be built is listed, never guessed."""

from __future__ import annotations

import pytest

from tilescope.compiler.errors import TargetError
from tilescope.compiler.profiles import replay as replay_module
from tilescope.compiler.profiles.naming import op_names
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import replay

from .replay_reports import fidelity_config, op, report_text, shard_config, t, window

HEIGHT_32 = shard_config("height_sharded", (8, 4), (128, 64))  # 4096 rows over 32 cores
UNARY_RELU = "{BasicUnaryWithParam<float>(op_type=UnaryOpType::RELU;param={})}"

# one op of every family the replay builds: (code, its kind, the row)
FAMILIES = [
    (
        "MatmulDeviceOperation",
        "matmul",
        op(
            "MatmulDeviceOperation",
            [t(1, 1, 256, 512), t(1, 1, 512, 1024, dtype="bfp8")],
            [t(1, 1, 256, 1024)],
            cores=64,
            fidelity="HiFi2",
            compute_kernel_config=fidelity_config("HiFi2"),
        ),
    ),
    (
        "BinaryNgDeviceOperation",
        "add",
        op(
            "BinaryNgDeviceOperation",
            [t(1, 1, 64, 128), t(1, 1, 1, 128)],
            [t(1, 1, 64, 128)],
            binary_op_type="BinaryOpType::ADD",
        ),
    ),
    (
        "UnaryDeviceOperation",
        "relu",
        op("UnaryDeviceOperation", [t(1, 1, 64, 128)], [t(1, 1, 64, 128)], op_chain=UNARY_RELU),
    ),
    (
        "TypecastDeviceOperation",
        "typecast",
        op("TypecastDeviceOperation", [t(1, 1, 64, 128)], [t(1, 1, 64, 128, dtype="bfp8")]),
    ),
    (
        "LayerNormDeviceOperation",
        "layernorm",
        op(
            "LayerNormDeviceOperation",
            [t(1, 1, 64, 768), t(1, 1, 24, 32, layout="row_major"), t(1, 1, 24, 32, layout="row_major")],
            [t(1, 1, 64, 768)],
        ),
    ),
    ("SoftmaxDeviceOperation", "softmax", op("SoftmaxDeviceOperation", [t(1, 12, 64, 64)], [t(1, 12, 64, 64)])),
    (
        "GroupNormDeviceOperation",
        "groupnorm",
        op(
            "GroupNormDeviceOperation",
            [t(1, 1, 4096, 64, memory="l1_height_sharded"), t(1, 1, 2, 32, layout="row_major")],
            [t(1, 1, 4096, 64, memory="l1_height_sharded")],
            output_mem_config=HEIGHT_32,
            num_groups="8",
        ),
    ),
    (
        "ReshapeDeviceOperation",
        "reshape",
        op("ReshapeDeviceOperation", [t(1, 1, 64, 128, layout="row_major")], [t(1, 8, 8, 128, layout="row_major")]),
    ),
    ("PermuteDeviceOperation", "permute", op("PermuteDeviceOperation", [t(1, 64, 32, 16)], [t(1, 16, 64, 32)])),
    ("TransposeDeviceOperation", "transpose", op("TransposeDeviceOperation", [t(1, 1, 64, 128)], [t(1, 1, 128, 64)])),
    (
        "TilizeWithValPaddingDeviceOperation",
        "to_layout",
        op("TilizeWithValPaddingDeviceOperation", [t(1, 1, 50, 3, layout="row_major")], [t(1, 1, 50, 3)]),
    ),
    (
        "InterleavedToShardedDeviceOperation",
        "to_layout",
        op(
            "InterleavedToShardedDeviceOperation",
            [t(1, 1, 4096, 64)],
            [t(1, 1, 4096, 64, memory="l1_height_sharded")],
            output_mem_config=HEIGHT_32,
        ),
    ),
    (
        "ShardedToInterleavedDeviceOperation",
        "to_layout",
        op("ShardedToInterleavedDeviceOperation", [t(1, 1, 4096, 64, memory="l1_height_sharded")], [t(1, 1, 4096, 64)]),
    ),
    ("SliceDeviceOperation", "slice", op("SliceDeviceOperation", [t(1, 1, 64, 128)], [t(1, 1, 32, 128)])),
    (
        "ConcatDeviceOperation",
        "concat",
        op("ConcatDeviceOperation", [t(1, 1, 64, 64), t(1, 1, 64, 64)], [t(1, 1, 64, 128)], dim="3"),
    ),
    (
        "SliceWriteDeviceOperation",
        "update_cache",
        op("SliceWriteDeviceOperation", [t(1, 1, 32, 64), t(1, 4, 32, 64)], [t(1, 4, 32, 64)]),
    ),
    (
        "EmbeddingsDeviceOperation",
        "embedding",
        op(
            "EmbeddingsDeviceOperation",
            [t(1, 1, 1, 77, layout="row_major", dtype="ui32"), t(1, 1, 49408, 512, layout="row_major")],
            [t(1, 1, 77, 512)],
        ),
    ),
    ("FastReduceNCDeviceOperation", "sum", op("FastReduceNCDeviceOperation", [t(8, 1, 64, 64)], [t(1, 1, 64, 64)])),
    ("AccumulationDeviceOperation", "cumsum", op("AccumulationDeviceOperation", [t(4, 1, 64, 64)], [t(4, 1, 64, 64)])),
    (
        "GridSampleOperation",
        "grid_sample",
        op(
            "GridSampleOperation",
            [t(1, 48, 160, 256, layout="row_major"), t(1, 1, 1408, 42, layout="row_major")],
            [t(1, 1, 1408, 1792, layout="row_major")],
        ),
    ),
    (
        "HaloDeviceOperation",
        "halo",
        op(
            "HaloDeviceOperation",
            [t(1, 1, 4096, 16, layout="row_major", memory="l1_height_sharded")],
            [t(1, 1, 4608, 16, layout="row_major", memory="l1_height_sharded")],
            output_memory_config=shard_config("height_sharded", (8, 4), (144, 16)),
        ),
    ),
    (
        "UpsampleOperation",
        "upsample",
        op("UpsampleOperation", [t(1, 8, 8, 64, layout="row_major")], [t(1, 16, 16, 64, layout="row_major")]),
    ),
    (
        "Conv2dDeviceOperation",
        "conv2d",
        op(
            "Conv2dDeviceOperation",
            [t(1, 1, 4608, 16, layout="row_major", memory="l1_height_sharded"), t(1, 1, 144, 32, dtype="bfp8")],
            [t(1, 1, 4096, 32, memory="l1_height_sharded")],
            fidelity="LoFi",
            sliding_window_config=window((64, 64), 3, 1, 1),
            input_tensor_shape="{1; 64; 64; 16}",
            output_channels="32",
            groups="1",
            memory_config=HEIGHT_32.replace("{128; 64}", "{128; 32}"),
        ),
    ),
    (
        "Pool2D",
        "max_pool2d",
        op(
            "Pool2D",
            [t(1, 1, 4096, 32, layout="row_major")],
            [t(1, 1, 1024, 32)],
            sliding_window_config_=window((64, 64), 2, 2, 0),
            pool_type_="Pool2DType::MAX_POOL2D",
        ),
    ),
    (
        "RotaryEmbeddingLlamaDeviceOperation",
        "rotary_embedding",
        op(
            "RotaryEmbeddingLlamaDeviceOperation",
            [t(1, 8, 128, 64), t(1, 1, 128, 64), t(1, 1, 128, 64), t(1, 1, 32, 32)],
            [t(1, 8, 128, 64)],
        ),
    ),
    (
        "SDPAOperation",
        "scaled_dot_product_attention",
        op(
            "SDPAOperation",
            [t(1, 8, 256, 64), t(1, 1, 256, 64), t(1, 1, 256, 64)],
            [t(1, 8, 256, 64)],
            fidelity="HiFi2",
            is_causal="true",
        ),
    ),
]


@pytest.fixture(scope="module")
def families():
    report = read_ops_report(report_text(*(row for _, _, row in FAMILIES)), "families.csv")
    return report, replay(report)


@pytest.mark.parametrize("index", range(len(FAMILIES)), ids=[code for code, _, _ in FAMILIES])
def test_each_family_builds_laid_out_as_the_report_recorded(families, index):
    report, replayed = families
    code, kind, _ = FAMILIES[index]
    got = replayed.ops[index]
    assert (got.op.op_code, got.kind, got.reason) == (code, kind, "")
    timing = got.timing
    assert timing is not None and timing.duration_ns > 0, got.notes
    assert timing.kind == kind and timing.device == 0
    measured = report.ops[index].outputs[0]
    out = next(u for u in timing.tensors if u.role == "out0")
    assert (out.memory, out.memory_layout, out.layout, out.dtype) == (
        measured.memory,
        measured.memory_layout,
        measured.layout,
        measured.dtype,
    ), got.notes
    assert not any(note.startswith("result") for note in got.notes), got.notes


def test_the_report_s_fidelity_and_dtypes_reach_the_matrix_engine(families):
    _, replayed = families
    matmul = replayed.ops[0].timing
    assert matmul.fidelity == "hifi2" and matmul.grid == "8x8"
    assert [u.dtype for u in matmul.tensors] == ["bf16", "bfp8", "bf16"]
    conv = replayed.ops[[code for code, _, _ in FAMILIES].index("Conv2dDeviceOperation")].timing
    assert conv.fidelity == "lofi" and conv.flops == 2 * 64 * 64 * 32 * 16 * 9


def test_names_align_with_the_measured_run_and_ops_lie_back_to_back(families):
    report, replayed = families
    assert [r.name for r in replayed.ops] == list(op_names(report))
    assert replayed.ops[1].name == "BinaryNgDeviceOperation#1"
    timings = replayed.timings
    assert timings[0].start_ns == 0
    assert all(b.start_ns == pytest.approx(a.end_ns) for a, b in zip(timings, timings[1:]))


def test_a_loc_names_the_op_and_its_replay():
    columns = ["LOC", "OP CODE", "DEVICE ARCH", "DEVICE KERNEL DURATION [ns]", *_operand_columns()]
    rows = [
        {"LOC": f"layer.{i}.relu", **op("UnaryDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)])} for i in (0, 1)
    ]
    report = read_ops_report(report_text(*rows, columns=columns), "loc.csv")
    assert [r.name for r in replay(report).ops] == ["layer.0.relu", "layer.1.relu"]


def _operand_columns() -> list[str]:
    from .replay_reports import COLUMNS

    return [c for c in COLUMNS if c.startswith(("INPUT_0", "OUTPUT_0"))]


def test_uneven_shards_replay_as_ttnn_ran_them():
    """5,280 tile rows over 64 cores: 83 rows a core, the last 51."""
    sharded = shard_config("height_sharded", (8, 8), (2656, 64))
    rows = 5280 * 32
    report = read_ops_report(
        report_text(
            op(
                "UnaryDeviceOperation",
                [t(1, 1, rows, 64, memory="l1_height_sharded")],
                [t(1, 1, rows, 64, memory="l1_height_sharded")],
                cores=64,
                op_chain=UNARY_RELU,
                output_mem_config=sharded,
            )
        ),
        "uneven.csv",
    )
    (got,) = replay(report).ops
    assert got.notes == () and got.timing.grid == "8x8"
    assert [(u.memory, u.memory_layout, u.grid) for u in got.timing.tensors] == [("l1", "height_sharded", "8x8")] * 2


def test_a_shard_spec_with_more_cores_than_shards_runs_on_the_cores_holding_them():
    """OFT's 2,304 rows in shards of 128 over a 4x5 grid: 18 full shards, two cores left empty."""
    sharded = shard_config("height_sharded", (4, 5), (128, 1792))
    x = t(1, 1, 2304, 1792, memory="l1_height_sharded")
    report = read_ops_report(
        report_text(op("BinaryNgDeviceOperation", [x, x], [x], cores=20, output_mem_config=sharded)), "even.csv"
    )
    (got,) = replay(report).ops
    assert got.timing.grid == "3x6"  # 18 cores of 4 tile rows each: even shards


def test_op_codes_with_no_builder_are_listed_with_their_share_never_guessed():
    relu = op("UnaryDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)], ns=600, op_chain=UNARY_RELU)
    unknown = op("FrobnicateDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)], ns=300)
    odd = op(
        "UnaryDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)], ns=100, op_chain="{(op_type=UnaryOpType::FROB)}"
    )
    report = read_ops_report(report_text(relu, unknown, unknown, odd), "unknown.csv")
    replayed = replay(report)
    assert [r.timing is None for r in replayed.ops] == [False, True, True, True]
    c = replayed.coverage
    assert (c.ops, c.built_ops, c.device_ns, c.built_ns) == (4, 1, 1300, 600)
    assert c.share == pytest.approx(600 / 1300)
    first, second = c.unbuilt
    assert (first.op_code, first.count, first.device_ns) == ("FrobnicateDeviceOperation", 2, 600)
    assert first.share == pytest.approx(600 / 1300) and "has no kind" in first.reason
    assert (second.op_code, second.count, second.reason) == ("UnaryDeviceOperation", 1, "no builder for kind 'frob'")
    assert [t.name for t in replayed.timings] == ["UnaryDeviceOperation#1"]


def test_identical_ops_are_compiled_once(monkeypatch):
    made = []
    predict = replay_module._predict
    monkeypatch.setattr(replay_module, "_predict", lambda *args: made.append(args[0].op_code) or predict(*args))
    rows = [op("UnaryDeviceOperation", [t(1, 1, 64, 64)], [t(1, 1, 64, 64)], op_chain=UNARY_RELU)] * 5
    rows.append(op("UnaryDeviceOperation", [t(1, 1, 2048, 1024)], [t(1, 1, 2048, 1024)], op_chain=UNARY_RELU))
    replayed = replay(read_ops_report(report_text(*rows), "alike.csv"))
    assert made == ["UnaryDeviceOperation"] * 2
    durations = [t.duration_ns for t in replayed.timings]
    assert len(set(durations[:5])) == 1 and durations[5] > durations[0]


def test_collectives_cost_the_links_of_the_system_of_the_report_s_devices():
    gather = dict(dim="3", cluster_axis="1", num_links="2", arch="blackhole")
    rows = [
        row
        for device in range(8)
        for row in (
            op("AllGatherAsyncDeviceOperation", [t(1, 1, 3200, 384)], [t(1, 1, 3200, 1536)], device=device, **gather),
            op(
                "ReduceScatterMinimalAsyncDeviceOperation",
                [t(1, 1, 3200, 1536, memory="l1_interleaved")],
                [t(2, 1, 3200, 1536, memory="l1_interleaved"), t(1, 1, 3200, 384)],
                device=device,
                **gather,
            ),
        )
    ]
    replayed = replay(read_ops_report(report_text(*rows), "mesh.csv"))
    assert replayed.target.name == "blackhole_8xp150" and replayed.coverage.share == 1
    assert [r.timing.device for r in replayed.ops] == [d for d in range(8) for _ in range(2)]
    assert {r.name for r in replayed.ops} == {
        "AllGatherAsyncDeviceOperation#1",
        "ReduceScatterMinimalAsyncDeviceOperation#1",
    }
    for r in replayed.ops:
        # a line of 4 devices: 3 of the 4 pieces of 3200 x 1536 bf16 cross each device's link
        assert r.timing.bytes["link"] == pytest.approx(3 * 3200 * 384 * 2), r.timing.why
        assert r.timing.kind in ("all_gather", "reduce_scatter")
    assert replayed.ops[2].timing.start_ns == 0  # device 1's clock is its own
    alone = replay(read_ops_report(report_text(*rows), "mesh.csv"), "blackhole_p150")
    assert alone.warnings == (
        "mesh.csv: measured on 8 devices, replayed on blackhole_p150's 1: collectives are costed as copies",
    )
    assert alone.coverage.share == 1 and all("link" not in r.timing.bytes for r in alone.ops)
    assert alone.ops[0].notes[0] == "all_gather on one device: costed as its copy"


@pytest.mark.parametrize(
    "arch, devices, asked, expected",
    [
        ("wormhole_b0", 1, None, "wormhole_n150"),
        ("blackhole", 1, None, "blackhole_p150"),
        ("blackhole", 2, None, "blackhole_p300"),
        ("blackhole", 1, "blackhole_p150", "blackhole_p150"),
    ],
)
def test_the_target_is_the_chip_the_report_names_or_the_one_asked(arch, devices, asked, expected):
    rows = [
        op("UnaryDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)], device=d, arch=arch) for d in range(devices)
    ]
    replayed = replay(read_ops_report(report_text(*rows), "chip.csv"), asked)
    assert replayed.target.name == expected and replayed.warnings == ()


def test_a_report_replayed_on_another_chip_than_it_names_says_so(tmp_path):
    rows = [op("UnaryDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)], arch="wormhole_b0")]
    replayed = replay(read_ops_report(report_text(*rows), "wh.csv"), "blackhole_p150")
    assert replayed.target.name == "blackhole_p150" and replayed.warnings == (
        "wh.csv: measured on wormhole_b0 (wormhole_n150), replayed on blackhole_p150 as asked: "
        "a prediction for another chip, not a check of this one",
    )
    # a file calibrated from the chip the report names (its clock and grid) is that chip
    from tilescope.compiler.targets.catalog import BUILTIN_DIR

    mine = tmp_path / "my_wormhole.toml"
    mine.write_text((BUILTIN_DIR / "wormhole_n150.toml").read_text().replace('name = "wormhole_n150"', 'name = "mine"'))
    assert replay(read_ops_report(report_text(*rows), "wh.csv"), str(mine)).warnings == ()


def test_a_report_naming_no_chip_is_replayed_on_blackhole_with_a_warning_and_an_unknown_chip_is_an_error():
    rows = [op("UnaryDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)], arch="")]
    replayed = replay(read_ops_report(report_text(*rows), "blank.csv"))
    assert replayed.target.name == "blackhole_p150"
    assert replayed.warnings == (
        "blank.csv: no DEVICE ARCH in the report; replayed on blackhole_p150 (give --target to choose)",
    )
    rows = [op("UnaryDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)], arch="grayskull")]
    with pytest.raises(
        TargetError, match=r"^odd\.csv: DEVICE ARCH 'grayskull' is no chip tilescope knows; give --target$"
    ):
        replay(read_ops_report(report_text(*rows), "odd.csv"))


def test_an_op_the_compiler_cannot_take_is_listed_with_what_it_said():
    huge = op("UnaryDeviceOperation", [t(1 << 20, 1 << 20, 1 << 20, 64)], [t(1 << 20, 1 << 20, 1 << 20, 64)])
    (got,) = replay(read_ops_report(report_text(huge), "huge.csv")).ops
    assert got.timing is None and got.reason.startswith("the compiler could not take it: ModelLoadError:")
    assert "\n" not in got.reason and len(got.reason) < 300


def test_a_report_tilescope_exported_names_its_ops_by_kind_and_replays():
    row = op("relu", [t(1, 1, 64, 64)], [t(1, 1, 64, 64)])
    (got,) = replay(read_ops_report(report_text(row), "exported.csv")).ops
    assert (got.kind, got.timing.kind) == ("relu", "relu")


HOSTILE = [
    op("Pool2D", [t(1, 1, 64, 32)], [t(1, 1, 16, 32)], sliding_window_config_=window((8, 8), 2, 0, 0)),
    op("Pool2D", [t(1, 1, 64, 32)], [t(1, 1, 16, 32)], sliding_window_config_="SlidingWindowConfig(batch_size=1)"),
    op(
        "Conv2dDeviceOperation",
        [t(1, 1, 64, 3)],
        [t(1, 1, 64, 8)],
        sliding_window_config=window((999999, 999999), 3, 1, 1),
    ),
    op("AllGatherAsyncDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 96)], dim="9", cluster_axis="7"),
    op("MatmulDeviceOperation", [t(1, 1, 32, 64), t(1, 1, 32, 64)], [t(1, 1, 32, 64)]),
    op("SDPAOperation", [t(1, 8, 32, 64)], [t(1, 8, 32, 64)]),
    op("UnaryDeviceOperation", [t(1, 0, 32, 32)], [t(1, 0, 32, 32)]),
    op("ConcatDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32, memory="l1_block_sharded")], cores=9999),
    op("GroupNorm", [t(1, 1, 1024, 64)], [t(1, 1, 1024, 64)], num_groups="0"),
    op("GroupNorm", [t(1, 1, 1024, 64)], [t(1, 1, 1024, 64)], num_groups="99999999999999"),
    op("PermuteDeviceOperation", [t(1, 2, 64, 64)], [t(2, 1, 64, 64)], dims="SmallVector([1; 1; 2; 3])"),
    op("PermuteDeviceOperation", [t(1, 2, 64, 64)], [t(2, 1, 64, 64)], dims="SmallVector()"),
    op("SDPAOperation", [t(1, 8, 32, 64), t(1, 8, 32, 64), t(1, 8, 32, 64)], [t(1, 8, 32, 64)], ring_size="-9"),
]


def test_hostile_rows_are_built_or_listed_with_one_line_each():
    replayed = replay(read_ops_report(report_text(*HOSTILE), "hostile.csv"))
    assert len(replayed.ops) == len(HOSTILE)
    for got in replayed.ops:
        assert (got.timing is None) == bool(got.reason), got
        assert "\n" not in got.reason and len(got.reason) < 300
    reasons = [got.reason for got in replayed.ops]
    assert reasons[0] == "sliding window (2, 2) over 8x8 gives no output"
    assert reasons[1] == "no sliding window input in the attributes"
    assert reasons[4] == "matmul operands (1, 1, 32, 64) and (1, 1, 32, 64) do not share K"
    assert reasons[5] == "attention needs queries, keys and values of four dimensions"
    assert reasons[6] == "no operand holds data"
    assert reasons[8] == "num_groups '0' is not a positive integer"
    assert reasons[9] == "num_groups '99999999999999' is not a positive integer"
    assert reasons[10] == "dims 'SmallVector([1; 1; 2; 3])' is not a permutation of at most 8 dims"
    assert reasons[11] == "dims 'SmallVector()' is not a permutation of at most 8 dims"
    assert replayed.ops[12].timing is not None  # a ring of no devices: costed as plain attention
