"""A measured report's ops as op records: their work from the shapes and dtypes (FLOPs by kind,
bytes by memory, the roofline on the target's peaks, L1 per core from the shard specs), their
names, kinds and places on each device's clock, and everything the report says of how they ran."""

from __future__ import annotations

import pytest

from tilescope.compiler.profiles.measured_ops import measured_kind, measured_ops
from tilescope.compiler.profiles.op_work import l1_bytes_per_core, l1_tensors, op_bytes, op_flops, op_work
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.report import ReportOp, ReportTensor
from tilescope.compiler.sim.records import TensorUse
from tilescope.compiler.targets.catalog import load_target
from tests.compiler.profiles.reports import PROGRAM, DURATION, add, attributes, matmul, report_text


def _tensor(*shape: int, dtype="bf16", memory="dram", layout="interleaved", padded=None) -> ReportTensor:
    return ReportTensor(tuple(shape), tuple(padded or shape), "tile", dtype, memory, layout)


def _op(code: str, inputs, outputs, cores=8, **attributes) -> ReportOp:
    return ReportOp(
        1, code, "tt_dnn_device", None, 0, "", "", "", cores, attributes, tuple(inputs), tuple(outputs), 1.0
    )


def test_a_matmul_counts_2mkn_over_its_batch():
    op = _op("Matmul", [_tensor(2, 3, 64, 128), _tensor(1, 1, 128, 256)], [_tensor(2, 3, 64, 256)])
    assert op_flops(op, "matmul") == 2 * (2 * 3 * 64) * 128 * 256
    transposed = _op("Matmul", [_tensor(1, 1, 128, 64), _tensor(1, 1, 128, 256)], [_tensor(1, 1, 64, 256)])
    transposed = ReportOp(**{**_fields(transposed), "attributes": {"transpose_a": "true"}})
    assert op_flops(transposed, "matmul") == 2 * 64 * 128 * 256  # K is a's rows


def _fields(op: ReportOp) -> dict:
    return {name: getattr(op, name) for name in op.__slots__}


def test_a_convolution_counts_from_its_weight_as_ttnn_or_torch_lays_it_out():
    out = _tensor(1, 1, 1024, 64)  # N*H*W rows of C_out
    prepared = _op("Conv2dDeviceOperation", [_tensor(1, 1, 4096, 3), _tensor(1, 1, 27, 64)], [out])
    torch = _op("Conv2dDeviceOperation", [_tensor(1, 3, 64, 64), _tensor(64, 3, 3, 3)], [out])
    assert op_flops(prepared, "conv2d") == op_flops(torch, "conv2d") == 2 * 1024 * 64 * 27


def test_attention_counts_its_two_matmuls_and_softmax():
    q, k = _tensor(1, 8, 128, 64), _tensor(1, 8, 256, 64)
    op = _op("SDPAOperation", [q, k, k], [_tensor(1, 8, 128, 64)])
    scores = 8 * 128 * 256
    assert op_flops(op, "scaled_dot_product_attention") == 4 * scores * 64 + 5 * scores


@pytest.mark.parametrize(
    "kind, flops",
    [("gelu", 1 * 19 * 64), ("layernorm", 8 * 19 * 64), ("sum", 19 * 64), ("reshape", 0), ("", 0)],
)
def test_other_ops_count_their_logical_elements_by_class(kind, flops):
    op = _op("X", [_tensor(1, 1, 19, 64, padded=(1, 1, 32, 64))], [_tensor(1, 1, 19, 64, padded=(1, 1, 32, 64))])
    assert op_flops(op, kind) == flops  # padding is no work


def test_bytes_are_the_padded_tensors_where_they_live(wormhole):
    a = _tensor(1, 1, 19, 64, padded=(1, 1, 32, 64))
    b = _tensor(1, 1, 32, 64, dtype="bfp8", memory="l1", layout="height_sharded")
    host = _tensor(1, 1, 32, 64, memory="system_memory")
    moved = op_bytes(_op("X", [a, b, host], [_tensor(1, 1, 32, 64, dtype="f32")]), wormhole)
    assert moved == {"dram": 32 * 64 * 2 + 32 * 64 * 4, "l1": 32 * 64 * 1.0625}


def test_the_roofline_is_the_targets_peak_at_the_fidelity_the_op_ran(wormhole):
    inputs = [_tensor(1, 1, 1024, 1024), _tensor(1, 1, 1024, 1024)]
    fast = op_work(_op("Matmul", inputs, [_tensor(1, 1, 1024, 1024)]), "matmul", wormhole)
    slow_op = ReportOp(**{**_fields(_op("Matmul", inputs, [_tensor(1, 1, 1024, 1024)])), "fidelity": "hifi4"})
    slow = op_work(slow_op, "matmul", wormhole)
    assert fast.flops == 2 * 1024**3
    assert fast.compute_ns == pytest.approx(fast.flops / wormhole.peak_flops("bf16") * 1e9)  # the fastest fidelity
    assert slow.compute_ns == pytest.approx(4 * fast.compute_ns)  # four passes at HiFi4
    assert fast.bandwidth_ns == pytest.approx(3 * 1024 * 1024 * 2 / wormhole.dram.bytes_per_s * 1e9)
    assert fast.roofline_ns == max(fast.compute_ns, fast.bandwidth_ns)
    moves = op_work(_op("ReshapeDeviceOperation", inputs[:1], inputs[:1]), "reshape", wormhole)
    assert (moves.flops, moves.compute_ns, moves.peak_flops) == (0, 0.0, 0.0) and moves.bandwidth_ns > 0


