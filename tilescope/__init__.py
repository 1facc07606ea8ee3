"""tilescope: compile, simulate, trace and diff ML models for AI accelerators.

The Python API, for a notebook or a script; each call does what the `tilescope` command of the
same name does, with parameters named as its options:

    import tilescope
    model = tilescope.load("ffn.mlir")                      # the `input` level: an ImportedModel
    compiled = tilescope.compile(model, "blackhole_p150", ["ffn.fc1=8x8:l1:block_sharded"])
    print(compiled.mlir("layout"))                          # any level as MLIR text
    sim = tilescope.simulate(compiled)                      # per-op timings: a SimResult

    db = tilescope.open_db()                                # the command line's database
    base = db.run(model, "blackhole_p150")                  # compile, simulate, store: a RunResult
    tuned = db.store(compiled, sim, label="fc1 in L1")      # what was compiled and simulated: a run id
    print(db.diff(base, tuned).diff.ops[0])                 # op by op, as `tilescope diff` shows
    db.explore()                                            # the explorer on it, until interrupted

A PyTorch module with its example inputs, or a JAX function with its example arguments, loads the
same way (`tilescope.load(module, inputs)`), and `tilescope.run(module, inputs, target=...)` stores
its run: its `ops` are named by module path and carry the line of Python that made them (`source`).

Overrides are the command line's `OP=PARAMS` strings or OpOverride records; targets a built-in name
or a .toml path; runs an id, `last`, `last~N` or what `db.run` returned. Bad input raises
TilescopeError, whose message is one line naming the cause.

`import tilescope` loads none of the compiler, the database or the web app: each function loads
what it needs when called (the records below too, when first named)."""

from tilescope.api import Database, compile, load, open_db, run, simulate
from tilescope.compiler.errors import TilescopeError

# the records the API returns and takes, by the module that declares each
_RECORDS = {
    "ImportedModel": "tilescope.compiler.frontend.mlir_import",
    "Compilation": "tilescope.compiler.pipeline.compilation",
    "SimResult": "tilescope.compiler.sim.result",
    "OpOverride": "tilescope.compiler.pipeline.op_override",
    "RunResult": "tilescope.app.workbench.runs",
    "Comparison": "tilescope.app.workbench.diff",
}

__all__ = ["Database", "TilescopeError", "compile", "load", "open_db", "run", "simulate", *_RECORDS]


def __getattr__(name: str):
    if name not in _RECORDS:
        raise AttributeError(f"module 'tilescope' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_RECORDS[name]), name)
