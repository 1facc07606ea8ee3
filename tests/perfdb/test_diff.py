"""perfdb.diff.diff_runs: two stored runs compared op by op, matched by stable name."""

from __future__ import annotations

import dataclasses
import math

from tilescope.overrides import parse_item

import pytest

from tilescope.app.workbench.runs import execute
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.sim.records import OpTiming
from tilescope.compiler.targets.catalog import target_text
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.diff import MovedOp, OnlyIn, OnlyOp, OpDelta, RunDiff, RunTimes, SettingChange, Sides, diff_runs
from tilescope.perfdb.errors import RunNotFound
from tilescope.perfdb.op_changes import ParamChange
from tilescope.perfdb.runs import get_run
from tilescope.perfdb.records import LoadOp, NewRun, ZoneColumns
from tilescope.perfdb.store import save_run

KEYS = [
    "a",
    "b",
    "kinds",
    "alignment",
    "warnings",
    "settings",
    "total_delta_ns",
    "device_delta_ns",
    "host_delta_ns",
    "load_delta_ns",
    "times",
    "ops",
    "meshes",
    "removed",
    "inserted",
    "collectives",
    "moved_to_load",
    "moved_into_step",
    "overrides",
    "top_regressions",
    "top_improvements",
]
MLP = "zoo:mlp?layers=1"  # two matmuls, each with its bias add and activation fused in
NARROW_MLP = "zoo:mlp?layers=1&hidden=2048"  # the same, each matmul shorter than host dispatch
FC1, FC2 = "mlp.layer.0.fc1.matmul", "mlp.layer.0.fc2.matmul"


def change(param, a, b, operand=None, result=None) -> ParamChange:
    return ParamChange(param, a, b, operand, result)


def output(param, a, b) -> ParamChange:
    return change(param, a, b, result=0)


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


def store(sessions, *ops, total_ns=None, load=()) -> int:
    """A run of ops given as (name, duration_ns, memory, grid[, error band]), one after the other,
    and the ops given as (name, duration_ns) in `load` run once at load."""
    rows, start = [], 0.0
    for name, duration, memory, grid, *band in ops:
        rows.append(
            OpTiming(
                name=name,
                kind="matmul",
                start_ns=start,
                duration_ns=duration,
                flops=10**9,
                bytes={"dram": 100.0},
                bound="dram",
                memory=memory,
                grid=grid,
                cores=64,
                roofline_ns=duration / 2,
                error_band=band[0] if band else None,
            )
        )
        start += duration
    new = NewRun(
        model_ref="zoo:mlp",
        model_name="mlp",
        source_hash="h",
        source_text="t",
        target="wormhole_n150",
        total_ns=start if total_ns is None else total_ns,
        device_ns=start,
        ops=rows,
        zones=ZoneColumns.from_rows([]),
        load_ops=[
            LoadOp(name=name, kind="broadcast", duration_ns=ns, bytes={"dram": 64.0}, bound="dram", memory="dram")
            for name, ns in load
        ],
        load_ns=sum(ns for _, ns in load),
    )
    with sessions() as s:
        return save_run(s, new)


def diff(sessions, a, b) -> RunDiff:
    with sessions() as s:
        return diff_runs(s, a, b)


