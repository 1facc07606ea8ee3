"""Runs from the app and the CLI: a re-run after an override starts from the model's last
compilation and simulation, and stores what a run from nothing stores."""

from __future__ import annotations

from tilescope.compiler.ir.meta import KERNEL
from tilescope.overrides import parse_item
from tilescope.compiler.pipeline.options import CompileOptions

from tilescope.app.workbench import runs
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import op_records
from tilescope.perfdb.schema import Run
from tilescope.perfdb.timeline import zones


def _stored(sessions, run_id):
    with sessions() as s:
        ops = [(o.name, o.start_ns, o.duration_ns, o.bound, o.why, o.memory, o.grid) for o in op_records(s, run_id)]
        return ops, sorted(zones(s, run_id))


def _forget():
    runs._compile.cache_clear()
    runs._LATEST.clear()
    runs._COSTS.clear()


def test_a_rerun_after_an_override_stores_what_a_run_from_nothing_stores(db_url):
    sessions = session_factory(open_db(db_url))
    ref, item = "zoo:bert-base?layers=2", "encoder.layer.0.attention.self.query.matmul=l1:interleaved"
    _forget()
    base = runs.execute(sessions, ref)
    rerun = runs.execute(sessions, ref, options=CompileOptions([parse_item(item)]), parent_id=base.run_id)
    base_kernels = {op.name: op.meta[KERNEL] for op in base.compilation.kernel.ops}
    reused = [
        op
        for op in rerun.compilation.kernel.ops
        if op.meta[KERNEL] is not None and op.meta[KERNEL] is base_kernels[op.name]
    ]
    assert len(reused) > len(base_kernels) // 2  # the incremental path ran
    _forget()
    fresh = runs.execute(sessions, ref, options=CompileOptions([parse_item(item)]))
    assert not any(op.meta[KERNEL] is base_kernels[op.name] for op in fresh.compilation.kernel.ops if op.meta[KERNEL])
    assert _stored(sessions, rerun.run_id) == _stored(sessions, fresh.run_id)
    assert _stored(sessions, rerun.run_id) != _stored(sessions, base.run_id)


def test_models_and_targets_kept_for_reruns_are_bounded():
    """Kept (tests/app/workbench/test_kept.py) bounds both: _KEPT models or targets each."""
    for i in range(runs._KEPT + 3):
        runs._COSTS.keep(("model", i), i)
    assert len(runs._COSTS) == runs._KEPT and runs._COSTS.get(("model", 0)) is None
    assert runs._COSTS.get(("model", runs._KEPT + 2)) == runs._KEPT + 2
    assert runs._LATEST.size == runs._KEPT
    runs._COSTS.clear()


def test_a_run_under_another_dispatch_is_simulated_from_the_same_compilation(db_url):
    """The dispatch is the simulator's alone: a run of the same options but for it compiles
    nothing again, and is timed apart."""
    sessions = session_factory(open_db(db_url))
    _forget()
    host = runs.execute(sessions, "zoo:mlp?layers=1", options=CompileOptions(policy="greedy-l1"))
    traced = runs.execute(sessions, "zoo:mlp?layers=1", options=CompileOptions(policy="greedy-l1", dispatch="trace"))
    assert traced.compilation is host.compilation
    assert (host.sim.dispatch, traced.sim.dispatch) == ("host", "trace") and traced.sim.total_ns < host.sim.total_ns
    with sessions() as s:
        stored = [s.get(Run, r.run_id) for r in (host, traced)]
        assert [(r.dispatch, r.policy) for r in stored] == [("host", "greedy-l1"), ("trace", "greedy-l1")]


def test_a_compilation_and_its_simulation_hold_no_reference_cycles_so_a_frozen_one_is_still_freed():
    """long_lived freezes a kept compilation's objects out of the cycle collector's reach: one
    dropped later must go by its reference counts alone."""
    import gc
    import weakref

    from tilescope.compiler.frontend.model_refs import load_model
    from tilescope.compiler.pipeline.options import GREEDY_L1
    from tilescope.compiler.pipeline.stages import compile_model
    from tilescope.compiler.sim.simulator import simulate
    from tilescope.compiler.targets.catalog import load_target

    target, model = load_target("t3k"), load_model("zoo:llama-3.2-1b?layers=1&seq=64")
    base = compile_model(model, target, CompileOptions(policy=GREEDY_L1))
    base_sim = simulate(base.kernel, target, "trace")
    gc.collect()
    gc.disable()
    try:
        item = parse_item(f"{base.kernel.ops[len(base.kernel.ops) // 2].name}=dram")
        compilation = compile_model(model, target, CompileOptions((item,), policy=GREEDY_L1), since=base)
        sim = simulate(compilation.kernel, target, "trace", known=base_sim.costs)
        # what it is made of, each part of its own levels (the graph level is the base's)
        parts = [compilation, sim, *(compilation.levels[level] for level in ("layout", "kernel"))]
        for level in ("layout", "kernel"):
            parts += compilation.levels[level].ops
        reused = {id(op.meta.get(KERNEL)) for op in base.kernel.ops}  # the base's, which it keeps
        parts += [op.meta[KERNEL] for op in compilation.kernel.ops if id(op.meta.get(KERNEL)) not in reused]
        parts += compilation.levels["layout"].tensors.values()
        gone = [weakref.ref(part) for part in parts]
        del compilation, sim, parts
        alive = [ref() for ref in gone if ref() is not None]
        assert not alive, alive[:3]  # freed by their reference counts alone
    finally:
        gc.enable()


def test_only_a_large_kept_compilation_is_frozen(monkeypatch):
    import gc

    compilation = runs.compile_cached("zoo:mlp?layers=1", "wormhole_n150")
    frozen = gc.get_freeze_count()
    try:
        runs.long_lived(compilation)
        assert gc.get_freeze_count() == frozen  # 7 ops: not worth it
        monkeypatch.setattr(runs, "LONG_LIVED_OPS", len(compilation.kernel.ops))
        runs.long_lived(compilation)
        assert gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
