"""perfdb.diff.diff_runs of measured runs: a report against an edited copy of it (as a new software
version changes a model), two chips' reports of one model, a replay against its measurement, and
runs of eight devices."""

from __future__ import annotations

import pytest

from tilescope.app.workbench.runs import execute
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.perfdb.diff import OnlyOp, RunDiff, diff_runs
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.op_changes import ParamChange

from .measured_runs import REPORTS, csv_rows, csv_text, op_names, store_report

DIMS = ("W", "Z", "Y", "X")
HEADER = [
    "OP CODE",
    "OP TYPE",
    "DEVICE ID",
    "DEVICE ARCH",
    "ATTRIBUTES",
    "MATH FIDELITY",
    "CORE COUNT",
    "DEVICE KERNEL DURATION [ns]",
    *(
        f"{role}_0_{column}"
        for role in ("INPUT", "OUTPUT")
        for column in (*(f"{d}_PAD[LOGICAL]" for d in DIMS), "LAYOUT", "DATATYPE", "MEMORY")
    ),
]
MATMUL_CONFIG = "MinimalMatmulConfig(M_block_size=2;K_block_size=8;N_block_size=8)"
# one layer of an encoder: (op code, output shape); the four transposes are of q, k (alike), v and o
LAYER = (
    ("LayerNormDeviceOperation", (1, 1, 64, 768)),
    ("MinimalMatmulOp", (1, 1, 64, 768)),
    ("MinimalMatmulOp", (1, 1, 64, 768)),
    ("MinimalMatmulOp", (1, 1, 64, 768)),
    ("ReshapeDeviceOperation", (1, 64, 12, 64)),
    ("TransposeDeviceOperation", (1, 12, 64, 64)),
    ("TransposeDeviceOperation", (1, 12, 64, 64)),
    ("TransposeDeviceOperation", (1, 12, 64, 32)),
    ("TransposeDeviceOperation", (1, 64, 12, 64)),
    ("Matmul", (1, 12, 64, 64)),
    ("SoftmaxDeviceOperation", (1, 12, 64, 64)),
    ("BinaryNgDeviceOperation", (1, 1, 64, 768)),
)


def row(code: str, shape, ns: float, device: int = 0, fidelity: str = "HiFi4", layout: str = "TILE") -> list[str]:
    config = f"{{'program_config': '{MATMUL_CONFIG}'}}" if code == "MinimalMatmulOp" else ""
    memory = f"DEV_{device}_DRAM_INTERLEAVED"
    tensor = [*(str(d) for d in shape), "TILE", "BFLOAT16", memory]
    out = [*(str(d) for d in shape), layout, "BFLOAT16", memory]
    return [code, "tt_dnn_device", str(device), "blackhole", config, fidelity, "64", str(ns), *tensor, *out]


def encoder(layers: int = 4, devices: int = 1) -> list[list[str]]:
    """Rows of an encoder's layers, device by device, each op's time its own."""
    return [
        row(code, shape, 1000 + 10 * (i * len(LAYER) + k) + device, device)
        for device in range(devices)
        for i in range(layers)
        for k, (code, shape) in enumerate(LAYER)
    ]


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


def diff(sessions, a: int, b: int) -> RunDiff:
    with sessions() as session:
        return diff_runs(session, a, b)


def changed(d: RunDiff) -> dict[str, tuple[ParamChange, ...]]:
    return {op.name: op.changes for op in d.ops if op.changes}


def names_of(text: str, source: str) -> list[tuple[str, float]]:
    report = read_ops_report(text, source)
    return [(name, op.kernel_ns) for name, op in zip(op_names(report), report.ops)]


def test_an_edited_copy_names_each_change_and_nothing_else(sessions):
    rows = encoder()
    text = csv_text(HEADER, rows)
    n = len(LAYER)
    edited = [list(r) for r in rows]
    edited[n + 6] = None  # the second transpose of layer 1 (of k, alike the first but for its time)
    edited[2 * n + 11] = None  # layer 2's add
    edited[3 * n + 4][HEADER.index("OUTPUT_0_LAYOUT")] = "ROW_MAJOR"  # layer 3's reshape
    edited[2 * n + 1][HEADER.index("MATH FIDELITY")] = "LoFi"  # layer 2's first matmul
    edited.insert(11, row("TypecastDeviceOperation", (1, 1, 64, 768), 777))  # after layer 0's softmax
    a = store_report(sessions, text, "encoder.csv")
    b = store_report(sessions, csv_text(HEADER, [r for r in edited if r is not None]), "encoder_v2.csv")
    d = diff(sessions, a, b)
    names = dict(names_of(text, "encoder.csv"))
    assert d.alignment == "sequence" and d.kinds.a == d.kinds.b == "measured"
    assert d.removed == (
        OnlyOp("TransposeDeviceOperation#6", "transpose", names["TransposeDeviceOperation#6"]),
        OnlyOp("BinaryNgDeviceOperation#3", "add", names["BinaryNgDeviceOperation#3"]),
    )
    assert d.inserted == (OnlyOp("TypecastDeviceOperation#1", "typecast", 777.0),)
    assert changed(d) == {
        "ReshapeDeviceOperation#4": (ParamChange("layout", "tile", "row_major", None, 0),),
        "MinimalMatmulOp#7": (ParamChange("fidelity", "hifi4", "lofi"),),
    }
    assert len(d.ops) == len(rows) - 2 and all(op.delta_ns == 0 for op in d.ops)
    # an op after the removed transpose is b's one fewer of its code
    assert {op.name: op.b_name for op in d.ops}["TransposeDeviceOperation#7"] == "TransposeDeviceOperation#6"
    (warning,) = d.warnings
    assert warning.startswith(f"different reports: run {a} is report:encoder.csv, run {b} is report:encoder_v2.csv")
    assert warning.endswith("; ops aligned by op code in execution order")
    assert d.collectives.removed == d.collectives.inserted == () and d.moved_to_load == ()
    assert d.ops_added == -1 and d.device_delta_ns == pytest.approx(
        sum(op.ns for op in d.inserted) - sum(op.ns for op in d.removed)
    )


