"""tt-metal's ops perf report read into typed records: every field a row holds, whatever columns the
report's version writes; rows that cannot be read named with their line and reason; files that are
no report refused in one line; and the seven reports measured on hardware read whole."""

from __future__ import annotations

import csv
import io
import math

import pytest

from tilescope.compiler.profiles import ops_report
from tilescope.compiler.profiles.attributes import memory_of, parse_attributes, shard_spec
from tilescope.compiler.profiles.naming import op_names
from tilescope.compiler.profiles.op_codes import kind_of
from tilescope.compiler.profiles.ops_report import ReportError, read_ops_report
from tilescope.compiler.profiles.report import ShardSpec
from tests.compiler.profiles.reports import COMPUTE, DURATION, PROGRAM, add, matmul, report_text, signpost

SHIPPED = {  # file: (rows, device ops, signposts, devices)
    "wh_clip_encoder_2.csv": (1872, 1872, 0, 1),
    "bh_64_clip_encoder_1.csv": (660, 660, 0, 1),
    "bh_p100_dlv3.csv": (387, 387, 0, 1),
    "bh20_oft.csv": (1621, 1571, 50, 1),
    "bh20_oft_integral_image_trace.csv": (27, 21, 6, 1),
    "bh_8xp150_deepseek_v3_d_p.csv": (208, 208, 0, 8),
    "ops_perf_results_2025_09_18_11_39_20.csv": (671, 621, 50, 1),
}


def test_a_row_reads_into_every_field_of_its_op():
    report = read_ops_report(report_text(matmul(**{"GLOBAL CALL COUNT": "7", "DEVICE ID": "3"})), "r.csv")
    (op,) = report.ops
    assert (report.source, report.format, report.rows, report.skipped) == ("r.csv", "ops-perf-csv", 1, ())
    assert (op.line, op.op_code, op.op_type, op.call, op.device, op.arch) == (
        2,
        "MatmulDeviceOperation",
        "tt_dnn_device",
        7,
        3,
        "wormhole_b0",
    )
    assert (op.cores, op.kernel_ns, op.op_to_op_ns, op.fidelity) == (32, 1000.0, 500.0, "hifi2")  # from its config
    a, b = op.inputs
    assert (a.shape, a.padded, a.dtype, a.layout, a.memory, a.memory_layout) == (
        (1, 1, 64, 128),
        (1, 1, 64, 128),
        "bf16",
        "tile",
        "dram",
        "interleaved",
    )
    assert b.dtype == "bfp8"
    (out,) = op.outputs
    assert (out.memory, out.memory_layout) == ("l1", "height_sharded")
    assert op.output_shard == ShardSpec(32, (64, 128), "row_major")  # an 8x4 grid of cores
    assert op.program_config == PROGRAM and op.attributes["compute_kernel_config"] == COMPUTE


def test_a_shape_is_padded_then_logical_as_written():
    (op,) = read_ops_report(report_text(add())).ops
    assert op.inputs[0].padded == (1, 1, 32, 64) and op.inputs[0].shape == (1, 1, 19, 64)
    assert (op.inputs[0].elements, op.inputs[0].padded_elements) == (19 * 64, 32 * 64)


def test_the_math_fidelity_column_wins_over_the_compute_config():
    (op,) = read_ops_report(report_text(matmul(**{"MATH FIDELITY": "LoFi"}))).ops
    assert op.fidelity == "lofi"


def test_only_the_op_code_and_its_duration_are_needed():
    text = "OP CODE,DEVICE KERNEL DURATION [ns]\nSoftmaxDeviceOperation,42\n\nReshapeDeviceOperation,7.5\n"
    report = read_ops_report(text)
    assert [(op.op_code, op.kernel_ns, op.device, op.inputs) for op in report.ops] == [
        ("SoftmaxDeviceOperation", 42.0, 0, ()),
        ("ReshapeDeviceOperation", 7.5, 0, ()),
    ]
    assert report.rows == 2 and report.device_ns == 49.5  # the blank line is no row


def test_signposts_open_regions_and_are_no_ops():
    text = report_text(add(), signpost("encoder"), add(), add(), signpost("decoder"), add())
    report = read_ops_report(text)
    assert [s.name for s in report.signposts] == ["encoder", "decoder"]
    assert [op.region for op in report.ops] == ["", "encoder", "encoder", "decoder"]
    assert report.rows == 6 and len(report.ops) == 4