def test_matched_ops_their_deltas_ratios_changes_and_order(sessions):
    a = store(
        sessions,
        ("fc1", 100.0, "dram", "8x8"),
        ("fc2", 200.0, "dram", "8x8"),
        ("act", 50.0, "dram", "8x8"),
        ("gone", 7.0, "dram", "8x8"),
        ("free", 0.0, "dram", "8x8"),
    )
    b = store(
        sessions,
        ("new", 3.0, "l1", "1x1"),
        ("fc1", 40.0, "l1", "2x2"),
        ("fc2", 260.0, "dram", "4x8"),
        ("act", 50.0, "dram", "8x8"),
        ("free", 5.0, "l1", "8x8"),
    )
    d = diff(sessions, a, b)
    assert list(d.to_json()) == KEYS
    assert (d.a, d.b) == (a, b)
    assert d.total_delta_ns == pytest.approx((40 + 260 + 50 + 5 + 3) - (100 + 200 + 50 + 7))
    ops = {op.name: op for op in d.ops}
    assert [op.name for op in d.ops] == ["fc1", "fc2", "free", "act"]  # by |delta| descending
    # records without tensors: the memory column is the output's memory
    assert ops["fc1"] == OpDelta(
        "fc1",
        "matmul",
        100.0,
        40.0,
        -60.0,
        pytest.approx(0.4),
        (output("memory", "dram", "l1"), change("grid", "8x8", "2x2")),
    )
    assert (ops["fc2"].delta_ns, ops["fc2"].changes) == (60.0, (change("grid", "8x8", "4x8"),))
    assert ops["fc2"].ratio == pytest.approx(1.3)
    assert (ops["act"].delta_ns, ops["act"].ratio, ops["act"].changes) == (0.0, 1.0, ())
    assert (ops["free"].ratio, ops["free"].changes) == (None, (output("memory", "dram", "l1"),))  # took no time in a
    assert d.removed == (OnlyOp("gone", "matmul", 7.0),)
    assert d.inserted == (OnlyOp("new", "matmul", 3.0),)
    assert d.top_regressions == ("fc2", "free")
    assert d.top_improvements == ("fc1",)


def test_a_run_against_itself_changes_nothing(sessions):
    a = store(sessions, ("fc1", 100.0, "dram", "8x8"), ("fc2", 200.0, "l1", "2x2"))
    d = diff(sessions, a, a)
    assert d.total_delta_ns == 0
    assert [(op.delta_ns, op.ratio, op.changes) for op in d.ops] == [(0.0, 1.0, ())] * 2
    assert d.removed == d.inserted == () and d.top_regressions == d.top_improvements == ()
    assert d.warnings == () and d.overrides == Sides((), ())
    assert d.collectives == OnlyIn((), ()) and d.ops_added == 0
    assert d.device_delta_ns == d.host_delta_ns == 0


def test_top_lists_keep_the_five_largest(sessions):
    names = [f"op_{i}" for i in range(8)]
    a = store(sessions, *[(n, 100.0, "dram", "8x8") for n in names])
    b = store(sessions, *[(n, 100.0 + 10 * i, "dram", "8x8") for i, n in enumerate(names)])
    c = store(sessions, *[(n, 100.0 - 10 * i, "dram", "8x8") for i, n in enumerate(names)])
    assert diff(sessions, a, b).top_regressions == ("op_7", "op_6", "op_5", "op_4", "op_3")
    assert diff(sessions, a, b).top_improvements == ()
    assert diff(sessions, a, c).top_improvements == ("op_7", "op_6", "op_5", "op_4", "op_3")
    assert diff(sessions, c, b).top_regressions == ("op_7", "op_6", "op_5", "op_4", "op_3")  # 0 delta: op_0


def test_a_name_recorded_twice_sums_its_durations(sessions):
    a = store(sessions, ("loop", 10.0, "dram", "8x8"), ("loop", 30.0, "dram", "8x8"))
    b = store(sessions, ("loop", 10.0, "dram", "8x8"))
    (op,) = diff(sessions, a, b).ops
    assert (op.a_ns, op.b_ns, op.delta_ns, op.ratio) == (40.0, 10.0, -30.0, 0.25)


def test_the_total_delta_is_the_runs_totals_not_the_ops(sessions):
    a = store(sessions, ("fc1", 100.0, "dram", "8x8"), total_ns=1000.0)  # e.g. host dispatch between ops
    b = store(sessions, ("fc1", 100.0, "dram", "8x8"), total_ns=400.0)
    d = diff(sessions, a, b)
    assert (d.total_delta_ns, d.device_delta_ns, d.host_delta_ns) == (-600.0, 0.0, -600.0)
    assert d.times == Sides(RunTimes(1000.0, 100.0, 900.0, 0.0, 0), RunTimes(400.0, 100.0, 300.0, 0.0, 0))
    assert d.to_json()["times"] == {
        "a": {"total_ns": 1000.0, "device_ns": 100.0, "host_ns": 900.0, "load_ns": 0.0, "load_ops": 0},
        "b": {"total_ns": 400.0, "device_ns": 100.0, "host_ns": 300.0, "load_ns": 0.0, "load_ops": 0},
    }
    assert d.load_delta_ns == 0.0 and d.moved_to_load == d.moved_into_step == ()


