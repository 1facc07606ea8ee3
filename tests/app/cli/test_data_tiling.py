"""Data-tiling on the command line: `run`, `show` and `check` take `--data-tiling`, a run stores
it, `diff` names it with the packs it inserted, an overrides file carries it, and an op's inner
tiles are an override."""

from __future__ import annotations

import json

from .invoke import cli

MODEL = "zoo:bert-base?layers=1&seq=128"


def test_a_data_tiled_run_packs_its_matmuls_and_its_weights_at_load(capsys, db_url):
    code, out, _ = cli(capsys, "run", MODEL, "--target", "x86_avx512", "--data-tiling", "--db", db_url, "--json")
    assert code == 0
    run = json.loads(out)
    kinds = {op["name"]: op["type"] for op in run["ops"]}
    ff1 = "encoder.layer.0.intermediate.dense.matmul"
    assert kinds[ff1] == "mmt4d" and kinds[f"{ff1}.set_encoding_lhs"] == "pack"
    assert kinds[f"{ff1}.unset_encoding"] == "unpack"
    # the weights' packs run once, when the model loads: in load_ops, not in the step
    loaded = {op["name"] for op in run["load_ops"]}
    assert f"{ff1}.set_encoding_rhs" in loaded and f"{ff1}.set_encoding_rhs" not in kinds
    code, out, _ = cli(capsys, "run", MODEL, "--target", "x86_avx512", "--db", db_url)
    assert code == 0 and "data-tiling" not in out.splitlines()[0]
    code, out, _ = cli(capsys, "diff", "last~1", "last", "--db", db_url)
    assert code == 0
    assert "settings: data_tiling True->False" in out
    # each matmul's activation pack and result unpack: a CPU's tensors lie row-major
    assert "removed (only in run 1): 12 ops" in out and "set_encoding_lhs" in out


def test_show_prints_the_packs_at_the_layout_level(capsys):
    code, out, _ = cli(capsys, "show", MODEL, "--target", "wormhole_n150", "--data-tiling", "--level", "layout")
    assert code == 0
    assert '"ts.mmt4d"' in out and '"ts.pack"' in out and 'inner_tiles = "array<i64: 32, 32, 32>"' in out
    code, out, _ = cli(capsys, "show", MODEL, "--target", "wormhole_n150", "--level", "graph", "--data-tiling")
    assert "#iree_encoding.encoding<operand_index = 0 : index, op_type = matmul" in out


def test_an_overrides_file_carries_data_tiling_and_inner_tiles(capsys, tmp_path, db_url):
    ff1 = "encoder.layer.0.intermediate.dense.matmul"
    path = tmp_path / "tiles.json"
    path.write_text(
        json.dumps({"version": 1, "data_tiling": True, "overrides": [{"op": ff1, "inner_tiles": [8, 8, 1]}]})
    )
    code, out, _ = cli(capsys, "check", MODEL, "--target", "x86_avx512", "--overrides", str(path))
    assert code == 0, out
    code, out, _ = cli(
        capsys, "run", MODEL, "--target", "x86_avx512", "--overrides", str(path), "--db", db_url, "--json"
    )
    assert code == 0
    (outcome,) = json.loads(out)["overrides"]
    assert (outcome["spec"], outcome["status"]) == (f"{ff1}=inner_tiles#8x8x1", "applied")
    # without data-tiling there is no data-tiled matmul to take them: rejected, with the reason
    code, out, err = cli(capsys, "check", MODEL, "--target", "x86_avx512", "--override", f"{ff1}=inner_tiles#8x8x1")
    assert code == 1 and "data-tiled matmul" in out


def test_inner_tiles_past_the_limit_are_one_line(capsys):
    code, _, err = cli(capsys, "show", MODEL, "--data-tiling", "--override", "x=inner_tiles#2048x16x1")
    assert code == 2 and "inner_tiles#2048x16x1" in err and len(err.strip().splitlines()) == 1
