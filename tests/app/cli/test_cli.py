"""The `tilescope` CLI, in-process (app.cli.main) and as a real subprocess (python -m app.cli)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tilescope.app.cli import main
from tilescope.compiler.frontend.mlir_import import parse_module
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import list_runs, op_records

OP_KEYS = {"name", "type", "start_ns", "duration_ns", "flops", "bytes", "bound", "memory", "grid"}
RUN_KEYS = {"run_id", "label", "model", "target", "total_ns", "created_at"}


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = cli(capsys, "run", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def assert_one_error_line(code, err, *fragments):
    assert code != 0
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tilescope: error:")
    for fragment in fragments:
        assert re.search(fragment, lines[0]), (fragment, lines[0])
    return lines[0]


def stored(db_url):
    with session_factory(open_db(db_url))() as s:
        return [(r, {o.name: o for o in op_records(s, r.id)}) for r in list_runs(s)]


# --- run ------------------------------------------------------------------------------------------


def test_run_zoo_mlp_json(capsys, db_url):
    data = run_json(capsys, "zoo:mlp", "--db", db_url)
    assert isinstance(data["run_id"], int)
    assert data["model"] == "zoo:mlp" and data["target"] == "wormhole_n150"
    assert data["total_ns"] > 0
    assert len(data["ops"]) == 4  # per layer: fc1 (bias add and gelu fused in) and fc2 (bias add fused)
    for op in data["ops"]:
        assert OP_KEYS <= set(op)
        assert op["duration_ns"] > 0 and op["bound"] in ("compute", "dram", "l1", "noc", "balanced", "dispatch")
        assert {"achieved_flops", "pct_peak", "bandwidth", "dispatch_wait_ns"} <= set(op)
        assert op["memory"] == "dram" and op["grid"] == "8x8"
    first = data["ops"][0]
    assert (first["name"], first["type"]) == ("mlp.layer.0.fc1.matmul", "matmul")
    assert first["flops"] == 2 * 128 * 1024 * 4096 + 2 * 128 * 4096  # + the fused bias add and gelu
    assert data["total_ns"] == pytest.approx(data["ops"][-1]["start_ns"] + data["ops"][-1]["duration_ns"])
    # what was printed is what was stored
    ((run, ops),) = stored(db_url)
    assert run.id == data["run_id"] and run.total_ns == data["total_ns"]
    assert {name: o.duration_ns for name, o in ops.items()} == {o["name"]: o["duration_ns"] for o in data["ops"]}


def test_run_table_output(capsys, db_url, tiny_path):
    code, out, err = cli(capsys, "run", tiny_path, "--db", db_url, "--label", "plain")
    assert code == 0 and err == ""
    assert out.startswith("run 1 ")
    for name in ("matmul_0", "matmul_1"):
        assert re.search(rf"^{name}\s+", out, re.M)
    assert re.search(r"^total [\d.]+ us", out, re.M)


def test_override_changes_the_stored_run(capsys, db_url, model_file):
    path, names = model_file
    plain = run_json(capsys, path, "--db", db_url, "--label", "plain")
    tuned = run_json(capsys, path, "--db", db_url, "--override", "matmul_1=1x2:l1:block_sharded", "--label", "tuned")
    assert tuned["overrides"] == [
        {"op": "matmul_1", "spec": "matmul_1=1x2:l1:block_sharded", "status": "applied", "reason": ""}
    ]
    runs = {r.label: (r, ops) for r, ops in stored(db_url)}
    assert set(runs) == {"plain", "tuned"}
    plain_ops, tuned_ops = runs["plain"][1], runs["tuned"][1]
    assert list(plain_ops) == list(tuned_ops) == names
    assert tuned_ops["matmul_1"].duration_ns != plain_ops["matmul_1"].duration_ns
    assert (tuned_ops["matmul_1"].grid, tuned_ops["matmul_1"].memory) == ("1x2", "l1")
    assert runs["tuned"][0].overrides == ["matmul_1=1x2:l1:block_sharded"]
    assert runs["plain"][0].overrides == []

    code, out, _ = cli(capsys, "runs", "--db", db_url, "--json")
    assert code == 0
    listed = json.loads(out)
    assert [r["run_id"] for r in listed] == [tuned["run_id"], plain["run_id"]]
    for row in listed:
        assert RUN_KEYS <= set(row)
        assert row["model"] == path and row["target"] == "wormhole_n150"
    assert [r["label"] for r in listed] == ["tuned", "plain"]
    assert listed[1]["total_ns"] == plain["total_ns"]

    code, out, _ = cli(capsys, "runs", "--db", db_url)
    assert code == 0 and "tuned" in out and "plain" in out


def test_trace_dispatch(capsys, db_url, tiny_path):
    host = run_json(capsys, tiny_path, "--db", db_url)
    trace = run_json(capsys, tiny_path, "--db", db_url, "--dispatch", "trace")
    assert trace["dispatch"] == "trace" and host["dispatch"] == "host"
    assert trace["total_ns"] < host["total_ns"]
    assert trace["ops"][0]["start_ns"] == 0


EACH_DEVICE = re.compile(
    r"^each of (\d+) devices: compute ([\d.]+) us, collectives ([\d.]+) us "
    r"\(on the links; ([\d.]+) us of it under compute\), idle ([\d.]+) us$",
    re.M,
)


def test_a_run_over_several_devices_prints_each_devices_step(capsys, db_url):
    code, out, _ = cli(capsys, "run", "zoo:llama-3.2-1b?layers=1&seq=64&devices=8", "--target", "t3k", "--db", db_url)
    assert code == 0
    ((devices, compute, collectives, overlap, idle),) = EACH_DEVICE.findall(out)
    total = float(re.search(r"^total ([\d.]+) us", out, re.M).group(1))
    assert devices == "8" and float(collectives) > 0
    # the step, split: compute and collectives, less what overlapped, and idle
    assert float(compute) + float(collectives) - float(overlap) + float(idle) == pytest.approx(total, abs=0.3)
    code, out, _ = cli(capsys, "run", "zoo:mlp?layers=1", "--db", db_url)
    assert code == 0 and not EACH_DEVICE.search(out) and "each of" not in out  # one device: no such line


LOAD_LINE = re.compile(r"^load time \(const-eval, once per model load\): (\d+) ops?, ([\d.,]+) (ms|us|ns)$", re.M)


def test_run_prints_its_load_time_on_one_line_and_its_json_lists_the_load_ops(capsys, db_url):
    """A run whose compiler moved two ops to load time: one line for them under the step's total,
    and in the JSON, beside the step's ops (which no longer hold them)."""
    from tilescope.app.cli.runs import _print_table, _run_json
    from tilescope.app.workbench.load_time import duration_text
    from tilescope.app.workbench.runs import RunResult
    from tilescope.compiler.pipeline.options import CompileOptions
    from tests.perfdb.load_work import MLP, hoisted, simulated

    compilation, sim = simulated(MLP)
    step = {op.name for op in sim.ops}
    moved = {"mlp.layer.0.fc1.matmul", "mlp.layer.1.fc1.matmul"}
    sim = hoisted(sim, moved)
    result = RunResult(7, compilation, sim, CompileOptions())
    _print_table(result, MLP)
    out = capsys.readouterr().out
    (line,) = LOAD_LINE.findall(out)
    assert line == (str(len(sim.load_ops)), *duration_text(sim.load_ns).split()) and sim.load_ns > 0
    lines = out.splitlines()
    assert lines[lines.index(LOAD_LINE.search(out).group(0)) - 1].startswith("total ")
    assert not any(re.match(rf"^{re.escape(name)}\s", out, re.M) for name in moved)  # not in the step's table
    data = _run_json(result, MLP)
    assert data["load_ns"] == sim.load_ns
    assert [op["name"] for op in data["load_ops"]] == [op.name for op in sim.load_ops]
    assert moved <= {op["name"] for op in data["load_ops"]} and OP_KEYS <= set(data["load_ops"][0])
    assert {op["name"] for op in data["ops"]} == step - moved
    assert sum(op["duration_ns"] for op in data["load_ops"]) == pytest.approx(data["load_ns"])
    json.dumps(data)  # all of it JSON


