"""The tracing DB on a real SQLite file: save a run, read it back, filter zones."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, inspect, select

from tilescope.compiler.sim.records import OpTiming
from tilescope.perfdb.engine import DatabaseError, open_db, session_factory
from tilescope.perfdb.errors import RunNotFound
from tilescope.perfdb.runs import get_run, list_runs, load_ops, op_records
from tilescope.perfdb.timeline import zones
from tilescope.perfdb.schema import OpRecord, Run, TimelineBlock
from tilescope.perfdb.records import CounterColumns, LoadOp, NewRun, ZoneColumns
from tilescope.perfdb.store import save_run


def _op(name, start, duration, **extra):
    row = {
        "name": name,
        "kind": "matmul",
        "start_ns": start,
        "duration_ns": duration,
        "flops": 2 * 10**12,
        "bytes": {"dram": 1024.5, "l1": 64.0},
        "bound": "dram",
        "why": "DRAM-bound: x",
        "memory": "l1",
        "grid": "2x4",
        "cores": 8,
        "roofline_ns": duration / 2,
    }
    row.update(extra)
    return OpTiming(**row)


ZONES = [
    ("core 0,0", 0, "op_a", 0.0, 10.0, "op_a"),
    ("core 0,0/reader", 1, "read", 0.0, 4.0, "op_a"),
    ("core 0,1", 0, "op_a", 0.0, 10.0, "op_a"),
    ("core 0,0", 0, "op_b", 10.0, 20.0, "op_b"),
    ("core 0,0", 0, "op_c", 30.0, 40.0, "op_c"),
]


def _new_run(**extra):
    fields = dict(
        model_ref="zoo:mlp",
        model_name="zoo:mlp",
        source_hash="ab" * 32,
        source_text="func.func @f() {}",
        target="wormhole_n150",
        total_ns=40.0,
        device_ns=30.0,
        ops=[_op("op_b", 10.0, 10.0), _op("op_a", 0.0, 10.0, kind="add"), _op("op_c", 30.0, 10.0)],
        zones=ZoneColumns.from_rows(ZONES),
        dispatch="trace",
        overrides=["op_a=l1"],
        override_outcomes=[{"op": "op_a", "spec": "op_a=l1", "status": "applied", "reason": ""}],
        label="first try",
    )
    fields.update(extra)
    return NewRun(**fields)


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


def test_open_db_creates_the_tables(db_url):
    engine = open_db(db_url)
    assert {"runs", "op_records", "timeline_blocks"} <= set(inspect(engine).get_table_names())
    open_db(db_url)  # opening again keeps working


def test_open_db_creates_the_sqlite_file(tmp_path, sqlite_url):
    open_db(sqlite_url)
    assert (tmp_path / "t.db").is_file() and (tmp_path / "t.db").stat().st_size > 0


def test_the_default_database_gets_its_directory_but_a_given_path_must_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESCOPE_DB", f"sqlite:///{tmp_path}/a/b/t.db")
    open_db()
    assert (tmp_path / "a" / "b" / "t.db").is_file()
    with pytest.raises(DatabaseError, match=f"directory {tmp_path}/c does not exist"):
        open_db(f"sqlite:///{tmp_path}/c/t.db")
    assert not (tmp_path / "c").exists()


def test_a_database_of_an_older_schema_gains_the_new_columns_and_keeps_its_runs(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, model_ref VARCHAR, model_name VARCHAR, source_hash VARCHAR,"
            " source_text TEXT, target VARCHAR, dispatch VARCHAR, overrides JSON, override_outcomes JSON,"
            " label VARCHAR, parent_id INTEGER, created_at DATETIME, status VARCHAR, total_ns FLOAT, device_ns FLOAT)"
        )
        db.execute(
            "INSERT INTO runs VALUES (1, 'zoo:mlp', 'zoo:mlp', 'h', 't', 'wormhole_n150', 'host', '[]', '[]',"
            " 'kept', NULL, '2026-11-01 00:00:00', 'ok', 5.0, 5.0)"
        )
    sessions = session_factory(open_db(f"sqlite:///{path}"))
    with sessions() as s:
        (old,) = list_runs(s)
        assert (old.label, old.policy, old.total_ns) == ("kept", "dram-interleaved", 5.0)
    with sessions() as s:
        save_run(s, _new_run())
    with sessions() as s:
        assert [r.label for r in list_runs(s)][-1] == "kept" and len(list_runs(s)) == 2


def test_save_and_get_run_round_trip(sessions):
    before = datetime.now(timezone.utc)
    with sessions() as s:
        run_id = save_run(s, _new_run())
    assert isinstance(run_id, int)
    with sessions() as s:
        run = get_run(s, run_id)
        assert run.id == run_id
        assert (run.model_ref, run.model.name, run.model.source_hash, run.model.source_text) == (
            "zoo:mlp",
            "zoo:mlp",
            "ab" * 32,
            "func.func @f() {}",
        )
        assert (run.target.name, run.dispatch, run.label) == ("wormhole_n150", "trace", "first try")
        assert (run.total_ns, run.device_ns) == (40.0, 30.0)
        assert run.overrides == ["op_a=l1"]
        assert run.override_outcomes == [{"op": "op_a", "spec": "op_a=l1", "status": "applied", "reason": ""}]
        assert run.parent_id is None
        created = run.created_at if run.created_at.tzinfo else run.created_at.replace(tzinfo=timezone.utc)
        assert before - timedelta(seconds=5) <= created <= datetime.now(timezone.utc) + timedelta(seconds=5)
        assert [o.name for o in run.ops] == ["op_a", "op_b", "op_c"]  # relationship ordered by start


def test_op_records_round_trip(sessions):
    with sessions() as s:
        run_id = save_run(s, _new_run())
    with sessions() as s:
        records = op_records(s, run_id)
    assert [r.name for r in records] == ["op_a", "op_b", "op_c"]  # by start time
    a = records[0]
    assert (a.kind, a.start_ns, a.duration_ns, a.flops, a.bound, a.why) == (
        "add",
        0.0,
        10.0,
        2 * 10**12,
        "dram",
        "DRAM-bound: x",
    )
    assert a.bytes == {"dram": 1024.5, "l1": 64.0}
    assert (a.memory, a.grid, a.cores, a.roofline_ns, a.run_id) == ("l1", "2x4", 8, 5.0, run_id)
    with sessions() as s:
        light, full = op_records(s, run_id, moved=False), op_records(s, run_id, tensors=True)
    assert [r.name for r in light] == ["op_a", "op_b", "op_c"] and not hasattr(light[0], "bytes")
    assert not hasattr(a, "tensors") and full[0].bytes == a.bytes and isinstance(full[0].tensors, list)


def test_zones_round_trip_and_filters(sessions):
    with sessions() as s:
        run_id = save_run(s, _new_run())
    with sessions() as s:
        every = zones(s, run_id)
        assert sorted((z.track, z.depth, z.name, z.start_ns, z.end_ns, z.op) for z in every) == sorted(ZONES)
        assert [z.start_ns for z in every] == sorted(z.start_ns for z in every)
        # overlapping [12, 35]: op_b (10..20) and op_c (30..40), not op_a (ends at 10)
        assert [z.name for z in zones(s, run_id, t0=12, t1=35)] == ["op_b", "op_c"]
        # touching the edge counts as overlapping
        assert {z.name for z in zones(s, run_id, t0=10, t1=10)} == {"op_a", "op_b"}
        assert {z.name for z in zones(s, run_id, t0=21, t1=29)} == set()
        assert [z.name for z in zones(s, run_id, t1=5, tracks=["core 0,0/reader"])] == ["read"]
        assert {z.track for z in zones(s, run_id, tracks=["core 0,1", "core 0,0/reader"])} == {
            "core 0,1",
            "core 0,0/reader",
        }
        assert zones(s, run_id, tracks=[]) == []
        assert zones(s, run_id + 1) == []


def test_runs_are_kept_apart(sessions):
    with sessions() as s:
        first = save_run(s, _new_run())
    with sessions() as s:
        second = save_run(
            s, _new_run(model_ref="m.mlir", ops=[_op("x", 0.0, 1.0)], zones=ZoneColumns.from_rows([]), parent_id=first)
        )
    with sessions() as s:
        assert [r.id for r in list_runs(s)] == [second, first]  # newest first
        assert [r.id for r in list_runs(s, model_ref="m.mlir")] == [second]
        assert list_runs(s, model_ref="other") == []
        assert [r.name for r in op_records(s, second)] == ["x"]
        assert [r.id for r in list_runs(s, limit=1)] == [second]
    with sessions() as s:
        third = save_run(s, _new_run(model_ref="report:r.csv", kind="measured"))
    with sessions() as s:
        assert [r.id for r in list_runs(s, kind="measured")] == [third]
        assert [r.id for r in list_runs(s, kind="simulated", limit=5)] == [second, first]
        assert list_runs(s, model_ref="m.mlir", kind="measured") == []
        assert zones(s, second) == []
        assert get_run(s, second).parent_id == first


def test_missing_run(sessions):
    with sessions() as s:
        with pytest.raises(RunNotFound) as err:
            get_run(s, 999)
    assert str(err.value) == "no run with id 999"
    assert isinstance(err.value, LookupError)


def test_the_op_records_table_has_a_column_for_each_field_of_the_simulators_record():
    from dataclasses import fields

    assert {f.name for f in fields(OpTiming)} == {c.name for c in OpRecord.__table__.c} - {"id", "run_id"}


def test_rows_become_columns_numbered_in_the_order_seen():
    zones = ZoneColumns.from_rows(ZONES[:3])
    assert (zones.tracks, zones.names, len(zones)) == (["core 0,0", "core 0,0/reader", "core 0,1"], ["op_a", "read"], 3)
    assert (zones.track.tolist(), zones.name.tolist(), zones.op.tolist()) == ([0, 1, 2], [0, 1, 0], [0, 0, 0])
    samples = CounterColumns.from_rows([("dram", "bw", 1.0, 5.0), ("core 0,0", "l1", 1.0, 2.0)])
    assert (samples.tracks, samples.names, samples.value.tolist()) == (["dram", "core 0,0"], ["bw", "l1"], [5.0, 2.0])
    with pytest.raises(ValueError, match="columns of different lengths"):
        CounterColumns(["dram"], ["bw"], [0, 0], [0], [1.0], [5.0])


def test_failed_save_stores_nothing(sessions):
    # fails once the run's row is written: its last op's bytes are no JSON
    broken = _op("op_c", 30.0, 10.0, bytes={"dram": object()})
    with sessions() as s:
        with pytest.raises(TypeError):
            save_run(s, _new_run(ops=[_op("op_a", 0.0, 10.0), broken]))
    with sessions() as s:
        assert list_runs(s) == []
        assert s.scalars(select(TimelineBlock)).all() == []


def test_deleting_a_run_deletes_its_ops_and_zones(sessions):
    with sessions() as s:
        run_id = save_run(s, _new_run())
        keep = save_run(s, _new_run())
    with sessions() as s, s.begin():
        s.delete(s.get(Run, run_id))
    with sessions() as s:
        assert op_records(s, run_id) == [] and zones(s, run_id) == []
        assert len(op_records(s, keep)) == 3 and len(zones(s, keep)) == len(ZONES)
        assert s.scalars(select(OpRecord.run_id).distinct()).all() == [keep]


def test_data_survives_a_new_engine(db_url):
    with session_factory(open_db(db_url))() as s:
        run_id = save_run(s, _new_run())
    with session_factory(open_db(db_url))() as s:
        assert get_run(s, run_id).label == "first try"


def test_created_at_keeps_its_timezone(sessions):
    with sessions() as s:
        run_id = save_run(s, _new_run())
    with sessions() as s:
        assert get_run(s, run_id).created_at.utcoffset() == timedelta(0)


def test_runs_of_one_model_and_target_share_their_rows(sessions):
    from tilescope.perfdb.schema import Model, Target

    with sessions() as s:
        first = save_run(s, _new_run(target_text='name = "wormhole_n150"\n'))
        again = save_run(s, _new_run(target_text='name = "wormhole_n150"\n', label="again"))
        edited = save_run(s, _new_run(target_text='name = "wormhole_n150"\ncores = 64\n', label="edited target"))
        other = save_run(s, _new_run(model_name="zoo:cnn", source_hash="cd" * 32, source_text="func.func @g() {}"))
    with sessions() as s:
        runs = {i: get_run(s, i) for i in (first, again, edited, other)}
        assert runs[first].model_id == runs[again].model_id == runs[edited].model_id != runs[other].model_id
        assert runs[first].target_id == runs[again].target_id != runs[edited].target_id
        assert runs[edited].target.description.endswith("cores = 64\n")
        assert runs[other].model.source_text == "func.func @g() {}"
        assert s.scalar(select(func.count()).select_from(Model)) == 2
        assert s.scalar(select(func.count()).select_from(Target)) == 3  # two descriptions, and the empty one


def test_counter_envelope_is_the_fullest_track_at_each_time(sessions):
    from tilescope.perfdb.timeline import counter_envelope

    samples = [
        ("core 0,0", "l1_bytes", 0.0, 100.0),
        ("core 0,1", "l1_bytes", 0.0, 300.0),
        ("core 0,0", "l1_bytes", 10.0, 500.0),
        ("core 0,1", "l1_bytes", 10.0, 200.0),
        ("dram", "dram_bytes_per_s", 10.0, 9e9),  # another counter: not in the envelope
    ]
    with sessions() as s:
        run_id = save_run(s, _new_run(counters=CounterColumns.from_rows(samples)))
    with sessions() as s:
        assert counter_envelope(s, run_id, "l1_bytes") == [(0.0, 300.0), (10.0, 500.0)]
        assert counter_envelope(s, run_id, "nothing") == []


# --- values no column can hold, and hostile models end to end -------------------------------------


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(ops=[_op("op\0a", 0.0, 1.0)]), r"op 'op\x00a' has a NUL character in its name"),
        (dict(ops=[_op("op_a", 0.0, 1.0, why="x\0")]), "op 'op_a' has a NUL character in its why"),
        (dict(source_text="func.func @f() {}\0"), "its source_text has a NUL character"),
        (dict(ops=[_op("op_a", 0.0, 1.0, flops=2**70)]), "op 'op_a' has flops 1.18e+21, past 64 bits"),
        (dict(ops=[_op("op_a", 0.0, 1.0, cores=2**40)]), "op 'op_a' has cores 1.1e+12, past 32 bits"),
    ],
    ids=["nul-name", "nul-why", "nul-source", "flops", "cores"],
)
def test_a_value_no_column_holds_is_one_line_and_stores_nothing(sessions, change, message):
    # PostgreSQL's text refuses NUL and its BIGINT stops at 2^63; SQLite overflows at 2^63 too
    with sessions() as s:
        with pytest.raises(DatabaseError) as err:
            save_run(s, _new_run(**change))
    assert str(err.value) == f"cannot store the run: {message}"
    with sessions() as s:
        assert list_runs(s) == []


def _model(ty: str, loc: str = "", op: str = "relu", b: str | None = None) -> str:
    args = f"%a: {ty}" + (f", %b: {b}" if b else "")
    operands = "%a, %b" if b else "%a"
    types = f"{ty}, {b}" if b else ty
    return (
        f"func.func @forward({args}) -> {ty} {{\n"
        f'  %0 = "ttir.{op}"({operands}) : ({types}) -> {ty}{f" loc({loc})" if loc else ""}\n'
        f"  return %0 : {ty}\n}}\n"
    )


@pytest.mark.parametrize(
    "text, message",
    [
        (_model("tensor<?x4xf32>"), "h.mlir:1:20: dynamic shapes are not supported: arg0 is tensor<?x4xf32>"),
        (_model("tensor<0x4xf32>"), "h.mlir:1:20: zero-size tensors are not supported: arg0 is tensor<0x4xf32>"),
        (
            _model("tensor<99999999999x99999999999xf32>"),
            "h.mlir:1:20: tensors of more than 2^48 elements are not "
            "supported: arg0 is tensor<99999999999x99999999999xf32>",
        ),
        (
            _model("tensor<32x32xf32>", loc=r'"a\00b"'),
            r"h.mlir: op name 'a\x00b' has a control character or line break (U+0000)",
        ),
        (_model("tensor<32x32xf32>") + "// \0\n", "h.mlir:5:4: NUL character (MLIR is text)"),
        (
            _model("tensor<16777216x16777216xf32>", op="matmul", b="tensor<16777216x16777216xf32>"),
            "op matmul_0: 9.44e+21 FLOPs, more than tilescope counts (2^63)",
        ),
    ],
    ids=["dynamic", "zero", "huge", "nul-loc", "nul-text", "flops"],
)
def test_models_that_failed_to_store_are_one_line_before_storing(db_url, text, message):
    # each overflowed SQLite, PostgreSQL or both at store time, or failed in the compiler
    from tilescope.app.workbench.runs import execute
    from tilescope.compiler.errors import ModelLoadError

    sessions = session_factory(open_db(db_url))
    with pytest.raises(ModelLoadError) as err:
        execute(sessions, "h.mlir", source_text=text)
    assert str(err.value) == message
    with sessions() as s:
        assert list_runs(s) == []


def test_the_largest_tensor_tilescope_takes_stores_its_flops(db_url):
    from tilescope.app.workbench.runs import execute

    sessions = session_factory(open_db(db_url))
    run_id = execute(sessions, "big.mlir", source_text=_model("tensor<16777216x16777216xf32>")).run_id
    with sessions() as s:
        (record,) = op_records(s, run_id)
    assert record.flops == 2**48


# --- load-time work -------------------------------------------------------------------------------

BIAS_BROADCAST = LoadOp(
    name="fc1.bias.broadcast", kind="broadcast", duration_ns=420.5, bytes={"dram": 8192.0}, bound="dram", memory="dram"
)
WEIGHT_TRANSPOSE = LoadOp(
    name="fc1.weight.transpose",
    kind="transpose",
    duration_ns=1500.0,
    bytes={"dram": 2.0**21, "noc": 2.0**20},
    bound="noc",
    memory="dram",
)


def test_a_runs_load_ops_read_back_as_stored(sessions):
    with sessions() as s:
        run_id = save_run(s, _new_run(load_ops=[WEIGHT_TRANSPOSE, BIAS_BROADCAST], load_ns=1920.5))
        plain = save_run(s, _new_run())
    with sessions() as s:
        run, other = get_run(s, run_id), get_run(s, plain)
    # read after the session closed: get_run has read them
    assert load_ops(run) == [WEIGHT_TRANSPOSE, BIAS_BROADCAST] and run.load_ns == 1920.5
    assert (load_ops(other), other.load_ns) == ([], 0.0)
    assert (run.total_ns, run.device_ns) == (40.0, 30.0)  # the step's times leave load time out


def test_a_simulated_runs_load_ops_read_back_equal(sessions):
    from .load_work import store_hoisted

    run_id, sim = store_hoisted(sessions, {"mlp.layer.0.fc1.matmul", "mlp.layer.1.fc1.matmul"})
    with sessions() as s:
        run = get_run(s, run_id)
        records = op_records(s, run_id)
    assert load_ops(run) == [LoadOp.of(op) for op in sim.load_ops] and len(sim.load_ops) >= 2
    assert run.load_ns == sim.load_ns == pytest.approx(sum(op.duration_ns for op in sim.load_ops))
    assert {"mlp.layer.0.fc1.matmul", "mlp.layer.1.fc1.matmul"} <= {op.name for op in load_ops(run)}
    assert [r.name for r in records] == [op.name for op in sim.ops]  # the step's records are the step's ops


@pytest.mark.parametrize(
    "op, message",
    [
        (replace(BIAS_BROADCAST, name="b\0"), r"load op 'b\x00' has a NUL character in its name"),
        (replace(BIAS_BROADCAST, kind="x\0"), "load op 'fc1.bias.broadcast' has a NUL character in its kind"),
        (replace(BIAS_BROADCAST, duration_ns=float("nan")), "has a time or byte count not finite"),
        (replace(BIAS_BROADCAST, bytes={"dram": float("inf")}), "has a time or byte count not finite"),
    ],
    ids=["nul-name", "nul-kind", "nan-time", "infinite-bytes"],
)
def test_a_load_op_no_column_holds_is_one_line_and_stores_nothing(sessions, op, message):
    with sessions() as s:
        with pytest.raises(DatabaseError) as err:
            save_run(s, _new_run(load_ops=[op], load_ns=1.0))
    assert str(err.value).startswith("cannot store the run: ") and message in str(err.value)
    assert "\n" not in str(err.value)
    with sessions() as s:
        assert list_runs(s) == []
