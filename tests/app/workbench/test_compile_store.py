"""Large compilations kept on disk: a restarted server reads a big model's compilation back
instead of compiling it again, and never reads one another compiler or model made."""

from __future__ import annotations

import pytest

from app.workbench import compile_store, runs
from app.workbench.compile_store import KEEP, CompileStore
from compiler.models import load_model, read_source
from compiler.pipeline import compile_model
from compiler.target import load_target
from overrides import parse_item

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
    key = store.key(REF, "text", "wormhole", (), "dram-interleaved", 0.9)
    store.keep(key, compiled).join()
    back = store.load(key)
    assert back is not compiled and all(back.mlir(level) == compiled.mlir(level) for level in compiled.levels)
    tuned = store.key(
        REF, "text", "wormhole", (parse_item("mlp.layer.0.fc1.matmul=l1:interleaved"),), "dram-interleaved", 0.9
    )
    assert tuned != key and store.load(tuned) is None
    other = CompileStore(tmp_path)
    other.version = "another compiler"
    assert other.key(REF, "text", "wormhole", (), "dram-interleaved", 0.9) != key


def test_a_small_compilation_is_not_kept(tmp_path, compiled):
    assert CompileStore(tmp_path).keep("k", compiled) is None and not list(tmp_path.iterdir())


def test_a_file_that_does_not_read_back_is_removed_and_compiled_instead(tmp_path, capsys):
    (tmp_path / "k.pickle").write_bytes(b"\x80\x05 truncated")
    assert CompileStore(tmp_path).load("k") is None and not (tmp_path / "k.pickle").exists()
    assert "did not read back" in capsys.readouterr().err


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
        tuned = runs.compile_cached(REF, "wormhole_n150", [parse_item("mlp.layer.0.fc1.matmul=l1:interleaved")])
        # the re-run built on it: the same model, and its graph level taken, not made again
        assert tuned.model is again.model and tuned.levels["graph"] is again.levels["graph"]
    finally:
        runs.keep_compilations_in(None)
        _forget()


def test_a_compilation_that_cannot_be_written_leaves_nothing_behind(tmp_path, small_is_large, capsys):
    unwritable = compile_model(load_model(REF), load_target("wormhole_n150"))
    unwritable.kernel.meta["hook"] = lambda: None  # pickle cannot write a function made here
    CompileStore(tmp_path).keep("k", unwritable).join()
    assert not list(tmp_path.iterdir()) and "could not keep a compilation" in capsys.readouterr().err


def test_printed_text_is_not_kept_with_a_compilation(tmp_path, compiled, small_is_large):
    """The MLIR text is a cache that request threads fill while a copy is written: never pickled."""
    compiled.mlir("kernel")
    store = CompileStore(tmp_path)
    store.keep("k", compiled).join()
    assert store.load("k")._printed == {} and compiled._printed