def test_a_run_without_load_work_prints_no_load_line(capsys, db_url, tiny_path):
    data = run_json(capsys, tiny_path, "--db", db_url)
    code, out, _ = cli(capsys, "run", tiny_path, "--db", db_url)
    assert code == 0 and (data["load_ns"], data["load_ops"]) == (0.0, [])
    assert "load time" not in out


def test_runs_json_gives_each_runs_load_time(capsys, db_url):
    from tests.perfdb.load_work import store_hoisted

    sessions = session_factory(open_db(db_url))
    plain = run_json(capsys, "zoo:mlp?layers=2", "--db", db_url)
    loads, sim = store_hoisted(sessions, {"mlp.layer.0.fc1.matmul"})
    code, out, _ = cli(capsys, "runs", "--db", db_url, "--json")
    listed = {row["run_id"]: row["load_ns"] for row in json.loads(out)}
    assert code == 0 and listed == {plain["run_id"]: plain["load_ns"], loads: sim.load_ns}
    assert sim.load_ns > plain["load_ns"]


def test_a_model_with_weight_only_ops_prints_and_stores_its_load_time(capsys, db_url):
    """BERT's bias reshapes depend on weights alone: the compiler runs them once at load."""
    from tilescope.app.workbench.load_time import load_line
    from tilescope.perfdb.runs import get_run, load_ops
    from tilescope.perfdb.records import LoadOp

    ref = "zoo:bert-base?layers=1"
    data = run_json(capsys, ref, "--db", db_url)
    assert data["load_ops"] and data["load_ns"] > 0
    assert data["load_ns"] == pytest.approx(sum(op["duration_ns"] for op in data["load_ops"]))
    assert not {op["name"] for op in data["load_ops"]} & {op["name"] for op in data["ops"]}
    assert data["load_ns"] < data["total_ns"]  # once per load, apart from the step
    with session_factory(open_db(db_url))() as s:
        run = get_run(s, data["run_id"])
    assert run.load_ns == data["load_ns"] and run.total_ns == data["total_ns"]
    assert load_ops(run) == [
        LoadOp(
            name=op["name"],
            kind=op["type"],
            duration_ns=op["duration_ns"],
            bytes=op["bytes"],
            bound=op["bound"],
            memory=op["memory"],
        )
        for op in data["load_ops"]
    ]
    code, out, _ = cli(capsys, "run", ref, "--db", db_url)
    assert code == 0 and load_line(len(data["load_ops"]), data["load_ns"]) in out.splitlines()


