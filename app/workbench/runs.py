"""One run: compile a model with overrides, simulate it, store it. Shared by the CLI and the UI."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from sqlalchemy.orm import Session, sessionmaker

from tilescope.compiler.ir.meta import MESH
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.frontend.model_refs import load_model, read_source
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.op_override import REJECTED, OverrideOutcome
from tilescope.compiler.pipeline.options import DEFAULT_L1_USAGE_CAP, DEFAULT_OPTIONS, POLICIES, CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.records import OpTiming
from tilescope.compiler.sim.simulator import KernelCosts, SimResult, simulate
from tilescope.compiler.targets.catalog import load_target, target_text
from tilescope.compiler.targets.chip import Target
from tilescope.overrides import check_op_names, format_item, parse_item
from tilescope.perfdb.schema import Run
from tilescope.perfdb.records import CounterColumns, LoadOp, NewRun, ZoneColumns
from tilescope.perfdb.store import save_run

from tilescope.app.workbench.compile_store import CompileStore
from tilescope.app.workbench.defaults import DEFAULT_TARGET
from tilescope.app.workbench.kept import Kept


def no_progress(stage: str) -> None:
    """The `on_stage` of a caller that shows no progress."""


@dataclass
class RunResult:
    run_id: int | None  # None when nothing was stored (a rejected override without keep_going)
    compilation: Compilation
    sim: SimResult
    options: CompileOptions

    @property
    def rejected(self) -> list[OverrideOutcome]:
        return [o for o in self.compilation.override_outcomes if o.status == REJECTED]

    @property
    def ops(self) -> tuple[OpTiming, ...]:
        """Each op's timing, in the step's order: `name`, `kind`, `duration_ns`, `source`, ..."""
        return tuple(self.sim.ops)


def compile_cached(
    ref: str,
    target: str,
    options: CompileOptions = DEFAULT_OPTIONS,
    text: str | None = None,
    target_source: str | None = None,
) -> Compilation:
    """Compile `ref` under `options`.

    Compilation is deterministic, so results are cached on the model text, the target and the
    options the compiler reads: the UI gets any stored run's levels again for free, and an edited
    file is recompiled.
    """
    source = read_source(ref) if text is None else text
    if options.policy not in POLICIES:
        raise TilescopeError(f"unknown policy {options.policy!r}; known: {', '.join(POLICIES)}")
    # one compile at a time: the views a re-run refreshes ask for its compilation at once, and
    # all but the first should find it cached rather than compile it again beside it
    with _COMPILING:
        return _compile(ref, source, load_target(target, target_source), options.compiler_part)


@dataclass(frozen=True)
class CompileInputs:
    """What compile_cached compiles (its arguments), for a compilation made in another process."""

    ref: str
    target: str
    options: CompileOptions = DEFAULT_OPTIONS
    text: str | None = None
    target_source: str | None = None

    def compile(self) -> Compilation:
        return compile_cached(**vars(self))

    def key(self) -> tuple:
        """The model's key in this process's caches: its reference, its text, and the target as
        the object loaded here."""
        source = read_source(self.ref) if self.text is None else self.text
        return (self.ref, source, load_target(self.target, self.target_source))


def builds_on(inputs: CompileInputs) -> bool:
    """Whether this process has compiled the model on the target already, so that compile_cached
    would build on that compilation (a few ops changed) rather than import and compile anew."""
    return _LATEST.get(inputs.key()[:3]) is not None


def adopt(compilation: Compilation, inputs: CompileInputs) -> Compilation:
    """`compilation`, which another process (an isolated child) made of `inputs`, kept as if
    compile_cached had made it here: the model's next compile builds on it."""
    ref, source, target = inputs.key()
    compilation.target = target  # compile_model and the simulator reuse work for the same target object
    with _COMPILING:
        _IMPORTED.keep((ref, source), compilation.model)
        _keep_latest((ref, source, target), compilation)
    return compilation


def keep_imported(model: ImportedModel) -> None:
    """`model`, imported elsewhere (tilescope.load), kept as if compile_cached had imported it: a
    compile of it then neither parses its text again nor makes another model object of it."""
    with _COMPILING:
        _IMPORTED.keep((model.ref, model.text), model)


def finish_keeping() -> None:
    """Wait for the compilations being written to disk: a child process that made one writes it
    before it exits."""
    if _ON_DISK is not None:
        _ON_DISK.flush()


_COMPILING = threading.Lock()


def _unlock_in_child() -> None:
    """A background job forked while another thread compiled, or kept a simulation's costs, must
    not inherit a held lock: nothing in the job would release it."""
    global _COMPILING, _KEEPING
    _COMPILING = threading.Lock()
    _KEEPING = threading.Lock()


os.register_at_fork(after_in_child=_unlock_in_child)