def test_ops_moved_to_load_time_are_listed_as_moved_not_as_removed(sessions):
    a = store(
        sessions, ("bias.broadcast", 30.0, "dram", "8x8"), ("fc1", 100.0, "dram", "8x8"), ("gone", 5.0, "l1", "1x1")
    )
    b = store(
        sessions,
        ("fc1", 100.0, "dram", "8x8"),
        ("new", 7.0, "l1", "1x1"),
        load=[("weight.transpose", 400.0), ("bias.broadcast", 20.0)],
    )
    d = diff(sessions, a, b)
    assert d.moved_to_load == (MovedOp("bias.broadcast", "matmul", 30.0, 20.0),)
    assert d.moved_into_step == ()
    assert d.removed == (OnlyOp("gone", "matmul", 5.0),)
    assert d.inserted == (OnlyOp("new", "matmul", 7.0),)
    assert [op.name for op in d.ops] == ["fc1"]
    assert (d.times.a.load_ns, d.times.a.load_ops) == (0.0, 0)
    assert (d.times.b.load_ns, d.times.b.load_ops) == (420.0, 2)
    assert d.load_delta_ns == 420.0
    # the step lost the moved op's time; the load time is not in the total
    assert d.device_delta_ns == pytest.approx(7.0 - 5.0 - 30.0) and d.total_delta_ns == d.device_delta_ns
    assert d.ops_added == 1 - 1 - 1  # one inserted, one removed, one moved out of the step
    back = diff(sessions, b, a)
    assert back.moved_into_step == (MovedOp("bias.broadcast", "matmul", 30.0, 20.0),)
    assert back.moved_to_load == () and back.load_delta_ns == -420.0
    assert [op.name for op in back.removed] == ["new"] and [op.name for op in back.inserted] == ["gone"]


def test_simulated_ops_moved_to_load_time(sessions):
    from .load_work import MLP, simulated, store_hoisted

    plain = execute(sessions, MLP).run_id
    moved = {"mlp.layer.0.fc1.matmul", "mlp.layer.1.fc1.matmul"}
    loads, sim = store_hoisted(sessions, moved)
    d = diff(sessions, plain, loads)
    step = {op.name: op for op in simulated()[1].ops}
    load = {op.name: op.duration_ns for op in sim.load_ops}
    assert d.moved_to_load == tuple(
        MovedOp(name, op.kind, op.duration_ns, load[name]) for name, op in step.items() if name in moved
    )
    assert len(d.moved_to_load) == 2
    assert d.removed == d.inserted == () and {op.name for op in d.ops} == set(step) - moved
    assert d.times.b.load_ns == pytest.approx(sim.load_ns) and d.times.b.load_ops == len(sim.load_ops)
    assert d.load_delta_ns == pytest.approx(sim.load_ns - d.times.a.load_ns)


# --- real runs: compiled with overrides, simulated, stored --------------------------------------


@pytest.fixture
def mlp(sessions):
    """run(*override_items, **options) -> the id of a stored run of MLP (stored_run's options)."""
    return lambda *items, **options: stored_run(sessions, MLP, items, **options)


def stored_run(sessions, ref: str, items, **given) -> int:
    """The id of a run of `ref` with override `items`, stored by execute: `given` holds its
    keywords and the fields of its CompileOptions alike."""
    named = {f.name: given.pop(f.name) for f in dataclasses.fields(CompileOptions) if f.name in given}
    return execute(sessions, ref, options=CompileOptions([parse_item(i) for i in items], **named), **given).run_id