def test_l1_per_core_is_the_output_shard_and_each_tensors_share(wormhole):
    (op,) = read_ops_report(report_text(matmul())).ops  # out: 64x128 bf16 shards; ins in DRAM
    assert l1_bytes_per_core(op, wormhole) == 64 * 128 * 2
    sharded_in = _tensor(1, 1, 64, 256, memory="l1", layout="height_sharded")
    interleaved = _tensor(1, 1, 64, 256, memory="l1")
    op = _op("X", [sharded_in, interleaved], [], cores=4)
    assert [(role, held) for role, _, held in l1_tensors(op, wormhole)] == [
        ("in0", 64 * 256 * 2 / 4),  # a shard on each of its 4 cores
        ("in1", 64 * 256 * 2 / wormhole.cores),  # pages on every core's L1
    ]


def test_measured_ops_are_named_kinded_and_placed_on_their_device():
    unknown = add(**{"OP CODE": "FrobnicateDeviceOperation", "DEVICE ID": "1"})
    text = report_text(matmul(), add(), unknown, add(**{"DEVICE ID": "1"}), add())
    report = read_ops_report(text, "r.csv")
    found = measured_ops(report, load_target("wormhole_n150"))
    assert found.skipped == () and found.measured == report.ops
    ops = found.ops
    assert [(o.name, o.kind, o.op_code, o.device) for o in ops] == [
        ("MatmulDeviceOperation#1", "matmul", "MatmulDeviceOperation", 0),
        ("BinaryNgDeviceOperation#1", "add", "BinaryNgDeviceOperation", 0),
        # no kind: its code
        ("FrobnicateDeviceOperation#1", "FrobnicateDeviceOperation", "FrobnicateDeviceOperation", 1),
        ("BinaryNgDeviceOperation#1", "add", "BinaryNgDeviceOperation", 1),
        ("BinaryNgDeviceOperation#2", "add", "BinaryNgDeviceOperation", 0),
    ]
    # no device clock in this report: each device's ops back to back, their op-to-op latency between
    assert [(o.start_ns, o.duration_ns, o.dispatch_wait_ns) for o in ops] == [
        (500.0, 1000.0, 500.0),
        (1800.0, 200.0, 300.0),
        (300.0, 200.0, 300.0),
        (800.0, 200.0, 300.0),
        (2300.0, 200.0, 300.0),
    ]
    first = ops[0]
    assert (first.level, first.bound, first.fidelity, first.cores, first.config) == (
        "measured",
        "measured",
        "hifi2",
        32,
        PROGRAM,
    )
    assert first.flops == 2 * 64 * 128 * 256 and first.memory == "l1" and first.why.startswith("measured (r.csv:2)")
    assert first.tensors == (
        TensorUse("in0", "", (1, 1, 64, 128), "bf16", "dram", "interleaved", "tile", "32x32", ""),
        TensorUse("in1", "", (1, 1, 128, 256), "bfp8", "dram", "interleaved", "tile", "32x32", ""),
        TensorUse("out0", "", (1, 1, 64, 256), "bf16", "l1", "height_sharded", "tile", "32x32", ""),
    )


def test_an_op_whose_shapes_claim_more_work_than_a_run_stores_is_skipped():
    huge = ("999999999", "999999999", "999999999", "999999999")
    rows = [matmul(**{f"OUTPUT_0_{d}_PAD[LOGICAL]": v for d, v in zip("WZYX", huge)}), add()]
    found = measured_ops(read_ops_report(report_text(*rows), "r.csv"), load_target("wormhole_n150"))
    assert [o.op_code for o in found.ops] == ["BinaryNgDeviceOperation"]
    (skipped,) = found.skipped
    assert skipped.startswith("r.csv:2: MatmulDeviceOperation: its shapes give") and "2^63" in skipped


def test_a_trace_event_named_as_an_op_is_of_that_kind():
    op = ReportOp(**{**_fields(_op("aten::linear", [], [])), "track": "python / main"})
    assert measured_kind(op) == "matmul"
    assert measured_kind(ReportOp(**{**_fields(op), "op_code": "ProfilerStep#3"})) == "ProfilerStep#3"
    (csv_op,) = read_ops_report(report_text(add(**{"ATTRIBUTES": attributes(), DURATION: "1"}))).ops
    assert measured_kind(csv_op) == "add"