def _model(ref: str, text: str):
    return _IMPORTED.of((ref, text), lambda: load_model(ref, text))


def imported(ref: str, text: str) -> ImportedModel:
    """The model `text` imports to, as compile_cached imports it (once: kept for its compiles)."""
    with _COMPILING:
        return _model(ref, text)


def kept_on_disk(inputs: CompileInputs, max_ops: int | None = None) -> Compilation | None:
    """The compilation of `inputs` kept on disk (by this process or another, an isolated child
    say) if its model has at most `max_ops` ops, now kept here as if compile_cached had made it;
    None if there is none. Read outside the compile lock: a 100k-op one takes 2 s."""
    ref, text, target = inputs.key()
    options = inputs.options.compiler_part
    with _COMPILING:
        latest = _latest(ref, text, target, options)
    if latest is not None or _ON_DISK is None:
        return latest
    kept = _ON_DISK.load(_ON_DISK.key(ref, text, repr(target), options), max_ops)
    if kept is None:
        return None
    with _COMPILING:  # made or read here meanwhile by another thread: that one, which others may hold
        return _latest(ref, text, target, options) or _kept_here(ref, text, target, kept)


def is_kept(inputs: CompileInputs) -> bool:
    """Whether a compilation of `inputs` is kept on disk (it may not read back)."""
    ref, text, target = inputs.key()
    return _ON_DISK is not None and _ON_DISK.has(_ON_DISK.key(ref, text, repr(target), inputs.options.compiler_part))


def _latest(ref: str, text: str, target: Target, options: CompileOptions) -> Compilation | None:
    """The model's latest compilation here, if it was made with `options` (adopted, or read back)."""
    latest = _LATEST.get((ref, text, target))
    return latest if latest is not None and latest.options == options else None


def _kept_here(ref: str, text: str, target: Target, kept: Compilation) -> Compilation:
    """A compilation read back from disk, kept as if made here: its model and target are the
    ones from now on, so the next compile builds on it."""
    kept.target = target  # compile_model and the simulator reuse work for the same target object
    _IMPORTED.keep((ref, text), kept.model)
    _keep_latest((ref, text, target), kept)
    return kept


@lru_cache(maxsize=64)
def _compile(ref: str, text: str, target: Target, options: CompileOptions) -> Compilation:
    key = (ref, text, target)
    latest = _latest(ref, text, target, options)
    if latest is not None:
        return latest
    store = _ON_DISK
    disk_key = store.key(ref, text, repr(target), options) if store else ""  # hashes the model's text: once
    kept = store.load(disk_key) if store else None
    if kept is not None:
        return _kept_here(ref, text, target, kept)
    model = _model(ref, text)
    check_op_names(options.overrides, model.graph)
    # incremental: what the last compilation of this model on this target did for the ops an
    # override leaves alone is taken from it (compile_model's `since`)
    compilation = compile_model(model, target, options, since=_LATEST.get(key))
    _keep_latest(key, compilation)
    if store:
        store.keep(disk_key, compilation)
    return compilation


def _keep_latest(key: tuple, compilation: Compilation) -> None:
    _LATEST.keep(key, compilation)
    long_lived(compilation)


def long_lived(compilation: Compilation) -> None:
    """A large compilation kept for its model's views and re-runs lives as long as the process
    may: its objects (millions at 100k ops) go where Python's cycle collector no longer scans
    them (gc.freeze), or every re-run after it pays a full scan of them (1.2 s of a 100k-op
    re-run's 2.1 s compile). A compilation holds no reference cycles (a test checks), so one
    dropped later is still freed by its reference counts. The freeze takes every object alive
    then, though: the young garbage is collected first, and what dies frozen in a cycle (a
    figure another thread was building, say) is collected with one full scan every THAW_EVERY
    freezes."""
    if len(compilation.kernel.ops) < LONG_LIVED_OPS:
        return
    global _frozen
    with _FREEZING:
        gc.collect(1)
        _frozen += 1
        if _frozen >= THAW_EVERY:
            gc.unfreeze()
            gc.collect()
            _frozen = 0
        gc.freeze()


def keep_compilations_in(directory: str | None) -> None:
    """Keep large compilations in `directory` across restarts (None: in memory only)."""
    global _ON_DISK
    _ON_DISK = CompileStore(directory) if directory else None


_KEPT = 8  # models (or targets) kept in each
LONG_LIVED_OPS = 20_000  # kernel ops from which a kept compilation is frozen (long_lived)
THAW_EVERY = 8  # freezes between two full collections of what was frozen
_FREEZING = threading.Lock()
_frozen = 0  # freezes since the last full collection
_IMPORTED: Kept = Kept(16)  # imported models, by reference and text
_ON_DISK: CompileStore | None = None  # where large compilations outlive the process
_LATEST: Kept[Compilation] = Kept(_KEPT)  # per model and target, the latest compilation
_COSTS: Kept[KernelCosts] = Kept(_KEPT)  # per model, target and dispatch, the latest simulation's costs
_KEEPING = threading.Lock()  # for _COSTS (_LATEST is written under _COMPILING)


