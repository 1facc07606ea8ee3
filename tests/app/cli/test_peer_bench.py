"""The comparison with Model Explorer, which is never installed with tilescope: it runs under the
Python of a venv of its own, named by $TILESCOPE_TEST_PEER_PYTHON (CI makes one); without it the
tests that need Model Explorer are skipped, as the note at the top of the run says. No time is
asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tilescope.app.cli.peer_bench import TIMER, PeerError, chained, compare_import
from tilescope.compiler.frontend.mlir_import import import_mlir

TWO_OPS = """func.func @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<4x4xf32>
  %1 = stablehlo.multiply %0, %arg1 : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
"""
# TTIR: Model Explorer registers no such dialect, and refuses it in its pretty form ...
TTIR_PRETTY = """func.func @main(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = ttir.empty() : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
"""
# ... and its parser crashes on the generic form
TTIR_GENERIC = """func.func @main(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %1 = "ttir.relu"(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
"""


def _file(tmp_path: Path, name: str, text: str = TWO_OPS) -> tuple[str, str]:
    path = tmp_path / f"{name}.mlir"
    path.write_text(text)
    return name, str(path)


def test_a_chain_feeds_each_copy_the_result_of_the_one_before():
    graph = import_mlir(chained(TWO_OPS, 3), "chain.mlir").graph
    assert [op.kind for op in graph.ops] == ["stablehlo.add", "stablehlo.multiply"] * 3
    for before, after in zip(graph.ops[1::2], graph.ops[2::2]):
        assert after.inputs == [before.outputs[0], "arg1"]
    assert graph.outputs == graph.ops[-1].outputs


def test_rows_hold_both_times_the_ratio_and_the_bare_parse(tmp_path, peer_python):
    rows = compare_import(peer_python, [_file(tmp_path, "small"), _file(tmp_path, "deep", chained(TWO_OPS, 5))], 2)
    assert [(r["name"], r["ops"]) for r in rows] == [("small", 2), ("deep", 10)]
    assert rows[1]["peer_nodes"] > rows[0]["peer_nodes"] >= 2  # its graph holds the ops, and more
    for row in rows:
        assert row["tilescope_s"] > 0 and row["peer_s"] > 0 and row["bare_s"] > 0
        assert row["ratio"] == row["tilescope_s"] / row["peer_s"]
        assert row["import_over_bare"] == row["tilescope_s"] / row["bare_s"]


def test_the_timer_alone_prints_best_and_median_per_file(tmp_path, peer_python):
    _, path = _file(tmp_path, "small")
    out = subprocess.run([peer_python, str(TIMER), "3", path], capture_output=True, text=True, check=True).stdout
    [row] = json.loads(out)
    assert row["file"] == path and row["nodes"] >= 2 and 0 < row["best_s"] <= row["median_s"]


def test_a_python_that_cannot_be_the_peer_is_one_line(tmp_path):
    for peer, message in (
        ("/nonexistent/python", "peer python /nonexistent/python: No such file or directory"),
        (sys.executable, f"peer python {sys.executable}: no Model Explorer here"),
    ):
        with pytest.raises(PeerError) as raised:
            compare_import(peer, [_file(tmp_path, "small")], 1)
        assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "text, message",
    [
        (TTIR_PRETTY, "Model Explorer cannot convert model: UNKNOWN: "),
        (TTIR_GENERIC, "was killed by SIGSEGV converting model"),
    ],
    ids=["refused", "crash"],
)
def test_a_file_model_explorer_cannot_convert_is_one_line(tmp_path, peer_python, text, message):
    with pytest.raises(PeerError) as raised:
        compare_import(peer_python, [_file(tmp_path, "model", text)], 1)
    assert message in str(raised.value) and "\n" not in str(raised.value)
