"""The Python API: what the `tilescope` command does, as functions that return the compiler's and
the workbench's own records. Parameters are named as the command's options are, and a default of
None is the command's default.

Importing any tilescope module runs the package's __init__, which imports this module: so it
imports nothing heavy itself, and each function imports the compiler, the database or the web app
when it is called."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec, TypeVar, Union

from tilescope.compiler.errors import TilescopeError
from tilescope.arguments import dispatch_mode, options, target_ref

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from tilescope.app.workbench.diff import Comparison
    from tilescope.app.workbench.runs import RunResult
    from tilescope.compiler.frontend.mlir_import import ImportedModel
    from tilescope.compiler.pipeline.compilation import Compilation
    from tilescope.compiler.pipeline.op_override import OpOverride, OverrideOutcome
    from tilescope.compiler.sim.simulator import SimResult

    # one override or several: the command line's `OP=PARAMS` strings, or records
    Overrides = Union[str, OpOverride, Sequence[Union[str, OpOverride]]]
    # a stored run: its id, `last` or `last~N` as the command line takes them, or what `run` returned
    RunRef = Union[int, str, RunResult]

P = ParamSpec("P")
R = TypeVar("R")


def one_line_errors(function: Callable[P, R]) -> Callable[P, R]:
    """`function`, failing on bad input with a TilescopeError whose message is one line naming the
    cause, raised from here: not the database's or the file system's own error, and not a
    traceback through the compiler to where the input was found wrong."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except TilescopeError as err:
            raise err.with_traceback(None) from None
        except Exception as err:
            reason = _reason(err)
            if reason is None:  # not the user's input: a fault, with its traceback
                raise
            raise TilescopeError(reason) from None

    return wrapper


def _reason(err: Exception) -> str | None:
    """One line for an error bad input causes beyond the compiler (a database, a file), else None."""
    import sys

    from tilescope.perfdb.errors import DatabaseError, RunNotFound

    if isinstance(err, (DatabaseError, RunNotFound)):
        return str(err)
    sqlalchemy = sys.modules.get("sqlalchemy.exc")  # loaded if a database was used: only then can it fail
    if sqlalchemy is not None and isinstance(err, sqlalchemy.SQLAlchemyError):
        return f"database: {str(getattr(err, 'orig', None) or err).strip().splitlines()[0]}"
    if isinstance(err, OSError):
        return f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)
    return None


@one_line_errors
def load(model: object, example_inputs: object = None, *, dtype: str | None = None) -> ImportedModel:
    """The model at the `input` level: an .mlir path (`file.mlir#func` picks a function), a
    shipped example by file name (`ffn.mlir`), a zoo model (`zoo:bert-base?layers=2`), a
    PyTorch model (needs `tilescope[torch]`): an nn.Module with its `example_inputs` (a tensor or
    a tuple), an ExportedProgram, a `.pt2` file of torch.export.save, or `model.py:build` (a
    function returning a module and its inputs), or a JAX function with its example arguments
    (needs `tilescope[jax]`). Their ops keep their lines of Python; `dtype` (`bf16`, `f32`,
    `f16`) makes a PyTorch model's floats that type, as `model.to(torch.bfloat16)` would."""
    if not isinstance(model, str):
        from tilescope.compiler.frontend.python_models import import_python_model

        return import_python_model(model, example_inputs, dtype)
    from tilescope.app.cli.torch_refs import is_torch_ref, load_torch_ref

    if is_torch_ref(model):
        return load_torch_ref(model, dtype)
    from tilescope.compiler.frontend.model_refs import load_model

    return load_model(model)


@one_line_errors
def run(
    model: object,
    example_inputs: object = None,
    target: str | None = None,
    overrides: Overrides = (),
    *,
    dtype: str | None = None,
    policy: str | None = None,
    dispatch: str | None = None,
    data_tiling: bool = False,
    label: str = "",
    db: str | None = None,
) -> RunResult:
    """`load`, then compile, simulate and store in the command line's database (or `db`), as
    `tilescope run` does: `tilescope.run(module, example_inputs, target="wormhole_n150")`. Its
    `ops` each carry their `name` (a PyTorch model's module path and call) and `source`."""
    from tilescope.compiler.frontend.mlir_import import ImportedModel

    imported = model if isinstance(model, ImportedModel) else load(model, example_inputs, dtype=dtype)
    return open_db(db).run(
        imported, target, overrides, policy=policy, dispatch=dispatch, data_tiling=data_tiling, label=label
    )


