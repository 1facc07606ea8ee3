"""A measured run on its own, on SQLite and PostgreSQL: a report stored with no model and no
simulated run (its records, its timeline's rows, its import's record, all or nothing), the seven
reports measured on hardware imported whole, traces stored with their threads, and every view a
simulated run has working on it."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from tilescope.app.workbench.explorer import Explorer
from tilescope.app.workbench.measured_runs import StoreError, store_measured
from tilescope.app.workbench.run_export import export_run
from tilescope.app.workbench.runs import execute
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.chrome_trace import read_trace
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.perfdb import timeline
from tilescope.compiler.sim.records import OpTiming, TensorUse
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.records import NewRun, ZoneColumns
from tilescope.perfdb.store import save_run
from tilescope.perfdb.runs import get_run, op_records
from tilescope.perfdb.schema import MeasuredImport, Run
from tests.compiler.profiles.reports import DURATION, add, matmul, report_text, signpost

SHIPPED = (
    "wh_clip_encoder_2.csv",
    "bh_64_clip_encoder_1.csv",
    "bh_p100_dlv3.csv",
    "bh20_oft.csv",
    "bh20_oft_integral_image_trace.csv",
    "bh_8xp150_deepseek_v3_d_p.csv",
    "ops_perf_results_2025_09_18_11_39_20.csv",
)
DEEPSEEK = "bh_8xp150_deepseek_v3_d_p.csv"


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


def _clocked(row: dict, start: int, trace: str = "", host: int | None = None) -> dict:
    """`row` with its firmware cycles (a 1 GHz clock: cycles are ns) and host time."""
    length = int(float(row[DURATION]))
    times = {"DEVICE FW START CYCLE": str(start), "DEVICE FW END CYCLE": str(start + length)}
    times |= {"DEVICE FW DURATION [ns]": str(length), "METAL TRACE ID": trace}
    if host is not None:
        times |= {"HOST START TS": str(host), "HOST END TS": str(host + 50)}
    return row | times


# a model's step: a matmul, a signposted region of two adds replayed from trace 3, a host op
STEP = report_text(
    _clocked(matmul(), 10_000, host=900_000),
    signpost("decoder"),
    _clocked(add(), 12_000, "3"),
    _clocked(add(), 12_500, "3"),
    add(**{"OP CODE": "torch::pad", "OP TYPE": "tt_dnn_cpu", DURATION: "", "HOST START TS": "905000"}),
)


def _store(sessions, text: str, source: str = "step.csv", **given):
    with sessions() as session:
        return store_measured(session, read_ops_report(text, source), text, **given)


def test_a_report_is_stored_as_a_measured_run_with_no_model(sessions):
    stored = _store(sessions, STEP)
    with sessions() as s:
        run = get_run(s, stored.run_id)
        assert (run.kind, run.model_ref, run.model.name, run.model.source_text) == (
            "measured",
            "report:step.csv",
            "step.csv",
            STEP,
        )
        assert (run.target.name, run.label, run.parent_id, run.mesh) == (
            "wormhole_n150",
            "measured: step.csv",
            None,
            [],
        )
        assert run.tracks == ["device 0", "traces", "signposts", "host"]
        assert run.device_ns == 1400.0  # the host op is no device time
        ops = op_records(s, run.id)
        record = s.query(MeasuredImport).one()
    assert [(o.name, o.op_code, o.start_ns, o.duration_ns) for o in ops] == [
        ("MatmulDeviceOperation#1", "MatmulDeviceOperation", 0.0, 1000.0),
        ("BinaryNgDeviceOperation#1", "BinaryNgDeviceOperation", 2000.0, 200.0),
        ("BinaryNgDeviceOperation#2", "BinaryNgDeviceOperation", 2500.0, 200.0),
    ]
    assert (record.run_id, record.source, record.rows, record.matched, record.problems) == (
        stored.run_id,
        "step.csv",
        5,
        3,
        [],
    )
    assert (stored.target, stored.note, stored.ops, stored.device_ns) == ("wormhole_n150", "", 3, 1400.0)


def test_its_timeline_has_the_devices_ops_its_regions_traces_and_host_ops(sessions):
    run_id = _store(sessions, STEP).run_id
    with sessions() as s:
        zones = {(z.track, z.name): (z.start_ns, z.end_ns) for z in timeline.zones(s, run_id)}
        l1 = [(c.track, c.t_ns, c.value) for c in timeline.counters(s, run_id, "l1_bytes")]
    assert zones == {
        ("device 0", "MatmulDeviceOperation#1"): (0.0, 1000.0),
        ("device 0", "BinaryNgDeviceOperation#1"): (2000.0, 2200.0),
        ("device 0", "BinaryNgDeviceOperation#2"): (2500.0, 2700.0),
        ("signposts", "decoder"): (2000.0, 2700.0),  # its ops, first start to last end
        ("traces", "trace 3"): (2000.0, 2700.0),
        ("host", "torch::pad (host)"): (5000.0, 5000.0),  # on the host clock, set by the matmul's
    }
    # the matmul's output shards take 64x128 bf16 of each core's L1 while it runs
    assert l1 == [("device 0", 0.0, 64 * 128 * 2), ("device 0", 1000.0, 0.0)]


def test_a_report_of_several_devices_keeps_them_apart(sessions):
    text = report_text(add(), add(**{"DEVICE ID": "1"}), add(**{"DEVICE ID": "1"}))
    stored = _store(sessions, text)
    with sessions() as s:
        run = get_run(s, stored.run_id)
        assert run.mesh == [["devices", 2]] and run.tracks == ["device 0", "device 1"]
    assert [(d.device, d.ops, d.ns) for d in stored.devices] == [(0, 1, 200.0), (1, 2, 400.0)]


def test_the_chip_is_the_one_the_report_names_else_said(sessions):
    stored = _store(sessions, report_text(add(**{"DEVICE ARCH": "blackhole"})))
    assert (stored.target, stored.note) == ("blackhole_p150", "")
    unsaid = _store(sessions, report_text(add()))
    assert unsaid.target == "blackhole_p150" and "names no chip" in unsaid.note
    assert _store(sessions, report_text(add()), target="wormhole_n150").target == "wormhole_n150"


def test_rows_left_out_are_recorded_with_why(sessions):
    text = report_text(add(), add(**{DURATION: "soon"}))
    stored = _store(sessions, text, "bad.csv")
    assert stored.skipped == ("bad.csv:3: BinaryNgDeviceOperation: DEVICE KERNEL DURATION [ns] 'soon' is not a time "
                              "in ns (0 to 1e+15)",)  # fmt: skip
    with sessions() as s:
        assert s.query(MeasuredImport).one().problems == list(stored.skipped)


@pytest.mark.parametrize(
    "text, reason",
    [
        (report_text(add(**{DURATION: "x"})), "no device op to store (bad.csv:2: BinaryNgDeviceOperation"),
        (report_text(signpost("only")), "no device op to store (the report lists none)"),
        (report_text(add(), add(**{"ATTRIBUTES": "a\0b"})), ":3: a NUL character; a profile is text"),
    ],
)
def test_a_report_with_nothing_to_store_stores_nothing(sessions, text, reason):
    with pytest.raises(StoreError) as err:
        _store(sessions, text, "bad.csv")
    assert str(err.value).startswith("bad.csv:") and reason in str(err.value)
    with sessions() as s:
        assert s.query(Run).count() == 0 and s.query(MeasuredImport).count() == 0


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_report_imports_whole(sessions, perf_reports, name):
    text = (perf_reports / name).read_text(encoding="utf-8-sig")
    stored = _store(sessions, text, name)
    own = [r for r in csv.DictReader(io.StringIO(text)) if r["OP TYPE"] == "tt_dnn_device"]
    assert stored.skipped == () and stored.ops == len(own)
    # the device time the report itself sums
    assert stored.device_ns == math.fsum(float(r[DURATION]) for r in own)
    with sessions() as s:
        run = get_run(s, stored.run_id)
        assert run.device_ns == stored.device_ns and len(op_records(s, run.id)) == len(own)
    devices = sorted({r["DEVICE ID"] for r in own}, key=int)
    assert [f"device {d.device}" for d in stored.devices] == [f"device {d}" for d in devices]
    assert [t for t in run.tracks if t.startswith("device ")] == [f"device {d}" for d in devices]
    if name == DEEPSEEK:
        assert len(stored.devices) == 8 and run.mesh == [["devices", 8]]


# --- traces -------------------------------------------------------------------------------------


def test_a_trace_is_stored_with_a_track_per_thread(sessions):
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
        {"ph": "X", "name": "aten::linear", "pid": 1, "tid": 2, "ts": 10, "dur": 4},
        {"ph": "X", "name": "aten::relu", "pid": 1, "tid": 3, "ts": 12, "dur": 1},
    ]
    text = json.dumps({"traceEvents": events})
    with sessions() as s:
        stored = store_measured(s, read_trace(text, "t.json"), text)
        run = get_run(s, stored.run_id)
        assert run.tracks == ["pid 1 / main", "pid 1 / tid 3"]
        records = op_records(s, run.id)
    assert [(r.name, r.kind, r.start_ns, r.duration_ns) for r in records] == [
        ("aten::linear#1", "matmul", 0.0, 4000.0),
        ("aten::relu#1", "relu", 2000.0, 1000.0),
    ]


def test_tilescopes_own_trace_export_imports_as_a_measured_run(sessions, tiny_path):
    simulated = execute(sessions, tiny_path).run_id
    with sessions() as s:
        text = export_run(s, simulated, "chrome")[0]
        zones = timeline.zones(s, simulated)
    report = read_trace(text, "tiny.json")
    assert report.skipped == () and len(report.ops) == len(zones)
    with sessions() as s:
        run_id = store_measured(s, report, text).run_id
        tracks = get_run(s, run_id).tracks
    assert len(tracks) == len({z.track for z in zones})  # a thread per timeline row


# --- the views ------------------------------------------------------------------------------------


def test_every_view_of_a_simulated_run_works_on_a_measured_one(sessions):
    explorer = Explorer(sessions)
    run_id = _store(sessions, STEP).run_id
    view = explorer.view(run_id)
    assert view.compilation is None and view.measured and view.target.name == "wormhole_n150"
    with pytest.raises(TilescopeError, match="A measured run has no graph: it was read from step.csv"):
        view.compiled  # noqa: B018
    shown = explorer.timeline(view, (0.0, 600.0))  # and a view's width either side: to 1200 ns
    assert shown.rows == ["device", "device 0", "traces", "signposts", "host"]
    assert [(i.track, i.name) for i in shown.items] == [
        ("device", "MatmulDeviceOperation#1"),
        ("device 0", "MatmulDeviceOperation#1"),
    ]
    by_code = {row.group: (row.count, row.total_ns) for row in explorer.statistics(run_id, "code")}
    assert by_code == {"MatmulDeviceOperation": (1, 1000.0), "BinaryNgDeviceOperation": (2, 400.0)}
    assert {row.group for row in explorer.statistics(run_id, "kind")} == {"matmul", "add"}
    (point,) = [p for p in explorer.roofline(view).points if p.kind == "matmul"]
    assert point.achieved == pytest.approx(2 * 64 * 128 * 256 / 1e-6)
    memory = explorer.memory(view)
    assert memory.peak.op == "MatmulDeviceOperation#1" and memory.peak.bytes == 64 * 128 * 2
    assert max(v for _, v in memory.envelope) == 64 * 128 * 2
    (zone,) = explorer.find_zone(run_id, op="BinaryNgDeviceOperation#2")
    assert (zone.track, zone.start_ns, zone.duration_ns) == ("device 0", 2500.0, 200.0)
    assert len(explorer.find_zone(run_id, kind="BinaryNgDeviceOperation", by="code")) == 2


def test_each_device_of_a_measured_run_has_its_own_row_and_split(sessions, perf_reports):
    text = (perf_reports / DEEPSEEK).read_text(encoding="utf-8-sig")
    explorer = Explorer(sessions)
    view = explorer.view(_store(sessions, text, DEEPSEEK).run_id)
    own = [r for r in csv.DictReader(io.StringIO(text))]
    shown = explorer.timeline(view)
    assert shown.rows == ["device", *(f"device {d}" for d in range(8))]
    for device in range(8):
        mine = [r for r in own if r["DEVICE ID"] == str(device)]
        busy = math.fsum(
            i.busy_ns if i.count > 1 else i.end_ns - i.start_ns for i in shown.items if i.track == f"device {device}"
        )
        assert busy == pytest.approx(math.fsum(float(r[DURATION]) for r in mine))
    splits = explorer.device_split(view)
    assert [s.device for s in splits] == [f"device {d}" for d in range(8)]
    assert splits[0].compute_ns != splits[4].compute_ns  # each device's own ops, not device 0's eight times
    assert {s.collectives_ns > 0 for s in splits} == {True}  # all_gather and reduce_scatter on every device
    matmul = next(r.name for r in explorer.op_records(view.id) if r.kind == "matmul")
    assert sorted(z.track for z in explorer.find_zone(view.id, op=matmul)) == [f"device {d}" for d in range(8)]


def test_a_simulated_run_of_a_report_is_shown_with_no_model_either(sessions):
    """A replay stores a simulated run whose model is the report: nothing to compile for it either."""
    measured = _store(sessions, STEP).run_id
    with sessions() as s:
        run = get_run(s, measured)
        ops = [op.replace(level="kernel", bound="compute") for op in _timings(op_records(s, measured, tensors=True))]
        replayed = NewRun(
            model_ref=run.model_ref,
            model_name=run.model.name,
            source_hash=run.model.source_hash,
            source_text=run.model.source_text,
            target=run.target.name,
            total_ns=3000.0,
            device_ns=1400.0,
            ops=ops,
            zones=ZoneColumns.from_rows([("device 0", 0, op.name, op.start_ns, op.end_ns, op.name) for op in ops]),
            parent_id=measured,
        )
    with sessions() as s:
        replay_id = save_run(s, replayed)
    explorer = Explorer(sessions)
    view = explorer.view(replay_id)
    assert view.compilation is None and not view.measured
    with pytest.raises(TilescopeError, match="A replay of step.csv has no graph"):
        view.compiled  # noqa: B018
    assert [r["value"] for r in explorer.run_options("report:step.csv", "blackhole_p150")] == [replay_id, measured]
    assert explorer.ensure_run("report:step.csv", "blackhole_p150") == measured  # the measured run opens


def _timings(records) -> list[OpTiming]:
    """Stored op records as the simulator's records again."""
    fields = [f for f in OpTiming.__dataclass_fields__ if f != "tensors"]
    return [
        OpTiming(**{f: getattr(r, f) for f in fields}, tensors=tuple(TensorUse.from_dict(t) for t in r.tensors))
        for r in records
    ]