def test_a_sharded_low_precision_output_lists_every_parameter_it_changed(sessions, mlp):
    plain, tuned = mlp(), mlp(f"{FC1}=1x8:l1:width_sharded:bfp8:fidelity#lofi")
    d = diff(sessions, plain, tuned)
    ops = {op.name: op for op in d.ops}
    assert ops[FC1].changes == (
        output("memory", "dram", "l1"),
        output("memory_layout", "interleaved", "width_sharded"),
        output("dtype", "bf16", "bfp8"),
        change("grid", "8x8", "1x8"),
        change("fidelity", "hifi2", "lofi"),
    )
    # the consumer reads that tensor as it now is, and computes in the fidelity its dtype implies
    assert ops[FC2].changes == (
        change("fidelity", "hifi2", "lofi"),
        change("memory", "dram", "l1", operand=0),
        change("memory_layout", "interleaved", "width_sharded", operand=0),
        change("dtype", "bf16", "bfp8", operand=0),
        change("grid", "8x8", "1x8", operand=0),
    )
    assert d.overrides == Sides((), (f"{FC1}=1x8:l1:width_sharded:bfp8:fidelity#lofi",))
    assert d.removed == d.inserted == () and d.warnings == ()
    back = diff(sessions, tuned, plain)
    assert {op.name: op.changes for op in back.ops}[FC1][0] == output("memory", "l1", "dram")


@pytest.fixture
def narrow_mlp(sessions):
    """run(*override_items, **options) -> the id of a stored run of NARROW_MLP (stored_run's options)."""
    return lambda *items, **options: stored_run(sessions, NARROW_MLP, items, **options)


def test_the_total_splits_into_device_time_and_host_dispatch(sessions, narrow_mlp):
    mlp = narrow_mlp
    plain, tuned = mlp(), mlp(f"{FC1}=1x8:l1:width_sharded:bfp8:fidelity#lofi")
    d = diff(sessions, plain, tuned)
    ops = {op.name: op for op in d.ops}
    with sessions() as s:
        runs = [get_run(s, i) for i in (plain, tuned)]
    assert d.device_delta_ns == pytest.approx(runs[1].device_ns - runs[0].device_ns)
    assert d.device_delta_ns == pytest.approx(sum(op.delta_ns for op in d.ops))
    assert d.host_delta_ns == pytest.approx(d.total_delta_ns - d.device_delta_ns)
    assert d.times.b.host_ns == pytest.approx(runs[1].total_ns - runs[1].device_ns)
    # host dispatch (100 us an op) is slower than either op: the device waits on the host, so
    # what the first op gains or loses turns into idle time, and only the last op moves the total
    assert abs(ops[FC1].delta_ns) > 1000
    assert d.host_delta_ns == pytest.approx(-ops[FC1].delta_ns)
    assert d.total_delta_ns == pytest.approx(ops[FC2].delta_ns)
    # a captured trace issues ops at once: the device never waits, the total is the ops' time
    traced = diff(
        sessions, mlp(dispatch="trace"), mlp(f"{FC1}=1x8:l1:width_sharded:bfp8:fidelity#lofi", dispatch="trace")
    )
    assert traced.host_delta_ns == pytest.approx(0, abs=1e-6)
    assert traced.total_delta_ns == pytest.approx(traced.device_delta_ns) == pytest.approx(d.device_delta_ns)


def test_an_operand_override_names_its_operand_and_the_op_it_inserted(sessions, mlp):
    plain, tuned = mlp(), mlp(f"{FC2}=operand#1:l1:width_sharded:1x8")
    d = diff(sessions, plain, tuned)
    ops = {op.name: op for op in d.ops}
    assert ops[FC2].changes == (
        change("memory", "dram", "l1", operand=1),
        change("memory_layout", "interleaved", "width_sharded", operand=1),
        change("grid", "1x1", "1x8", operand=1),
    )
    assert ops[FC1].changes == () and d.removed == ()
    (inserted,) = d.inserted
    assert (inserted.name, inserted.kind) == (f"{FC2}.in1.to_layout", "to_layout") and inserted.ns > 0
    # the inserted op's time is device time the per-op deltas do not hold
    assert d.device_delta_ns == pytest.approx(sum(op.delta_ns for op in d.ops) + inserted.ns)
    back = diff(sessions, tuned, plain)
    assert back.removed == (inserted,) and back.inserted == ()
    assert back.device_delta_ns == pytest.approx(-d.device_delta_ns)