def test_host_only_rows_are_kept_apart_and_need_no_duration():
    host = add(**{"OP CODE": "torch.nn.functional.pad", "OP TYPE": "tt_dnn_cpu", DURATION: ""})
    report = read_ops_report(report_text(add(), host, add()))
    assert [op.op_code for op in report.host_ops] == ["torch.nn.functional.pad"]
    assert len(report.ops) == 2 and report.device_ns == 400.0  # not device time
    assert report.skipped == ()


@pytest.mark.parametrize(
    "column, value, reason",
    [
        (DURATION, "", "no DEVICE KERNEL DURATION [ns]"),
        (DURATION, "-3", "DEVICE KERNEL DURATION [ns] '-3' is not a time in ns"),
        (DURATION, "nan", "'nan' is not a time in ns"),
        (DURATION, "1e16", "'1e16' is not a time in ns (0 to 1e+15)"),
        ("OP TO OP LATENCY [ns]", "soon", "OP TO OP LATENCY [ns] 'soon' is not a time in ns"),
        ("CORE COUNT", "0", "CORE COUNT '0' is not a whole number (1 to 65,536)"),
        ("CORE COUNT", "8.5", "CORE COUNT '8.5' is not a whole number"),
        ("DEVICE ID", "-1", "DEVICE ID '-1' is not a whole number"),
        ("INPUT_0_Y_PAD[LOGICAL]", "32(19)", "INPUT_0_shape '32(19)' is not padded[logical]"),
        ("OUTPUT_0_MEMORY", "SOMEWHERE", "OUTPUT_0_MEMORY 'SOMEWHERE' is not a memory"),
        ("OP CODE", "", "no OP CODE"),
        ("OP CODE", "X" * 200, "is longer than 128 characters"),
        ("OP CODE", "Matmul\nOp", "OP CODE 'Matmul\\nOp' has a character that is not printable"),
        ("ATTRIBUTES", "{'a': 'b\0'}", "a field has a NUL character"),
    ],
)
def test_a_row_that_cannot_be_read_is_skipped_with_its_line_and_reason(column, value, reason):
    report = read_ops_report(report_text(add(), add(**{column: value}), add()), "r.csv")
    (skipped,) = report.skipped
    assert skipped.startswith("r.csv:3: ") and reason in skipped, skipped
    assert [op.line for op in report.ops] == [2, 4] and report.rows == 3


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty file"),
        ("\n\n", "empty file"),
        ("OP CODE,DURATION\nx,1\n", "no 'DEVICE KERNEL DURATION [ns]' column"),
        ("DEVICE KERNEL DURATION [ns]\n1\n", "no 'OP CODE' column"),
        ("OP CODE;DEVICE KERNEL DURATION [ns]\nx;1\n", "columns must be separated by commas"),
        ("OP CODE,OP CODE,DEVICE KERNEL DURATION [ns]\n", "column 'OP CODE' appears 2 times"),
        ('OP CODE,DEVICE KERNEL DURATION [ns]\n"x' + "y" * 200_000 + '",1\n', "not a CSV ops perf report"),
    ],
)
def test_a_file_that_is_no_report_is_one_line(text, reason):
    with pytest.raises(ReportError) as err:
        read_ops_report(text, "bad.csv")
    message = str(err.value)
    assert message.startswith("bad.csv: ") and reason in message and "\n" not in message


def test_rows_past_the_limit_are_refused(monkeypatch):
    monkeypatch.setattr(ops_report, "MAX_ROWS", 3)
    assert len(read_ops_report(report_text(add(), add(), add())).ops) == 3
    with pytest.raises(ReportError, match="more than 3 rows; split the report"):
        read_ops_report(report_text(add(), add(), add(), add()))


def test_a_report_cut_inside_a_row_is_refused_whole():
    text = report_text(add(), add(**{DURATION: "3038"}))
    cut = text[: text.rindex("3038") + 2]  # a copy that failed inside a number: 30 would be read
    with pytest.raises(ReportError) as err:
        read_ops_report(cut, "cut.csv")
    assert str(err.value).startswith("cut.csv:3: the file ends inside this row (") and "cut short" in str(err.value)
    # cut at a line's end, it is a shorter report; a last line without its line end is whole
    assert len(read_ops_report(text[: text.index("\n", text.index("\n") + 1) + 1]).ops) == 1
    assert len(read_ops_report(text.rstrip("\n")).ops) == 2


def test_a_byte_order_mark_is_not_part_of_the_first_column():
    assert read_ops_report("\ufeff" + report_text(add())).ops[0].op_code == "BinaryNgDeviceOperation"


