"""The Python API, `import tilescope`: what each function returns, what it stores, that it stays light
to import, and that bad input is one TilescopeError line raised from the API, not from deep inside."""

from __future__ import annotations

import subprocess
import sys
import traceback
import urllib.request
from pathlib import Path

import pytest

import tilescope
from tilescope.app.workbench.runs import RunResult
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.sim.simulator import SimResult
from tilescope.perfdb.runs import get_run, list_runs

from .app.web import serving

MODEL = "ffn.mlir"  # a shipped example: two matmuls
OVERRIDE = "ffn.fc1=8x8:l1:block_sharded"
API = Path(tilescope.__file__).parent / "api.py"
# what `import tilescope` must not load: the MLIR bindings, numpy, the database, the web app
HEAVY = ("dash", "numpy", "sqlalchemy", "iree", "tilescope.app", "tilescope.perfdb", "tilescope.compiler.frontend")


@pytest.fixture
def db(sqlite_url):
    opened = tilescope.open_db(sqlite_url)
    yield opened
    opened.close()


@pytest.mark.parametrize("statement", ["import tilescope", "import tilescope.compiler.ir.tiles"])
def test_importing_tilescope_loads_nothing_heavy(statement):
    code = f"import sys; {statement}; print(*sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    names = loaded.stdout.split()
    assert "tilescope.api" in names
    assert not [m for m in names if m.startswith(HEAVY)], [m for m in names if m.startswith(HEAVY)]


def test_the_records_are_named_on_the_package():
    assert (tilescope.ImportedModel, tilescope.Compilation, tilescope.SimResult) == (
        ImportedModel,
        Compilation,
        SimResult,
    )
    assert (tilescope.OpOverride, tilescope.RunResult) == (OpOverride, RunResult)
    assert set(tilescope.__all__) >= {"load", "compile", "simulate", "open_db", "Database", "TilescopeError"}
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        tilescope.nothing  # noqa: B018


def test_the_packages_example_runs(sqlite_url, monkeypatch, capsys):
    """The example in `help(tilescope)`, but for its last line, which serves until interrupted."""
    example = [line[4:] for line in tilescope.__doc__.splitlines() if line.startswith("    ")]
    assert example[0] == "import tilescope" and example[-1].startswith("db.explore()")
    monkeypatch.setenv("TILESCOPE_DB", sqlite_url)
    exec("\n".join(example[:-1]), {})
    assert "ffn.fc1" in capsys.readouterr().out
    db = tilescope.open_db(sqlite_url)
    with db.sessions() as session:
        assert [run.label for run in list_runs(session)] == ["fc1 in L1", ""]
    db.close()


def test_load_compile_and_simulate_return_the_compilers_records():
    model = tilescope.load(MODEL)
    assert isinstance(model, ImportedModel) and model.ref == MODEL
    compiled = tilescope.compile(model, overrides=[OVERRIDE])
    assert isinstance(compiled, Compilation) and compiled.target.name == "wormhole_n150"
    assert [(o.spec, o.status) for o in compiled.override_outcomes] == [(OVERRIDE, "applied")]
    layout = compiled.levels["layout"]
    fc1 = layout.tensors[layout.op("ffn.fc1").outputs[0]].layout
    assert (fc1.memory, fc1.memory_layout, fc1.grid) == ("l1", "block_sharded", (8, 8))
    assert "block_sharded" in compiled.mlir("layout") and "block_sharded" not in compiled.mlir("graph")
    sim = tilescope.simulate(compiled, "trace")
    assert isinstance(sim, SimResult) and sim.dispatch == "trace" and [o.name for o in sim.ops]
    # a reference compiles as the model it names, an override record as its text
    record = tilescope.compile(MODEL, overrides=OpOverride("ffn.fc1", grid=(8, 8), memory="l1"))
    assert [o.status for o in record.override_outcomes] == ["applied"]
    assert tilescope.simulate(tilescope.compile(MODEL)).total_ns != sim.total_ns


def test_run_stores_a_run_as_the_command_line_does(db):
    base = db.run(MODEL)
    tuned = db.run(MODEL, "blackhole_p150", [OVERRIDE], policy="greedy-l1", dispatch="trace", label="fc1 in L1")
    assert isinstance(tuned, RunResult) and tuned.run_id == base.run_id + 1
    with db.sessions() as session:
        stored = get_run(session, tuned.run_id)
        assert (stored.model_ref, stored.target_ref, stored.policy, stored.dispatch, stored.label) == (
            MODEL,
            "blackhole_p150",
            "greedy-l1",
            "trace",
            "fc1 in L1",
        )
        assert stored.overrides == [OVERRIDE] and stored.total_ns == tuned.sim.total_ns