def test_runs_on_an_empty_db(capsys, db_url):
    code, out, _ = cli(capsys, "runs", "--db", db_url, "--json")
    assert code == 0 and json.loads(out) == []


def test_db_from_env(capsys, tmp_path, monkeypatch, tiny_path):
    url = f"sqlite:///{tmp_path}/env.db"
    monkeypatch.setenv("TILESCOPE_DB", url)
    data = run_json(capsys, tiny_path)
    assert [r.id for r, _ in stored(url)] == [data["run_id"]]


# --- show -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", ["input", "graph", "layout", "kernel"])
def test_show_prints_each_level(capsys, model_file, level):
    path, names = model_file
    code, out, err = cli(capsys, "show", path, "--level", level)
    assert code == 0 and err == ""
    parse_module(out, level)
    assert "func.func @forward" in out
    if level == "input":
        assert '"ttir.matmul"' in out and "ts.level" not in out
    else:
        assert f'ts.level = "{level}"' in out
        for name in names:
            assert f'loc("{name}")' in out
    assert ("#ts.layout<" in out) == (level in ("layout", "kernel"))
    assert ('"ts.cores"' in out) == (level == "kernel")


def test_show_with_override(capsys, tiny_path):
    code, out, _ = cli(capsys, "show", tiny_path, "--level", "layout", "--override", "matmul_0=1x4:l1:block_sharded")
    assert code == 0
    assert '#ts.layout<l1, block_sharded, grid 1x4, f32, tile 32x32, addr 0x0>> loc("matmul_0")' in out


def test_show_default_level_is_graph(capsys):
    code, out, _ = cli(capsys, "show", "zoo:matmul:64x64x64")
    assert code == 0 and 'ts.level = "graph"' in out


# --- errors ---------------------------------------------------------------------------------------


def test_missing_file(capsys, db_url, tmp_path):
    code, _, err = cli(capsys, "run", str(tmp_path / "nope.mlir"), "--db", db_url)
    assert_one_error_line(code, err, "no such file", "nope.mlir")