def test_ops_are_placed_on_their_device_clock_from_its_cycles():
    """A device's clock rate is what its cycles over its firmware times say (1 GHz here): each op
    starts at its first firmware cycle, counted from the device's first; each device on its own."""

    def timed(device: str, start: int, end: int) -> dict:
        cycles = {"DEVICE FW START CYCLE": str(start), "DEVICE FW END CYCLE": str(end)}
        return add(**{"DEVICE ID": device, "DEVICE FW DURATION [ns]": str(end - start), **cycles})

    text = report_text(timed("0", 5000, 5400), timed("1", 900, 1000), timed("0", 7000, 7300), timed("1", 1500, 1600))
    report = read_ops_report(text)
    assert [(op.device, op.device_start_ns) for op in report.ops] == [(0, 0.0), (1, 0.0), (0, 2000.0), (1, 600.0)]
    assert report.devices == (0, 1) and [op.line for op in report.device_ops(1)] == [3, 5]


def test_ops_without_cycles_have_no_device_start():
    assert read_ops_report(report_text(add())).ops[0].device_start_ns is None


def test_the_chip_is_the_one_most_rows_name():
    rows = [add(**{"DEVICE ARCH": arch}) for arch in ("blackhole", "blackhole", "wormhole_b0", "")]
    assert read_ops_report(report_text(*rows)).arch == "blackhole"
    assert read_ops_report(report_text(add())).arch == ""


# --- ATTRIBUTES, op codes and names ----------------------------------------------------------------


def test_attributes_are_read_as_text_and_nothing_is_evaluated():
    assert parse_attributes("{'a': '1'; 'b': 'x; y'}") == {"a": "1", "b": "x; y"}
    assert parse_attributes("None") == parse_attributes("") == {}
    assert parse_attributes("{'__import__(\"os\")': 'os.system(\"x\")'}") == {'__import__("os")': 'os.system("x")'}


def test_a_shard_spec_counts_the_cores_of_every_range_of_its_grid():
    config = (
        "MemoryConfig(memory_layout=TensorMemoryLayout::BLOCK_SHARDED;buffer_type=BufferType::L1;shard_spec="
        "ShardSpec(grid={[(x=0;y=0) - (x=7;y=6)]; [(x=0;y=7) - (x=3;y=7)]};shape={5280; 32};"
        "orientation=ShardOrientation::COL_MAJOR))"
    )
    assert shard_spec(config) == ShardSpec(60, (5280, 32), "col_major")
    assert memory_of(config) == ("l1", "block_sharded")
    assert shard_spec("MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED;shard_spec=std::nullopt)") is None


@pytest.mark.parametrize(
    "code, attributes, kind",
    [
        ("MatmulDeviceOperation", {}, "matmul"),
        ("BinaryNgDeviceOperation", {"binary_op_type": "BinaryOpType::MUL"}, "multiply"),
        ("BinaryNgDeviceOperation", {}, "add"),
        ("UnaryDeviceOperation", {"op_chain": "{BasicUnaryWithParam<float>(op_type=UnaryOpType::GELU)}"}, "gelu"),
        ("AllGatherAsyncDeviceOperation", {}, "all_gather"),
        ("SomethingNewDeviceOperation", {}, ""),
    ],
)
def test_op_codes_are_kinds_of_the_vocabulary(code, attributes, kind):
    assert kind_of(code, attributes) == kind


def test_ops_are_named_by_loc_else_by_code_and_count_on_their_device():
    rows = [add(**{"DEVICE ID": d}) for d in "0101"] + [matmul(), add(**{"LOC": 'loc("x.y")'})]
    report = read_ops_report(report_text(*rows, columns=[*report_text(add()).splitlines()[0].split(","), "LOC"]))
    assert op_names(report) == (
        "BinaryNgDeviceOperation#1",
        "BinaryNgDeviceOperation#1",
        "BinaryNgDeviceOperation#2",
        "BinaryNgDeviceOperation#2",
        "MatmulDeviceOperation#1",
        "x.y",
    )


# --- the reports measured on hardware ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_report_reads_whole(perf_reports, name):
    text = (perf_reports / name).read_text(encoding="utf-8-sig")
    report = read_ops_report(text, name)
    rows, device_ops, signposts, devices = SHIPPED[name]
    assert (report.rows, len(report.ops), len(report.signposts), len(report.devices)) == (
        rows,
        device_ops,
        signposts,
        devices,
    )
    assert report.skipped == () and report.host_ops == ()
    # the device time the report itself sums (as tt-perf-report does), read here with csv alone
    own = [r for r in csv.DictReader(io.StringIO(text)) if r["OP TYPE"] == "tt_dnn_device"]
    assert report.device_ns == math.fsum(float(r[DURATION]) for r in own)
    assert all(op.device_start_ns is not None for op in report.ops)  # every row has its cycles