def test_store_keeps_what_compile_and_simulate_made_as_run_would(db):
    """A compilation stored is the same run `run` stores of the same settings: the cap, the
    overrides (a record given without its text too), the policy and the dispatch."""
    settings = dict(policy="optimizer", l1_usage_cap=0.5)
    record = OpOverride("ffn.fc1", grid=(8, 8), memory="l1", memory_layout="block_sharded")
    compiled = tilescope.compile(MODEL, "wormhole_n150", [record], **settings)
    stored_id = db.store(compiled, tilescope.simulate(compiled, "trace"), label="by hand")
    ran = db.run(MODEL, "wormhole_n150", [OVERRIDE], dispatch="trace", **settings)
    columns = (
        *("model_id", "model_ref", "target_id", "target_ref", "policy", "l1_usage_cap", "dispatch", "data_tiling"),
        *("overrides", "override_outcomes", "total_ns", "device_ns", "load_ns", "tracks", "mesh"),
    )
    with db.sessions() as session:
        by_hand, by_run = get_run(session, stored_id), get_run(session, ran.run_id)
        assert by_hand.label == "by hand"
        assert {c: getattr(by_hand, c) for c in columns} == {c: getattr(by_run, c) for c in columns}


def test_data_tiling_compiles_packs_and_a_run_stores_it(db):
    compiled = tilescope.compile("zoo:bert-base?layers=1&seq=128", "x86_avx512", data_tiling=True)
    kinds = {op.kind for op in compiled.levels["layout"].ops}
    assert {"pack", "mmt4d", "unpack"} <= kinds and "matmul" not in kinds
    stored_id = db.store(compiled, tilescope.simulate(compiled))
    ran = db.run("zoo:bert-base?layers=1&seq=128", "x86_avx512", data_tiling=True)
    with db.sessions() as session:
        assert get_run(session, stored_id).data_tiling and get_run(session, ran.run_id).data_tiling


def test_store_of_a_target_file_needs_its_path(db, tmp_path):
    builtin = Path(tilescope.compile(MODEL).target.name)  # wormhole_n150
    chip = tmp_path / "my_chip.toml"
    text = (API.parents[1] / "compiler" / "targets" / "chips" / f"{builtin}.toml").read_text()
    chip.write_text(text.replace("clock_hz = 1.0e9", "clock_hz = 1.2e9"))
    compiled = tilescope.compile(MODEL, str(chip))
    sim = tilescope.simulate(compiled)
    with pytest.raises(tilescope.TilescopeError, match="give store"):
        db.store(compiled, sim)
    run_id = db.store(compiled, sim, target=str(chip))
    with db.sessions() as session:
        assert get_run(session, run_id).target_ref == str(chip)


def test_diff_takes_runs_as_ids_results_or_as_the_command_line_names_them(db):
    base, tuned = db.run(MODEL), db.run(MODEL, overrides=[OVERRIDE])
    found = db.diff(base, tuned).diff
    assert (found.a, found.b) == (base.run_id, tuned.run_id)
    assert found.times.b.total_ns == tuned.sim.total_ns
    assert (found.overrides.a, found.overrides.b) == ((), (OVERRIDE,))
    assert db.diff(base.run_id, tuned.run_id).diff == found == db.diff("last~1", "last").diff


def test_a_rejected_override_stores_nothing_unless_keep_going(db):
    refused = "ffn.fc1=64x64:l1:block_sharded"
    with pytest.raises(tilescope.TilescopeError, match=r"rejected: .*run not stored \(keep_going=True"):
        db.run(MODEL, overrides=[refused])
    compiled = tilescope.compile(MODEL, overrides=[refused])
    with pytest.raises(tilescope.TilescopeError, match="run not stored"):
        db.store(compiled, tilescope.simulate(compiled))
    with db.sessions() as session:
        assert list_runs(session) == []
    kept = db.run(MODEL, overrides=[refused], keep_going=True)
    assert [o.status for o in kept.rejected] == ["rejected"] and kept.run_id is not None


BAD_INPUT = {
    "no such file": (lambda db: tilescope.load("missing.mlir"), "missing.mlir: no such file"),
    "unknown zoo model": (lambda db: tilescope.load("zoo:nothing"), "unknown zoo model 'zoo:nothing'"),
    "not a model": (lambda db: tilescope.compile(3), "int is not a model"),
    "unknown target": (lambda db: tilescope.compile(MODEL, "no_chip"), "unknown target 'no_chip'"),
    "unknown op": (lambda db: tilescope.compile(MODEL, overrides="nothing=l1"), "no such op"),
    "malformed override": (lambda db: tilescope.compile(MODEL, overrides=["ffn.fc1"]), "expected OP=PARAMS"),
    "override twice": (lambda db: db.run(MODEL, overrides=["ffn.fc1=l1", "ffn.fc1=dram"]), "given twice"),
    "not an override": (lambda db: db.run(MODEL, overrides=[3]), "3 is not an override"),
    "unknown policy": (lambda db: tilescope.compile(MODEL, policy="fastest"), "unknown policy 'fastest'"),
    "cap": (lambda db: tilescope.compile(MODEL, l1_usage_cap=1.5), r"l1_usage_cap must be in \(0, 1\], got 1.5"),
    "unknown dispatch": (lambda db: db.run(MODEL, dispatch="fast"), "unknown dispatch 'fast'"),
    "data_tiling": (lambda db: tilescope.compile(MODEL, data_tiling="yes"), "data_tiling must be True or False"),
    "no run": (lambda db: db.diff(1, 2), "no run with id 1"),
    "no last run": (lambda db: db.diff("last", "last"), "last: "),
    "not a run": (lambda db: db.diff("first", 1), "'first' is not a run"),
    "a float": (lambda db: db.diff(1.5, 1), "a float is not a run"),
    "port": (lambda db: db.explore(port=70000), "port 70000 is not a port number"),
    "database directory": (lambda db: tilescope.open_db("sqlite:////no/such/dir/runs.db"), "does not exist"),
}