def test_shape_cores_and_program_config_are_changes(sessions):
    header, rows = HEADER, encoder(layers=1)
    edited = [list(r) for r in rows]
    edited[1][header.index("OUTPUT_0_Y_PAD[LOGICAL]")] = "128[100]"
    edited[2][header.index("CORE COUNT")] = "32"
    edited[3][header.index("ATTRIBUTES")] = "{'program_config': 'MinimalMatmulConfig(M_block_size=4;K_block_size=8)'}"
    a = store_report(sessions, csv_text(header, rows), "one.csv")
    b = store_report(sessions, csv_text(header, edited), "two.csv")
    assert changed(diff(sessions, a, b)) == {
        "MinimalMatmulOp#1": (ParamChange("shape", "1x1x64x768", "1x1x100x768", None, 0),),
        "MinimalMatmulOp#2": (ParamChange("cores", "64", "32"),),
        "MinimalMatmulOp#3": (
            ParamChange("config", MATMUL_CONFIG, "MinimalMatmulConfig(M_block_size=4;K_block_size=8)"),
        ),
    }


def test_a_replay_matches_its_measurement_by_name(sessions):
    text = csv_text(HEADER, encoder(layers=2))
    measured = store_report(sessions, text, "encoder.csv")
    replay = store_report(sessions, text, "encoder.csv", kind="simulated", parent_id=measured)
    d = diff(sessions, measured, replay)
    assert d.alignment == "name" and (d.kinds.a, d.kinds.b) == ("measured", "simulated")
    assert d.warnings == (f"run {replay} is a replay of measured run {measured}: predicted against measured",)
    assert len(d.ops) == 2 * len(LAYER) and d.removed == d.inserted == ()
    back = diff(sessions, replay, measured)
    assert back.warnings == d.warnings


def test_runs_of_eight_devices_are_aligned_device_by_device(sessions):
    rows = encoder(layers=2, devices=8)
    per_device = 2 * len(LAYER)
    edited = [r for i, r in enumerate(rows) if i != 3 * per_device + 5]  # device 3's first transpose
    a = store_report(sessions, csv_text(HEADER, rows), "eight.csv")
    b = store_report(sessions, csv_text(HEADER, edited), "eight_v2.csv")
    d = diff(sessions, a, b)
    assert d.removed == (OnlyOp("TransposeDeviceOperation#1 (device 3)", "transpose", 1050.0 + 3, 3),)
    assert d.inserted == () and changed(d) == {} and all(op.delta_ns == 0 for op in d.ops)
    assert len(d.ops) == 8 * per_device - 1
    assert {op.device for op in d.ops} == set(range(8))
    named = {op.name: op for op in d.ops}
    assert named["TransposeDeviceOperation#2 (device 3)"].b_name == "TransposeDeviceOperation#1 (device 3)"
    assert named["TransposeDeviceOperation#2 (device 4)"].b_name == "TransposeDeviceOperation#2 (device 4)"
    # a replay matches each device's ops by name, not all devices' ops of a name summed
    replay = store_report(sessions, csv_text(HEADER, rows), "eight.csv", kind="simulated")
    d = diff(sessions, a, replay)
    assert d.alignment == "name" and len(d.ops) == 8 * per_device
    assert all(op.delta_ns == 0 and op.a_ns < 2000 for op in d.ops)


def test_a_measured_run_against_a_simulated_model_is_aligned_by_kind(sessions, tiny_path):
    simulated = execute(sessions, tiny_path).run_id
    measured = store_report(sessions, csv_text(HEADER, encoder(layers=1)), "encoder.csv", target="wormhole_n150")
    d = diff(sessions, simulated, measured)
    assert d.alignment == "sequence"
    assert f"run {simulated} is simulated, run {measured} measured: predicted against measured" in d.warnings
    # the tiny model's two matmuls pair with two of the encoder's, by kind: simulated ops have no op code
    assert [op.kind for op in d.ops] == ["matmul", "matmul"]