def execute(
    sessions: sessionmaker[Session],
    model_ref: str,
    target: str = DEFAULT_TARGET,
    options: CompileOptions = DEFAULT_OPTIONS,
    *,
    label: str = "",
    parent_id: int | None = None,
    source_text: str | None = None,
    target_source: str | None = None,
    keep_going: bool = False,
    on_stage: Callable[[str], None] = no_progress,
) -> RunResult:
    """Compile under `options`, simulate and store. `source_text` and `target_source` re-run a
    stored run from the model text and target description it kept, whatever has happened to the
    files since. `on_stage` hears each stage as it starts, for a progress line."""
    if target_source is None:
        target_source = target_text(target)[0]
    on_stage("compiling")
    compilation = compile_cached(model_ref, target, options, source_text, target_source)
    on_stage(f"simulating {len(compilation.kernel.ops):,} ops")
    # ops whose kernels did not change since the last simulation of this model keep their timing
    key = (compilation.model.source_hash, compilation.target.name, options.dispatch)
    with _KEEPING:
        known = _COSTS.get(key)
    sim = simulate(compilation.kernel, compilation.target, options.dispatch, known)
    with _KEEPING:  # re-runs run in threads side by side
        _COSTS.keep(key, sim.costs)
    result = RunResult(None, compilation, sim, options)
    if result.rejected and not keep_going:
        return result
    new = new_run(
        compilation,
        sim,
        model_ref,
        target,
        target_source,
        policy=options.policy,
        l1_usage_cap=options.l1_usage_cap,
        data_tiling=options.data_tiling,
        overrides=[format_item(o) for o in options.overrides],  # as text only where it is stored
        label=label,
        parent_id=parent_id,
    )
    on_stage("storing the run")
    with sessions() as session:
        result.run_id = save_run(session, new)
    return result


def baseline_options(options: CompileOptions) -> CompileOptions:
    """What a model's baseline run is made with: `options` with no overrides and the default L1 cap."""
    return replace(options, overrides=(), l1_usage_cap=DEFAULT_L1_USAGE_CAP)


def store_baseline(
    sessions: sessionmaker[Session],
    model_ref: str,
    target: str,
    options: CompileOptions = DEFAULT_OPTIONS,
    source_text: str | None = None,
    target_source: str | None = None,
    on_stage: Callable[[str], None] = no_progress,
) -> int:
    """Compile, simulate and store a model's first run under `options`' policy and dispatch, with
    no overrides and the default L1 cap whatever `options` holds (the baseline a model's runs are
    compared with is found by target, policy and dispatch alone); returns its id."""
    result = execute(
        sessions,
        model_ref,
        target,
        baseline_options(options),
        label="baseline",
        keep_going=True,
        source_text=source_text,
        target_source=target_source,
        on_stage=on_stage,
    )
    assert result.run_id is not None  # keep_going: stored whatever the overrides did
    return result.run_id


def new_run(
    compilation: Compilation, sim: SimResult, model_ref: str, target_ref: str, target_source: str, **run
) -> NewRun:
    """What perfdb stores of a compiled, simulated run."""
    model, z, c = compilation.model, sim.zones, sim.counters
    return NewRun(
        model_ref=model_ref,
        model_name=model.name,
        source_hash=model.source_hash,
        source_text=model.text,
        target=compilation.target.name,
        target_ref=target_ref,
        target_text=target_source,
        total_ns=sim.total_ns,
        device_ns=sim.device_ns,
        ops=sim.ops,
        zones=ZoneColumns(z.track_names(), z.name_list(), z.track, z.depth, z.name, z.start, z.end, z.op),
        counters=CounterColumns(c.track_names(), c.name_list(), c.track, c.name, c.t, c.value),
        dispatch=sim.dispatch,
        override_outcomes=[o.as_dict() for o in compilation.override_outcomes],
        load_ops=[LoadOp.of(o) for o in sim.load_ops],
        load_ns=sim.load_ns,
        mesh=compilation.kernel.meta[MESH].axes if MESH in compilation.kernel.meta else (),
        **run,
    )


def target_of(run: Run) -> str:
    """How a run's target was asked for (a built-in name or a file path); older runs kept the name."""
    return run.target_ref or run.target.name


def options_of(run: Run) -> CompileOptions:
    """What a stored run was compiled and simulated with, its overrides read from their text."""
    overrides = tuple(parse_item(item) for item in run.overrides)
    return CompileOptions(overrides, run.policy, run.l1_usage_cap, run.dispatch, bool(run.data_tiling))
