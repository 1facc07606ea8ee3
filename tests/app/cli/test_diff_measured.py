"""`tilescope diff A B` of measured runs: ops aligned as sequences, each run's name of an op, the ops
only one run has with their time, the changes, the table by kind, the chips."""

from __future__ import annotations

import json
import re

import pytest

from tilescope.app.cli.diff import main
from tilescope.app.workbench.diff import config_change
from tilescope.perfdb.engine import open_db, session_factory
from tests.perfdb.measured_runs import REPORTS, csv_text, store_report
from tests.perfdb.test_diff_measured import HEADER, LAYER, encoder, row


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


@pytest.fixture
def edited(sessions):
    """(a, b): an encoder's report and a copy with layer 1's k transpose gone, a typecast inserted and
    layer 2's first matmul in LoFi."""
    rows = encoder()
    n = len(LAYER)
    edited = [list(r) for i, r in enumerate(rows) if i != n + 6]
    edited[2 * n][HEADER.index("MATH FIDELITY")] = "LoFi"
    edited.insert(11, row("TypecastDeviceOperation", (1, 1, 64, 768), 777))
    return store_report(sessions, csv_text(HEADER, rows), "encoder.csv"), store_report(
        sessions, csv_text(HEADER, edited), "encoder_v2.csv"
    )


def test_text_of_a_report_against_an_edited_copy(capsys, db_url, edited):
    a, b = edited
    assert main(a, b, db_url, False) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith(f"tilescope: warning: different reports: run {a} is report:encoder.csv, run {b}")
    lines = captured.out.splitlines()
    assert lines[0] == f"run {b} (measured) against run {a} (measured); ops aligned by op code in execution order"
    assert re.match(r"op\s+b op\s+a us\s+b us\s+delta us\s+ratio\s+changes$", lines[1])
    assert re.match(
        r"MinimalMatmulOp#7\s+MinimalMatmulOp#7\s+1\.25\s+1\.25\s+\+0\.00\s+1\.00x\s+fidelity hifi4->lofi$", lines[2]
    )
    assert lines[3] == f"{len(encoder()) - 2:,} ops of both runs unchanged (time and parameters); --json lists every op"
    assert lines[4:8] == [
        f"removed (only in run {a}): 1 op, 1.18 us",
        "  TransposeDeviceOperation#6  transpose          1.18 us",
        f"inserted (only in run {b}): 1 op, 0.78 us",
        "  TypecastDeviceOperation#1  typecast           0.78 us",
    ]
    by_kind = next(i for i, line in enumerate(lines) if line.startswith("by kind: "))
    assert re.match(r"by kind: kind +a ops +b ops +a us +b us +delta us +ratio$", lines[by_kind])
    assert re.match(r" +transpose +16 +15 +[\d,.]+ +[\d,.]+ +-1\.18 +0\.\d\dx$", lines[by_kind + 1])
    assert re.match(r" +typecast +0 +1 +0\.00 +0\.78 +\+0\.78 +-$", lines[by_kind + 2])
    assert lines[-1] == "device -0.40 us = 1 inserted +0.78 us, 1 removed -1.18 us"


def test_json_of_a_report_against_an_edited_copy(capsys, db_url, edited):
    a, b = edited
    assert main(a, b, db_url, True) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kinds"] == {"a": "measured", "b": "measured"} and d["alignment"] == "sequence"
    assert d["removed"] == [{"name": "TransposeDeviceOperation#6", "kind": "transpose", "ns": 1180.0, "device": 0}]
    assert d["inserted"] == [{"name": "TypecastDeviceOperation#1", "kind": "typecast", "ns": 777.0, "device": 0}]
    ops = {op["name"]: op for op in d["ops"]}
    assert ops["TransposeDeviceOperation#7"]["b_name"] == "TransposeDeviceOperation#6"
    assert ops["MinimalMatmulOp#7"]["changes"] == [
        {"param": "fidelity", "a": "hifi4", "b": "lofi", "operand": None, "result": None}
    ]


def test_a_program_config_change_names_the_fields_that_differ():
    a = "MinimalMatmulConfig(M_block_size=2;K_block_size=8;compute_with_storage_grid_size=(x=8;y=8))"
    b = "MinimalMatmulConfig(M_block_size=2;K_block_size=4;compute_with_storage_grid_size=(x=11;y=10))"
    assert config_change(a, b) == (
        "MinimalMatmulConfig(K_block_size 8->4, compute_with_storage_grid_size (x=8;y=8)->(x=11;y=10))"
    )
    assert config_change("A(x=1)", "A(x=1;y=2)") == "A(y -->2)"
    other = "LayerNormDefaultProgramConfig(legacy_reduction=0;legacy_rsqrt=0;use_welford=0)"
    assert config_change("A(x=1)", other) == f"A(x=1)->{other[:57]}..."


def test_two_chips_reports_of_one_model(capsys, db_url, sessions):
    wormhole, blackhole = REPORTS / "wh_clip_encoder_2.csv", REPORTS / "bh_64_clip_encoder_1.csv"
    if not (wormhole.is_file() and blackhole.is_file()):
        pytest.skip(f"the CLIP reports are not in {REPORTS}")
    a = store_report(sessions, wormhole.read_text(), wormhole.name)
    b = store_report(sessions, blackhole.read_text(), blackhole.name)
    assert main(a, b, db_url, False) == 0
    captured = capsys.readouterr()
    said = f"tilescope: warning: measured on different chips: run {a} on wormhole_n150, run {b} on blackhole_p150"
    assert said in captured.err.splitlines()
    lines = captured.out.splitlines()
    assert lines[0].endswith("; ops aligned by op code in execution order")
    assert any(line.startswith(f"removed (only in run {a}): ") for line in lines)
    assert any(line.startswith("by kind: ") for line in lines)