def test_layout_and_tile_changes(sessions, mlp):
    plain = mlp()
    d = diff(sessions, plain, mlp(f"{FC1}=row_major"))
    assert {op.name: op.changes for op in d.ops} == {FC1: (output("layout", "tile", "row_major"),), FC2: ()}
    assert [op.name for op in d.inserted] == [f"{FC2}.in0.to_layout"]  # FC2 reads tiles
    d = diff(sessions, plain, mlp(f"{FC1}=tile#16x32"))
    # the output's tiles, and the activation retiled to match (by a to_layout)
    assert {op.name: op.changes for op in d.ops}[FC1] == (
        output("tile", "32x32", "16x32"),
        change("tile", "32x32", "16x32", operand=0),
    )
    assert [op.name for op in d.inserted] == [f"{FC1}.in0.to_layout", f"{FC2}.in0.to_layout"]


def test_runs_of_other_models_or_targets_are_compared_with_a_warning(sessions, mlp, tiny_path):
    plain = mlp()
    assert diff(sessions, plain, mlp(f"{FC1}=l1")).warnings == ()
    other = execute(sessions, tiny_path).run_id
    (warning,) = diff(sessions, plain, other).warnings
    assert warning.startswith(f"different models: run {plain} is {MLP}, run {other} is {tiny_path} (source sha256 ")
    edited = execute(sessions, tiny_path, source_text=open(tiny_path).read() + "\n// edited\n").run_id
    (warning,) = diff(sessions, other, edited).warnings
    assert warning.startswith(f"the source of {tiny_path} differs between run {other} and run {edited}")
    blackhole = mlp(target="blackhole_p150")
    (warning,) = diff(sessions, plain, blackhole).warnings
    assert warning == f"different targets: run {plain} ran on wormhole_n150, run {blackhole} on blackhole_p150"
    retuned = mlp(target_source=target_text("wormhole_n150")[0] + "\n# edited\n")
    (warning,) = diff(sessions, plain, retuned).warnings
    assert warning.startswith(
        f"target wormhole_n150 differs between run {plain} and run {retuned} (description sha256 "
    )
    assert len(diff(sessions, other, blackhole).warnings) == 2


def test_runs_under_other_settings_say_which(sessions, mlp):
    plain = mlp()
    assert diff(sessions, plain, mlp(f"{FC1}=l1")).settings == ()
    other = mlp(dispatch="trace", policy="greedy-l1", l1_usage_cap=0.5)
    assert diff(sessions, plain, other).settings == (
        SettingChange("dispatch", "host", "trace"),
        SettingChange("policy", "dram-interleaved", "greedy-l1"),
        SettingChange("l1_usage_cap", "0.8", "0.5"),
    )


def test_a_missing_run(sessions):
    a = store(sessions, ("fc1", 100.0, "dram", "8x8"))
    with pytest.raises(RunNotFound, match=f"no run with id {a + 1}"):
        diff(sessions, a, a + 1)
    with pytest.raises(RunNotFound):
        diff(sessions, a + 1, a)


def test_each_delta_carries_both_bands_and_says_when_it_is_inside_them(sessions):
    """The model's error on a change: both predictions' bands, taken as independent."""
    a = store(
        sessions, ("big", 100e3, "dram", "8x8", 0.1), ("small", 10e3, "dram", "8x8", 0.5), ("known", 5e3, "l1", "8x8")
    )
    b = store(
        sessions, ("big", 50e3, "dram", "8x8", 0.1), ("small", 9e3, "dram", "8x8", 0.5), ("known", 6e3, "l1", "8x8")
    )
    with sessions() as s:
        found = {op.name: op for op in diff_runs(s, a, b).ops}
    assert found["big"].error_ns == pytest.approx(math.hypot(10e3, 5e3))
    assert not found["big"].within_error  # 50 us gained, +- 11.2 us: real
    assert found["small"].error_ns == pytest.approx(math.hypot(5e3, 4.5e3))
    assert found["small"].within_error  # 1 us gained, +- 6.7 us: inside the model's error
    assert found["known"].error_ns is None and not found["known"].within_error