@one_line_errors
def compile(
    model: str | ImportedModel,
    target: str | None = None,
    overrides: Overrides = (),
    *,
    policy: str | None = None,
    l1_usage_cap: float | None = None,
    data_tiling: bool = False,
) -> Compilation:
    """`model` (a reference, or what `load` returned) compiled for `target` (a built-in name or a
    .toml path; wormhole_n150 by default) with `overrides`, under the layout `policy` and the
    share of L1 tensors may use. Every level is kept (`levels`, `mlir(level)`), and so is each
    override's outcome (`override_outcomes`): applied, adjusted or rejected, with the reason.
    A model compiled again with other overrides is compiled incrementally, as the page does."""
    from tilescope.app.workbench.runs import compile_cached

    ref, text = _ref_and_text(model)
    given = options(overrides, policy, l1_usage_cap, data_tiling=data_tiling)
    return compile_cached(ref, target_ref(target), given, text)


@one_line_errors
def simulate(compilation: Compilation, dispatch: str | None = None) -> SimResult:
    """`compilation`'s kernel level run on its target: per-op timings (`ops`, `total_ns`), the
    ops run once at load (`load_ops`, `load_ns`), and the timeline's zones and counters. `dispatch`
    is `host` (one launch per op, the default) or `trace` (a captured trace)."""
    from tilescope.compiler.sim.simulator import simulate as run_kernels

    return run_kernels(compilation.kernel, compilation.target, dispatch_mode(dispatch))


@one_line_errors
def open_db(db: str | None = None) -> Database:
    """The database runs are stored in: any SQLAlchemy URL (`sqlite:///runs.db`,
    `postgresql+psycopg://user@host/tilescope`), by default the command line's ($TILESCOPE_DB,
    else the embedded one). Its schema is upgraded to the newest, runs kept."""
    from tilescope.perfdb.engine import open_db as connect
    from tilescope.perfdb.engine import session_factory

    return Database(db, session_factory(connect(db)))


@dataclass(frozen=True)
class Database:
    """An open database: store runs, compare them, and serve the explorer on them."""

    url: str | None  # as given to open_db: None for the command line's default
    sessions: sessionmaker[Session]

    @one_line_errors
    def run(
        self,
        model: str | ImportedModel,
        target: str | None = None,
        overrides: Overrides = (),
        *,
        policy: str | None = None,
        l1_usage_cap: float | None = None,
        dispatch: str | None = None,
        data_tiling: bool = False,
        label: str = "",
        keep_going: bool = False,
    ) -> RunResult:
        """Compile, simulate and store, as `tilescope run` does; the result holds the `run_id`,
        the `compilation` and the simulation (`sim`). A rejected override stores nothing and
        raises, unless `keep_going`."""
        from tilescope.app.workbench.runs import execute

        ref, text = _ref_and_text(model)
        result = execute(
            self.sessions,
            ref,
            target_ref(target),
            options(overrides, policy, l1_usage_cap, dispatch, data_tiling),
            label=label,
            source_text=text,
            keep_going=keep_going,
        )
        if result.run_id is None:
            raise _refused(result.rejected)
        return result

    @one_line_errors
    def store(
        self,
        compilation: Compilation,
        sim: SimResult,
        *,
        label: str = "",
        target: str | None = None,
        keep_going: bool = False,
    ) -> int:
        """Store what `compile` and `simulate` made, as one run; returns its id. `target` is how
        the target was asked for, needed only for a target file (its path). A rejected override
        stores nothing and raises, unless `keep_going`."""
        from tilescope.app.workbench.runs import new_run
        from tilescope.compiler.pipeline.op_override import REJECTED
        from tilescope.perfdb.store import save_run

        rejected = [o for o in compilation.override_outcomes if o.status == REJECTED]
        if rejected and not keep_going:
            raise _refused(rejected)
        if sim.target != compilation.target.name:
            raise TilescopeError(
                f"the simulation ran on {sim.target}, the compilation is for {compilation.target.name}"
            )
        target_ref, target_source = _target_of(compilation, target)
        new = new_run(
            compilation,
            sim,
            compilation.model.ref,
            target_ref,
            target_source,
            policy=compilation.policy,
            **_compiled_with(compilation),
            label=label,
        )
        with self.sessions() as session:
            return save_run(session, new)

    @one_line_errors
    def diff(self, a: RunRef, b: RunRef) -> Comparison:
        """Run `b` against run `a`, op by op, as `tilescope diff A B` reports it: `.diff` holds the
        runs' `times`, per-op deltas with what changed (`ops`), the ops in one run only, the
        settings and overrides that differ; `.devices` each device's step; `.to_json()` is
        `tilescope diff --json`."""
        from tilescope.app.workbench.diff import compare

        with self.sessions() as session:
            return compare(session, self._run_id(session, a), self._run_id(session, b))

    def _run_id(self, session: Session, ref: RunRef) -> int:
        from tilescope.app.workbench.runs import RunResult

        if isinstance(ref, RunResult):
            if ref.run_id is None:
                raise TilescopeError("that run() was never stored (an override was rejected): it has no run to compare")
            return ref.run_id
        if isinstance(ref, int) and not isinstance(ref, bool):
            return ref
        if isinstance(ref, str):
            return _resolved(session, ref)
        # the type, not the value: a stray object's repr can run to megabytes
        raise TilescopeError(f"a {type(ref).__name__} is not a run: give a run id, last, last~N or what run() returned")

    @one_line_errors
    def explore(
        self, model: str | None = None, target: str | None = None, *, host: str = "127.0.0.1", port: int | None = None
    ) -> None:
        """Serve the explorer on this database, as `tilescope serve` does, until interrupted:
        opened on `model` (zoo:mlp by default), compiled and stored if it has no run yet, on
        http://HOST:PORT (port $TILESCOPE_PORT, else 8050)."""
        from tilescope.app.cli.options import EXAMPLE_MODEL
        from tilescope.app.cli.serving import port_from_env
        from tilescope.app.web.server import serve

        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
            raise TilescopeError(f"port {port!r} is not a port number (1-65535)")
        serve(
            db_url=self.url,
            model_ref=model or EXAMPLE_MODEL,
            target=target_ref(target),
            host=host,
            port=port if port is not None else port_from_env(),
        )

    def close(self) -> None:
        """Give the database's connections back; the handle is not used after."""
        self.sessions.kw["bind"].dispose()