@pytest.mark.parametrize("call, message", BAD_INPUT.values(), ids=BAD_INPUT)
def test_bad_input_is_one_line_raised_from_the_api(db, call, message):
    with pytest.raises(tilescope.TilescopeError, match=message) as caught:
        call(db)
    assert "\n" not in str(caught.value)
    frames = {Path(frame.filename).name for frame in traceback.extract_tb(caught.value.__traceback__)}
    # not from inside the compiler or the database: the API's own modules
    assert frames <= {Path(__file__).name, API.name, "arguments.py"}, frames
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_file_that_is_no_database_is_one_line(tmp_path):
    (tmp_path / "notes.db").write_text("not a database\n" * 100)
    with pytest.raises(tilescope.TilescopeError, match="not a database"):
        tilescope.open_db(f"sqlite:///{tmp_path / 'notes.db'}")


# `serve --port P --db URL --model M`, as tests.app.web.serving starts a server, said through the API
EXPLORE = (
    "import sys, tilescope; given = dict(zip(sys.argv[2::2], sys.argv[3::2]));"
    "tilescope.open_db(given['--db']).explore(given['--model'], port=int(given['--port']))"
)


def test_explore_serves_the_explorer_on_the_database(sqlite_url, tmp_path):
    url, proc = serving.start(MODEL, sqlite_url, logs=tmp_path, program=(sys.executable, "-c", EXPLORE))
    try:
        with urllib.request.urlopen(url, timeout=60) as page:
            assert page.status == 200 and "tilescope" in page.read().decode()
    finally:
        output = proc.stop()
    assert "Traceback" not in output, output[-3000:]
    db = tilescope.open_db(sqlite_url)
    with db.sessions() as session:
        assert [run.model_ref for run in list_runs(session)] == [MODEL]  # the opening model, stored
    db.close()


# --- PyTorch models --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_layers():
    """The three families' layers in plain torch, imported once (bf16)."""
    torch = pytest.importorskip("torch")
    from tests.compiler.frontend import plain_torch

    torch.manual_seed(0)
    return {
        "bert": tilescope.load(plain_torch.BertLayer(), plain_torch.bert_inputs(), dtype="bf16"),
        "llama": tilescope.load(plain_torch.LlamaDecoderLayer(), plain_torch.llama_inputs(), dtype="bf16"),
        "resnet": tilescope.load(plain_torch.Bottleneck(), plain_torch.bottleneck_inputs(), dtype="bf16"),
    }


@pytest.mark.parametrize("target", ["wormhole_n150", "blackhole_p150", "mtia_v1", "corsair"])
def test_pytorch_layers_are_stored_on_every_family_of_target(db, torch_layers, target):
    for family, model in torch_layers.items():
        run = tilescope.run(model, target=target, dispatch="trace", db=db.url, label=family)
        assert run.run_id is not None and run.ops, family
        # every op knows the line of plain_torch.py that made it, and keeps it stored
        assert all(op.source.startswith("plain_torch.py:") for op in run.ops), family
        with db.sessions() as session:
            stored = get_run(session, run.run_id)
            assert {op.code_line for op in stored.ops} == {op.code_line for op in run.ops}


def test_a_module_needs_its_example_inputs_and_a_bad_one_is_one_line():
    torch = pytest.importorskip("torch")
    with pytest.raises(tilescope.TilescopeError, match=r"^Linear: a module needs example inputs to export it$"):
        tilescope.load(torch.nn.Linear(4, 4))
    with pytest.raises(tilescope.TilescopeError, match=r"^Linear: torch.export failed: "):
        tilescope.load(torch.nn.Linear(4, 4), torch.randn(3, 5))
    with pytest.raises(tilescope.TilescopeError, match=r"dtype 'int8': a PyTorch model's floats can be made"):
        tilescope.load(torch.nn.Linear(4, 4), torch.randn(3, 4), dtype="int8")