def test_unparsable_mlir(capsys, db_url, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @forward(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %b : tensor<2xf32>\n}\n")
    code, _, err = cli(capsys, "run", str(bad), "--db", db_url)
    assert_one_error_line(code, err, re.escape(f"{bad}:2:10:"))
    code, _, err = cli(capsys, "show", str(bad))
    assert_one_error_line(code, err, r"bad\.mlir:\d+:\d+:")


def test_unknown_op_in_override(capsys, db_url, model_file):
    path, _ = model_file
    code, _, err = cli(capsys, "run", path, "--db", db_url, "--override", "matmul_l=2x2")
    assert_one_error_line(code, err, "'matmul_l=2x2': no such op", "matmul_1")
    assert stored(db_url) == []


def test_unknown_target(capsys, db_url, tiny_path):
    code, _, err = cli(capsys, "run", tiny_path, "--db", db_url, "--target", "nosuchchip")
    assert_one_error_line(code, err, "unknown target 'nosuchchip'", "wormhole_n150")


def test_bad_target_file(capsys, db_url, tiny_path, tmp_path):
    target = tmp_path / "t.toml"
    target.write_text('name = "x"\n')
    code, _, err = cli(capsys, "show", tiny_path, "--target", str(target))
    assert_one_error_line(code, err, "missing key")


def test_unknown_override_token(capsys, db_url, tiny_path):
    code, _, err = cli(capsys, "run", tiny_path, "--db", db_url, "--override", "matmul_1=2x2:turbo")
    assert_one_error_line(code, err, "unknown token 'turbo'")


def test_unknown_zoo_model(capsys, db_url):
    code, _, err = cli(capsys, "run", "zoo:nothing", "--db", db_url)
    assert_one_error_line(code, err, "unknown zoo model")


def test_unusable_database(capsys, tmp_path, tiny_path):
    (tmp_path / "junk.db").write_bytes(b"not sqlite at all " * 100)
    code, _, err = cli(capsys, "run", tiny_path, "--db", f"sqlite:///{tmp_path}/junk.db")
    assert_one_error_line(code, err, "not a database")


def test_bad_level_is_a_usage_error(capsys, tiny_path):
    with pytest.raises(SystemExit) as exit_:
        main(["show", tiny_path, "--level", "bogus"])
    assert exit_.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_rejected_override_stores_no_run(capsys, db_url, model_file):
    path, _ = model_file
    code, out, err = cli(capsys, "run", path, "--db", db_url, "--override", "matmul_1=2x2:lls")
    assert code == 1 and out == ""
    assert_one_error_line(code, err, "'matmul_1=2x2:lls' rejected", "'lls' not on wormhole_n150", "run not stored")
    assert stored(db_url) == []
    # several: one line each, then what they cost
    code, out, err = cli(
        capsys, "run", path, "--db", db_url, "--override", "matmul_1=2x2:lls", "--override", "matmul_0=99x99"
    )
    lines = err.strip().splitlines()
    assert (
        code == 1
        and len(lines) == 3
        and lines[-1] == "tilescope: error: 2 overrides rejected; run not stored (use --keep-going to store it anyway)"
    )
    assert stored(db_url) == []

    data = run_json(capsys, path, "--db", db_url, "--override", "matmul_1=2x2:lls", "--keep-going")
    (outcome,) = data["overrides"]
    assert outcome["status"] == "rejected" and "lls" in outcome["reason"]
    ((run, ops),) = stored(db_url)
    assert run.id == data["run_id"]
    assert run.override_outcomes[0]["status"] == "rejected"
    assert ops["matmul_1"].grid == "8x8"  # the default layout was kept


def test_rerun_after_the_file_changes_uses_the_new_text(capsys, db_url, tmp_path, tiny_path):
    model = tmp_path / "m.mlir"
    text = open(tiny_path).read()
    model.write_text(text)
    first = run_json(capsys, str(model), "--db", db_url)
    model.write_text(text.replace("ttir.relu", "ttir.softmax"))  # a softmax does not fuse
    second = run_json(capsys, str(model), "--db", db_url)
    assert [o["type"] for o in first["ops"]] == ["matmul", "matmul"]
    assert [o["type"] for o in second["ops"]] == ["matmul", "softmax", "matmul"]


def test_rerun_after_the_target_file_changes_uses_the_new_numbers(capsys, db_url, tmp_path, tiny_path):
    from tilescope.compiler.targets.catalog import BUILTIN_DIR

    target = tmp_path / "t.toml"
    source = (BUILTIN_DIR / "wormhole_n150.toml").read_text()
    target.write_text(source)
    slow = run_json(capsys, tiny_path, "--db", db_url, "--target", str(target))
    target.write_text(source.replace("host_ns = 100_000", "host_ns = 10"))
    fast = run_json(capsys, tiny_path, "--db", db_url, "--target", str(target))
    assert fast["total_ns"] < slow["total_ns"]


def test_model_with_op_attributes_runs(capsys, db_url, tmp_path):
    model = tmp_path / "softmax.mlir"
    model.write_text(
        "func.func @forward(%a: tensor<32x64xf32>) -> tensor<32x64xf32> {\n"
        '  %0 = "ttir.softmax"(%a) {dimension = 1 : si32} : (tensor<32x64xf32>) -> tensor<32x64xf32>\n'
        "  return %0 : tensor<32x64xf32>\n}\n"
    )
    code, _, err = cli(capsys, "run", str(model), "--db", db_url)
    assert code == 0, err


# --- as a real process ----------------------------------------------------------------------------


def tilescope(tmp_path, *argv):
    env = {**os.environ, "TILESCOPE_DB": f"sqlite:///{tmp_path}/proc.db"}
    return subprocess.run(
        [sys.executable, "-m", "tilescope.app.cli", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def test_process_missing_file(tmp_path):
    proc = tilescope(tmp_path, "run", "missing.mlir")
    assert_one_error_line(proc.returncode, proc.stderr, "missing.mlir: no such file")
    assert proc.stdout == ""


def test_process_unparsable_mlir(tmp_path):
    (tmp_path / "bad.mlir").write_text('func.func @forward() {\n  %0 = "ttir.relu"(\n}\n')
    proc = tilescope(tmp_path, "show", "bad.mlir", "--level", "kernel")
    assert_one_error_line(proc.returncode, proc.stderr, r"^tilescope: error: bad\.mlir:\d+:\d+: ")


def test_process_run_and_list(tmp_path, tiny_path):
    proc = tilescope(tmp_path, "run", tiny_path, "--json", "--override", "matmul_1=1x2:l1:block_sharded")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [o["name"] for o in data["ops"]] == ["matmul_0", "matmul_1"]
    listed = tilescope(tmp_path, "runs", "--json")
    assert listed.returncode == 0
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [data["run_id"]]


# --- every corpus file and zoo model at every level (the compiler issue's acceptance) ------------


def test_show_every_level_of_every_corpus_file_and_zoo_model(capsys, corpus):
    refs = [str(p) for p in sorted(corpus.glob("*.mlir"))] + [
        "zoo:mlp",
        "zoo:bert-base?layers=1",
        "zoo:llama-3.2-1b?layers=1",
        "zoo:llama-3.2-1b?mode=decode&layers=1",
        "zoo:resnet50?batch=1",
        "zoo:matmul:256x512x128",
    ]
    for ref in refs:
        for level in ("input", "graph", "layout", "kernel"):
            code, out, err = cli(capsys, "show", ref, "--level", level)
            assert code == 0, (ref, level, err)
            assert "func.func" in out and "Traceback" not in err
            if level != "input":
                assert f'ts.level = "{level}"' in out


def test_run_with_the_greedy_policy_is_stored_with_it(capsys, db_url, tiny_path):
    base = run_json(capsys, tiny_path, "--db", db_url)
    greedy = run_json(capsys, tiny_path, "--db", db_url, "--policy", "greedy-l1")
    assert (base["policy"], greedy["policy"]) == ("dram-interleaved", "greedy-l1")
    assert {o["name"]: o["memory"] for o in greedy["ops"]} == {"matmul_0": "l1", "matmul_1": "dram"}
    assert greedy["ops"][1]["duration_ns"] < base["ops"][1]["duration_ns"]  # reads its input from L1
    ((_, _), (run, _)) = sorted(stored(db_url), key=lambda r: r[0].id)
    assert run.policy == "greedy-l1"


# --- override files in every format (the overrides issue's acceptance) ---------------------------


def _twenty_overrides(corpus):
    """20 overrides of different kinds on ResNet-50's first ops of the graph level."""
    from tilescope.compiler.frontend.model_refs import load_model
    from tilescope.compiler.pipeline.op_override import OpOverride
    from tilescope.compiler.pipeline.stages import compile_model
    from tilescope.compiler.targets.catalog import load_target
    from tilescope.overrides.override_set import OverrideSet

    graph = compile_model(load_model(str(corpus / "resnet50_xla.mlir")), load_target("wormhole_n150")).levels["graph"]
    names = [op.name for op in graph.ops if op.kind in ("conv2d", "matmul")][:20]
    kinds = [  # what all three formats carry: tt-mlir and TT-Explorer read output layouts only
        dict(grid=(4, 4)),
        dict(memory="l1", memory_layout="height_sharded"),
        dict(dtype="bfp8"),
        dict(dtype="bf16", layout="tile"),
        dict(grid=(8, 4), memory="dram", memory_layout="interleaved"),
    ]
    return OverrideSet([OpOverride(name, **kinds[i % len(kinds)]) for i, name in enumerate(names)], l1_usage_cap=0.7)


def test_twenty_overrides_give_the_same_run_through_every_format(capsys, corpus, tmp_path, db_url):
    from tilescope.overrides.formats import dump

    overrides = _twenty_overrides(corpus)
    assert len(overrides.items) == 20
    runs = {}
    for fmt in ("tilescope", "tt-explorer", "tt-mlir"):
        path = tmp_path / f"o.{fmt}"
        path.write_text(dump(overrides, fmt))
        data = run_json(
            capsys, str(corpus / "resnet50_xla.mlir"), "--db", db_url, "--overrides", str(path), "--keep-going"
        )
        assert len(data["overrides"]) == 20
        assert all(o["status"] == "applied" for o in data["overrides"]), data["overrides"]
        runs[fmt] = {o["name"]: (o["duration_ns"], o["memory"], o["grid"]) for o in data["ops"]}
    assert runs["tilescope"] == runs["tt-explorer"] == runs["tt-mlir"]
    plain = run_json(capsys, str(corpus / "resnet50_xla.mlir"), "--db", db_url)
    assert {o["name"]: o["duration_ns"] for o in plain["ops"]} != {k: v[0] for k, v in runs["tt-mlir"].items()}


def test_export_writes_what_a_run_was_compiled_with(capsys, tmp_path, tiny_path, db_url):
    data = run_json(
        capsys,
        tiny_path,
        "--db",
        db_url,
        "--override",
        "matmul_0=1x2:l1:block_sharded",
        "--override",
        "matmul_1=fidelity#lofi",
        "--policy",
        "greedy-l1",
        "--l1-usage-cap",
        "0.5",
    )
    code, text, err = cli(capsys, "export", str(data["run_id"]), "--db", db_url, "--format", "tt-mlir")
    assert code == 0
    # what tt-mlir reads; the fidelity, tilescope's own, is named on stderr instead
    assert text.strip() == "override-output-layout=matmul_0=1x2:l1:block_sharded tensor-l1-usage-cap=0.5"
    assert err.strip().splitlines() == [
        "tilescope: left out of the tt-mlir file, as tt-mlir does not read them: policy=greedy-l1, "
        "matmul_1=fidelity#lofi "
        "(the tilescope JSON export keeps every setting)"
    ]
    out = tmp_path / "run.json"
    code, _, _ = cli(capsys, "export", str(data["run_id"]), "--db", db_url, "-o", str(out))
    exported = json.loads(out.read_text())
    assert exported["policy"] == "greedy-l1" and exported["l1_usage_cap"] == 0.5 and len(exported["overrides"]) == 2
    # the exported file reproduces the run
    again = run_json(capsys, tiny_path, "--db", db_url, "--overrides", str(out))
    assert [o["duration_ns"] for o in again["ops"]] == [o["duration_ns"] for o in data["ops"]]


def test_bad_overrides_file_is_one_line(capsys, tmp_path, tiny_path, db_url):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "overrides": [{"op": "matmul_0", "grid": "big"}]}')
    code, out, err = cli(capsys, "run", tiny_path, "--db", db_url, "--overrides", str(bad))
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "tilescope: error: overrides file: overrides/0/grid: 'big' is not of type 'array'"
    ]
    code, _, err = cli(capsys, "run", tiny_path, "--db", db_url, "--overrides", str(tmp_path / "none.json"))
    assert code == 2 and "none.json: no such file" in err
    code, _, err = cli(capsys, "export", "999", "--db", db_url)
    assert code == 2 and "no run with id 999" in err


def test_two_overrides_of_one_op_are_refused(capsys, tiny_path, db_url):
    code, _, err = cli(
        capsys, "run", tiny_path, "--db", db_url, "--override", "matmul_0=l1", "--override", "matmul_0=dram"
    )
    assert code == 2 and "override for 'matmul_0' given twice" in err


def test_warnings_are_summarised(capsys, db_url):
    from tilescope.app.cli.runs import MAX_WARNINGS, warn

    warn([f"w{i}" for i in range(MAX_WARNINGS + 3)])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == MAX_WARNINGS + 1 and err[-1].startswith("tilescope: warning: ... and 3 more")


def test_check_lists_every_problem_and_exits_1(capsys, tmp_path):
    bad = tmp_path / "o.txt"
    bad.write_text("override-output-layout=mlp.layer.0.fc2.matmul=9x9,nope=l1,mlp.layer.1.gelu=zz\n")
    code, out, err = cli(
        capsys, "check", "zoo:mlp", "--overrides", str(bad), "--override", "mlp.layer.1.fc1.matmul=4x8:l1"
    )
    assert code == 1 and not err
    lines = out.splitlines()
    assert lines[-1] == "3 problem(s); 1 override(s) apply"
    assert any("unknown token 'zz'" in line for line in lines)
    assert any("'nope=l1': no such op" in line for line in lines)
    assert any("grid 9x9 outside wormhole_n150's 8x8 grid" in line for line in lines)
    code, out, _ = cli(capsys, "check", "zoo:mlp", "--override", "mlp.layer.1.fc1.matmul=4x8:l1", "--json")
    assert code == 0 and json.loads(out)["ok"] is True


# --- run references, version, serve's port -------------------------------------------------------------


def test_last_and_last_tilde_n_name_runs_counted_back_from_the_newest(capsys, db_url, tiny_path, tmp_path):
    first = run_json(capsys, tiny_path, "--db", db_url)["run_id"]
    second = run_json(capsys, tiny_path, "--db", db_url, "--override", "matmul_0=l1")["run_id"]
    code, out, _ = cli(capsys, "stats", "last", "--db", db_url, "--json")
    assert code == 0 and out == cli(capsys, "stats", str(second), "--db", db_url, "--json")[1]
    code, out, _ = cli(capsys, "export", "last~1", "--db", db_url, "--format", "tt-mlir")
    assert code == 0 and "matmul_0" not in out  # the first run had no override
    code, out, err = cli(capsys, "diff", "last~1", "last", "--db", db_url, "--json")
    assert code == 0, err
    assert (json.loads(out)["a"], json.loads(out)["b"]) == (first, second)
    report = tmp_path / "ops.csv"
    assert cli(capsys, "export", "last", "--db", db_url, "--format", "csv", "-o", str(report))[0] == 0
    code, _, err = cli(capsys, "import", "last~2", str(report), "--db", db_url)
    assert_one_error_line(code, err, r"last~2: no run 2 before the newest: the database holds 2 run\(s\)")


def test_last_on_an_empty_database_says_so(capsys, db_url):
    code, _, err = cli(capsys, "stats", "last", "--db", db_url)
    assert_one_error_line(code, err, "last: the database holds no runs yet")


@pytest.mark.parametrize("ref", ["latest", "last~", "last~x", "-1", "1.5"])
def test_a_run_reference_that_is_not_one_is_a_usage_error(capsys, ref):
    with pytest.raises(SystemExit) as exit_:
        main(["stats", ref])
    assert exit_.value.code == 2
    assert f"{ref!r} is not a run: give a run id, last, or last~N" in capsys.readouterr().err


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"tilescope {version('tilescope')}\n"


def test_every_option_of_every_command_says_what_it_does():
    from tilescope.app.cli.commands import _parser

    parser = _parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps sub-commands here
    for name, command in commands.items():
        for action in command._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"tilescope {name} {action.option_strings[0]} has no help text"


# what the commands run on, and most of a second to import: `tilescope --help` must not wait for them
HEAVY_MODULES = (
    "alembic",
    "celery",
    "dash",
    "flask",
    "iree",
    "jsonschema",
    "mlir",
    "networkx",
    "numpy",
    "plotly",
    "sqlalchemy",
)


def test_building_the_parser_imports_none_of_what_the_commands_run_on():
    """In a fresh process: this one has imported everything already."""
    code = (
        "import sys\n"
        "from tilescope.app.cli.commands import _parser\n"
        "_parser()\n"
        f"print(sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[]\n"


def test_a_database_failing_mid_command_is_one_line(tmp_path):
    """The database opens, then a query fails (its table is gone): one line, in a process that
    imported SQLAlchemy only when the command ran."""
    import sqlite3

    assert tilescope(tmp_path, "runs").returncode == 0  # makes the database at the newest schema
    with sqlite3.connect(tmp_path / "proc.db") as connection:
        connection.execute("ALTER TABLE runs RENAME TO gone")
    proc = tilescope(tmp_path, "runs")
    assert_one_error_line(proc.returncode, proc.stderr, "^tilescope: error: database: no such table: runs$")


@pytest.mark.parametrize("value", ["http", "0", "70000"])
def test_a_bad_port_in_the_environment_is_one_line(capsys, monkeypatch, value):
    monkeypatch.setenv("TILESCOPE_PORT", value)
    code, _, err = cli(capsys, "serve")
    assert_one_error_line(code, err, rf"\$TILESCOPE_PORT='{value}' is not a port number")


def test_export_to_a_path_that_cannot_be_written_is_one_line(capsys, tmp_path, tiny_path, db_url):
    run_id = run_json(capsys, tiny_path, "--db", db_url)["run_id"]
    for output in (tmp_path / "missing" / "run.json", tmp_path):
        code, out, err = cli(capsys, "export", str(run_id), "--db", db_url, "-o", str(output))
        assert_one_error_line(code, err, f"{output}: cannot write")
        assert out == ""


def test_ctrl_c_during_a_run_is_one_line_and_stores_nothing(tmp_path):
    """SIGINT while the model compiles (the database is open and migrated by then): no traceback."""
    import signal
    import sqlite3

    db = tmp_path / "perf.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tilescope.app.cli", "run", "zoo:bert-base?layers=24", "--db", f"sqlite:///{db}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal starts it: a suite started in the background (`cmd &` without job control)
        # ignores SIGINT, and a child would inherit that and run to its end
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )

    def migrated() -> bool:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
                return connection.execute("SELECT count(*) FROM alembic_version").fetchone()[0] == 1
        except sqlite3.Error:
            return False

    while not migrated():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)  # a poll's interval: leave the cores to the run
    proc.send_signal(signal.SIGINT)  # a 24-layer BERT takes seconds more to compile, simulate and store
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and out == "" and err == "tilescope: interrupted\n"
    with session_factory(open_db(f"sqlite:///{db}"))() as session:
        assert list_runs(session) == []


