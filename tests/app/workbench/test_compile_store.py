"""Large compilations kept on disk: a restarted server reads a big model's compilation back
instead of compiling it again, and never reads one another compiler or model made."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path

import pytest

from tilescope.app.workbench import compile_store
from tilescope.app.workbench import runs
from tilescope.app.workbench.compile_store import KEEP, CompileStore
from tilescope.app.workbench.private_files import NotPrivate
from tilescope.compiler.frontend.model_refs import load_model, read_source
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import parse_item

REF = "zoo:mlp?layers=2"


@pytest.fixture
def small_is_large(monkeypatch):
    """Keep any compilation, however small: a 20,000-op model takes too long for a unit test."""
    monkeypatch.setattr(compile_store, "MIN_OPS", 0)


@pytest.fixture(scope="module")
def compiled():
    return compile_model(load_model(REF), load_target("wormhole_n150"))


def test_a_kept_compilation_reads_back_the_same_and_other_inputs_miss(tmp_path, compiled, small_is_large):
    store = CompileStore(tmp_path)
    key = store.key(REF, "text", "wormhole", CompileOptions(l1_usage_cap=0.9))
    store.keep(key, compiled).join()
    back = store.load(key)
    assert back is not compiled and all(back.mlir(level) == compiled.mlir(level) for level in compiled.levels)
    tuned = store.key(
        REF, "text", "wormhole", CompileOptions([parse_item("mlp.layer.0.fc1.matmul=l1:interleaved")], l1_usage_cap=0.9)
    )
    traced = store.key(REF, "text", "wormhole", CompileOptions(l1_usage_cap=0.9, dispatch="trace"))
    assert traced == key  # the dispatch is the simulator's: the compilation is the same
    assert tuned != key and store.load(tuned) is None
    other = CompileStore(tmp_path)
    other.version = "another compiler"
    assert other.key(REF, "text", "wormhole", CompileOptions(l1_usage_cap=0.9)) != key


def test_a_small_compilation_is_not_kept(tmp_path, compiled):
    assert CompileStore(tmp_path).keep("k", compiled) is None and [p.name for p in tmp_path.iterdir()] == ["key"]


def test_a_file_that_does_not_read_back_is_removed_and_compiled_instead(tmp_path, capsys):
    (tmp_path / "k.pickle").write_bytes(b"\x80\x05 truncated")
    assert CompileStore(tmp_path).load("k") is None and not (tmp_path / "k.pickle").exists()
    assert "was not read back" in capsys.readouterr().err


def test_the_least_recently_used_go_past_keep(tmp_path, compiled, small_is_large):
    store = CompileStore(tmp_path)
    for i in range(KEEP + 2):
        store.keep(f"k{i}", compiled).join()
    assert sorted(p.stem for p in tmp_path.glob("*.pickle")) == sorted(f"k{i}" for i in range(2, KEEP + 2))


def _forget() -> None:
    """What a new process has: nothing in memory."""
    runs._compile.cache_clear()
    runs._LATEST.clear()
    runs._IMPORTED.clear()


def test_a_restarted_server_reads_the_compilation_back_and_re_runs_build_on_it(tmp_path, small_is_large, monkeypatch):
    runs.keep_compilations_in(str(tmp_path))
    try:
        _forget()
        first = runs.compile_cached(REF, "wormhole_n150")
        runs._ON_DISK.flush()
        assert len(list(tmp_path.glob("*.pickle"))) == 1
        _forget()
        with monkeypatch.context() as m:
            m.setattr(runs, "compile_model", lambda *a, **k: pytest.fail("compiled again"))
            again = runs.compile_cached(REF, "wormhole_n150")
        assert again is not first and again.mlir("kernel") == first.mlir("kernel")
        text = read_source(REF)
        assert runs._IMPORTED.get((REF, text)) is again.model  # not imported again
        tuned = runs.compile_cached(
            REF, "wormhole_n150", CompileOptions([parse_item("mlp.layer.0.fc1.matmul=l1:interleaved")])
        )
        # the re-run built on it: the same model, and its graph level taken, not made again
        assert tuned.model is again.model and tuned.levels["graph"] is again.levels["graph"]
    finally:
        runs.keep_compilations_in(None)
        _forget()


def test_a_compilation_that_cannot_be_written_leaves_nothing_behind(tmp_path, small_is_large, capsys):
    unwritable = compile_model(load_model(REF), load_target("wormhole_n150"))
    unwritable.kernel.meta["hook"] = lambda: None  # pickle cannot write a function made here
    CompileStore(tmp_path).keep("k", unwritable).join()
    assert [p.name for p in tmp_path.iterdir()] == ["key"] and "could not keep a compilation" in capsys.readouterr().err


def test_printed_text_is_not_kept_with_a_compilation(tmp_path, compiled, small_is_large):
    """The MLIR text is a cache that request threads fill while a copy is written: never pickled."""
    compiled.mlir("kernel")
    store = CompileStore(tmp_path)
    store.keep("k", compiled).join()
    assert store.load("k")._printed == {} and compiled._printed


class _Planted:
    """What another local user may leave in a cache: a pickle whose loading calls a function of its
    choice. Here the function only makes a marker file, so the test shows whether it ran."""

    def __init__(self, marker) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_a_planted_pickle_is_never_run_and_the_model_compiles(tmp_path, capsys):
    """Anyone who knows the model can work out its file's name: the key is a hash of public inputs
    (the compiler's own source among them). The server loads it as a page asks for the model's run.
    Planted 0600 and this user's, as if its maker could write in the directory: only the
    signature is left to tell."""
    cache = tmp_path / "compilations"
    runs.keep_compilations_in(str(cache))
    try:
        _forget()
        key = runs._ON_DISK.key(REF, read_source(REF), repr(load_target("wormhole_n150")), CompileOptions())
        marker = tmp_path / "the planted code ran"
        planted = cache / f"{key}.pickle"
        planted.write_bytes(pickle.dumps(_Planted(marker)))
        planted.chmod(0o600)
        compiled = runs.compile_cached(REF, "wormhole_n150")  # the path a page's run summary takes
        assert not marker.exists()
        assert compiled.kernel.ops and not planted.exists()
        said = capsys.readouterr().err
        assert said == "tilescope: a kept compilation was not read back (not signed by this server); compiling\n"
    finally:
        runs.keep_compilations_in(None)
        _forget()


def test_a_kept_compilation_is_private_to_the_servers_user(tmp_path, compiled, small_is_large):
    """It holds the model's source."""
    store = CompileStore(tmp_path / "compilations")
    store.keep("k", compiled).join()
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "compilations").iterdir()}
    assert modes == {"k.pickle": 0o600, "key": 0o600}
    assert stat.S_IMODE((tmp_path / "compilations").stat().st_mode) == 0o700