def _ref_and_text(model: str | ImportedModel) -> tuple[str, str | None]:
    """A model reference, and the text it was read from when it is a model already imported."""
    if isinstance(model, str):
        from tilescope.app.cli.torch_refs import is_torch_ref

        if not is_torch_ref(model):
            return model, None
        model = load(model)  # a PyTorch model's file: imported, then compiled as its MLIR text
    from tilescope.compiler.frontend.mlir_import import ImportedModel

    if isinstance(model, ImportedModel):
        from tilescope.app.workbench.runs import keep_imported

        keep_imported(model)  # compiled as it is, not parsed again from its text
        return model.ref, model.text
    raise TilescopeError(f"{type(model).__name__} is not a model: give a model reference or what load() returned")


def _resolved(session: Session, text: str) -> int:
    """A run as the command line names it: its id, `last`, or `last~N`."""
    import argparse

    from tilescope.app.cli.options import resolve_run, run_ref

    try:
        return resolve_run(session, run_ref(text))
    except argparse.ArgumentTypeError as err:
        raise TilescopeError(str(err)) from None


def _target_of(compilation: Compilation, target: str | None) -> tuple[str, str]:
    """How the compilation's target is asked for, and its description: `target`, else its name,
    which must describe the target compiled for (a target file's path is not kept with it)."""
    from tilescope.compiler.targets.catalog import load_target, target_text

    ref = target or compilation.target.name
    source = target_text(ref)[0]
    if repr(load_target(ref, source)) != repr(compilation.target):
        raise TilescopeError(f"target {ref!r} is not the one compiled for: give store(..., target=) its file's path")
    return ref, source


def _compiled_with(compilation: Compilation) -> dict:
    """What a run stores of how it was compiled beyond the policy: the L1 usage cap and the
    overrides, as `run` stores them."""
    from tilescope.overrides import format_item

    made = compilation.options
    return {
        "l1_usage_cap": made.l1_usage_cap,
        "data_tiling": made.data_tiling,
        "overrides": [format_item(o) for o in made.overrides],
    }


def _refused(rejected: Sequence[OverrideOutcome]) -> TilescopeError:
    said = "; ".join(f"override {o.spec!r} rejected: {o.reason}" for o in rejected)
    return TilescopeError(f"{said}; run not stored (keep_going=True stores it anyway)")