def test_export_refuses_to_overwrite_without_force_and_never_writes_through_a_link(capsys, tmp_path, tiny_path, db_url):
    run_id = str(run_json(capsys, tiny_path, "--db", db_url)["run_id"])
    out = tmp_path / "run.json"
    out.write_text("kept")
    code, _, err = cli(capsys, "export", run_id, "--db", db_url, "-o", str(out))
    assert_one_error_line(code, err, f"{out}: exists; give --force to replace it")
    assert out.read_text() == "kept"
    assert cli(capsys, "export", run_id, "--db", db_url, "-o", str(out), "--force")[0] == 0
    assert json.loads(out.read_text())["version"] == 1
    victim, link = tmp_path / "victim.txt", tmp_path / "link.json"
    victim.write_text("precious")
    link.symlink_to(victim)
    code, _, err = cli(capsys, "export", run_id, "--db", db_url, "-o", str(link))
    assert_one_error_line(code, err, "exists; give --force")
    assert cli(capsys, "export", run_id, "--db", db_url, "-o", str(link), "--force")[0] == 0
    assert victim.read_text() == "precious" and not link.is_symlink()  # the link was replaced, not followed


@pytest.mark.parametrize("command", ["export", "stats", "diff"])
@pytest.mark.parametrize("run", ["99999999999999999999", "9223372036854775808", "²", "last~99999999999999999999"])
def test_a_run_id_no_database_can_hold_is_one_line(capsys, tmp_path, tiny_path, db_url, command, run):
    run_json(capsys, tiny_path, "--db", db_url)
    argv = [command, run, *(["1"] if command == "diff" else []), "--db", db_url]
    try:
        code = main(argv)
    except SystemExit as exited:  # refused as an argument
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "is not a run" in err or "no run with id" in err


def test_a_reader_that_leaves_early_ends_the_process_quietly(tmp_path):
    """`tilescope show ... | head -1`: the rest of the text is not wanted; no traceback, and the
    process leaves rather than hang on a full pipe."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tilescope.app.cli", "show", "zoo:bert-base?layers=2", "--level", "kernel"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and first.startswith(b"module")
    assert "Traceback" not in err and "Exception ignored" not in err, err