def test_a_file_moved_to_another_key_is_not_read(tmp_path, compiled, small_is_large):
    """Each file is signed with its key: one compilation cannot stand in for another."""
    store = CompileStore(tmp_path)
    store.keep("k", compiled).join()
    (tmp_path / "k.pickle").rename(tmp_path / "other.pickle")
    assert store.load("other") is None and not (tmp_path / "other.pickle").exists()


def test_a_store_in_another_users_directory_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can give a directory to another user")
    (tmp_path / "compilations").mkdir()
    os.chown(tmp_path / "compilations", 65534, 65534)
    with pytest.raises(NotPrivate, match="compilations: owned by uid 65534, not this user"):
        CompileStore(tmp_path / "compilations")


def test_a_store_left_open_to_others_is_narrowed_and_signs_with_a_new_key(tmp_path, compiled, small_is_large):
    """Whoever could read the key could sign a pickle of their own: what it signed is read no more."""
    CompileStore(tmp_path).keep("k", compiled).join()
    tmp_path.chmod(0o755)
    (tmp_path / "key").chmod(0o644)
    store = CompileStore(tmp_path)
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700 and stat.S_IMODE((tmp_path / "key").stat().st_mode) == 0o600
    assert store.load("k") is None and not (tmp_path / "k.pickle").exists()
    store.keep("k", compiled).join()
    assert store.load("k") is not None


def test_a_page_opening_a_new_model_says_each_stage_and_its_view_reads_the_childs_compilation_back(
    tmp_path, small_is_large, monkeypatch, sqlite_url
):
    """The child that stores a new model's first run keeps its compilation on disk before it ends;
    the run's view reads it back here rather than compile the model in a second child (a 100k-op
    model's page waited 6 s for that child)."""
    from tilescope.app.workbench.explorer import Explorer
    from tilescope.app.workbench.model_access import ModelAccess
    from tilescope.perfdb.engine import open_db, session_factory

    ref = "zoo:mlp?layers=2&width=64&hidden=80"  # compiled by no other test: nothing of it in memory
    runs.keep_compilations_in(str(tmp_path))
    try:
        explorer = Explorer(session_factory(open_db(sqlite_url)), access=ModelAccess(max_ops=1000))
        said: list[str] = []
        run_id = explorer.ensure_run(ref, "wormhole_n150", on_stage=said.append)
        assert said[:3] == ["reading the model", "importing 10 ops", "compiling"]
        assert said[3].startswith("simulating ") and said[4:] == ["storing the run"]
        assert len(list(tmp_path.glob("*.pickle"))) == 1  # written before the child ended
        with monkeypatch.context() as m:
            m.setattr(ModelAccess, "isolated", lambda *a, **k: pytest.fail("compiled in a child again"))
            m.setattr(runs, "compile_model", lambda *a, **k: pytest.fail("compiled again"))
            view = explorer.view(run_id)
            again = explorer.view(run_id).compilation
        fresh = compile_model(load_model(ref), load_target("wormhole_n150"))
        assert view.compilation.mlir("kernel") == fresh.mlir("kernel") and again is view.compilation
    finally:
        runs.keep_compilations_in(None)
        _forget()


def test_a_kept_compilation_over_a_lowered_max_ops_is_refused_unread(tmp_path, small_is_large, sqlite_url):
    """A server restarted with a lower --max-ops on the same caches: the compilation the child
    kept says its model's op count before its pickle, so it is not read, and the view is refused
    in one line as a compile would be."""
    from tilescope.app.workbench.explorer import Explorer
    from tilescope.app.workbench.model_access import ModelAccess
    from tilescope.compiler.errors import TilescopeError
    from tilescope.perfdb.engine import open_db, session_factory

    ref = "zoo:mlp?layers=3&width=64&hidden=112"
    runs.keep_compilations_in(str(tmp_path))
    try:
        sessions = session_factory(open_db(sqlite_url))
        run_id = Explorer(sessions, access=ModelAccess(max_ops=1000)).ensure_run(ref, "wormhole_n150")
        assert len(list(tmp_path.glob("*.pickle"))) == 1
        _forget()  # a restart
        with pytest.raises(TilescopeError, match=r"15 ops is over this server's limit of 5"):
            Explorer(sessions, access=ModelAccess(max_ops=5)).view(run_id)
        assert Explorer(sessions, access=ModelAccess(max_ops=15)).view(run_id).compilation.kernel.ops
    finally:
        runs.keep_compilations_in(None)
        _forget()