def test_two_chips_reports_of_one_model_warn_that_the_chips_differ(sessions):
    wormhole, blackhole = REPORTS / "wh_clip_encoder_2.csv", REPORTS / "bh_64_clip_encoder_1.csv"
    if not (wormhole.is_file() and blackhole.is_file()):
        pytest.skip(f"the CLIP reports are not in {REPORTS}")
    a = store_report(sessions, wormhole.read_text(), wormhole.name)
    b = store_report(sessions, blackhole.read_text(), blackhole.name)
    d = diff(sessions, a, b)
    assert f"measured on different chips: run {a} on wormhole_n150, run {b} on blackhole_p150" in d.warnings
    assert d.alignment == "sequence"
    # every op is paired or named once, and the encoders' ops pair up (Blackhole's runs fewer layers)
    assert len(d.ops) + len(d.removed) == 1872 and len(d.ops) + len(d.inserted) == 660
    assert len(d.ops) > 600
    assert all(op.name.partition("#")[0] == op.b_name.partition("#")[0] for op in d.ops)


def test_a_real_report_against_an_edited_copy(sessions):
    path = REPORTS / "wh_clip_encoder_2.csv"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    text = path.read_text()
    header, rows = csv_rows(text)
    code, layout, fidelity = (header.index(c) for c in ("OP CODE", "OUTPUT_0_LAYOUT", "MATH FIDELITY"))
    names = names_of(text, path.name)
    transposes = [i for i, r in enumerate(rows) if r[code] == "TransposeDeviceOperation"]
    gone = [transposes[9], next(i for i in range(900, 1872) if rows[i][code] == "BinaryNgDeviceOperation"), 1500]
    tiled = next(i for i in range(600, 1872) if rows[i][layout] == "TILE" and i not in gone)
    matmul = next(i for i in range(1200, 1872) if rows[i][code] == "MinimalMatmulOp" and rows[i][fidelity] == "HiFi4")
    edited = [list(r) for r in rows]
    edited[tiled][layout] = "ROW_MAJOR"
    edited[matmul][fidelity] = "LoFi"
    inserted = list(rows[700])
    inserted[code] = "TypecastDeviceOperation"
    kept = [r for i, r in enumerate(edited) if i not in gone]
    kept.insert(300, inserted)
    a = store_report(sessions, text, path.name)
    b = store_report(sessions, csv_text(header, kept), "wh_clip_encoder_2_edited.csv")
    d = diff(sessions, a, b)
    assert [(op.name, op.ns) for op in d.removed] == [names[i] for i in sorted(gone)]
    assert [op.name for op in d.inserted] == ["TypecastDeviceOperation#1"]
    assert changed(d) == {
        names[tiled][0]: (ParamChange("layout", "tile", "row_major", None, 0),),
        names[matmul][0]: (ParamChange("fidelity", "hifi4", "lofi"),),
    }
    assert len(d.ops) == 1872 - 3 and all(op.delta_ns == 0 for op in d.ops)


def test_a_real_report_of_eight_devices_against_a_copy_one_device_lost_ops_of(sessions):
    path = REPORTS / "bh_8xp150_deepseek_v3_d_p.csv"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    text = path.read_text()
    header, rows = csv_rows(text)
    code, device = header.index("OP CODE"), header.index("DEVICE ID")
    names = names_of(text, path.name)
    on_five = [i for i, r in enumerate(rows) if r[device] == "5"]
    slice_op = next(i for i in on_five if rows[i][code] == "SliceDeviceOperation")
    gather = next(i for i in on_five if rows[i][code] == "AllGatherAsyncDeviceOperation")
    a = store_report(sessions, text, path.name)
    b = store_report(
        sessions, csv_text(header, [r for i, r in enumerate(rows) if i not in (slice_op, gather)]), "v2.csv"
    )
    d = diff(sessions, a, b)
    assert d.removed == (OnlyOp(f"{names[slice_op][0]} (device 5)", "slice", names[slice_op][1], 5),)
    (collective,) = d.collectives.removed
    assert (collective.name, collective.kind, collective.group) == (f"{names[gather][0]} (device 5)", "all_gather", 8)
    assert collective.ns == names[gather][1]
    assert d.inserted == d.collectives.inserted == () and changed(d) == {}
    assert len(d.ops) == len(rows) - 2 and all(op.delta_ns == 0 for op in d.ops)
    assert d.meshes.a.devices == d.meshes.b.devices == 8 and not any(w.startswith("devices") for w in d.warnings)


def test_simulated_runs_keep_matching_by_name_whatever_their_names(sessions, tiny_path):
    from .test_diff import store

    # an imported model may name its ops `add#1` (a location and a count): it is still their identity
    a = store(sessions, ("add#1", 10.0, "dram", "8x8"), ("add#2", 20.0, "dram", "8x8"))
    b = execute(sessions, tiny_path).run_id
    d = diff(sessions, a, b)
    assert d.alignment == "name" and d.ops == () and len(d.removed) == 2
