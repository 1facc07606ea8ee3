"""PyTorch models on the command line: `model.py:build` and `.pt2` files run, stored and summed
by the lines of Python that made their ops."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from tilescope.app.cli import main  # noqa: E402

BUILD = """\
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 512)
        self.fc2 = nn.Linear(512, 128)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return torch.softmax(self.fc2(h), dim=-1)


def build():
    return Head(), (torch.randn(64, 256),)
"""


@pytest.fixture
def model_py(tmp_path):
    path = tmp_path / "head.py"
    path.write_text(BUILD)
    return path


def test_a_build_function_runs_and_its_ops_keep_their_lines_of_python(capsys, db_url, model_py):
    assert main(["run", f"{model_py}:build", "--db", db_url, "--json", "--dispatch", "trace"]) == 0
    run = json.loads(capsys.readouterr().out)
    ops = {op["name"]: op for op in run["ops"]}
    assert ops["fc1.linear"]["code_line"] == f"{model_py}:12"
    assert ops["fc1.linear"]["code"] == "h = torch.relu(self.fc1(x))"
    assert ops["softmax"]["code_line"] == f"{model_py}:13"


def test_stats_by_source_sum_to_the_step(capsys, db_url, model_py):
    assert main(["run", f"{model_py}:build", "--db", db_url, "--json", "--dispatch", "trace"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert main(["stats", str(run["run_id"]), "--by", "source", "--db", db_url, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["source"] for row in rows} == {
        "head.py:12  h = torch.relu(self.fc1(x))",
        "head.py:13  return torch.softmax(self.fc2(h), dim=-1)",
    }
    assert sum(row["total_ns"] for row in rows) == pytest.approx(sum(op["duration_ns"] for op in run["ops"]))
    assert main(["stats", str(run["run_id"]), "--by", "source", "--db", db_url]) == 0
    table = capsys.readouterr().out
    assert "head.py:12  h = torch.relu(self.fc1(x))" in table and "host/idle" in table


def test_a_pt2_file_runs_as_its_module_does(capsys, db_url, tmp_path, model_py):
    namespace: dict = {}
    exec(compile(BUILD, str(model_py), "exec"), namespace)
    module, inputs = namespace["build"]()
    path = tmp_path / "head.pt2"
    torch.export.save(torch.export.export(module, inputs), str(path))
    assert main(["run", str(path), "--db", db_url, "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["model"] == str(path) and [op["name"] for op in run["ops"]] == ["fc1.linear", "fc2.linear", "softmax"]
    assert main(["show", str(path), "--level", "graph"]) == 0
    assert f'"{model_py}":12:0' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("ref", "said"),
    [
        ("{dir}/missing.py:build", "missing.py: no such file"),
        ("{model}:nothing", "head.py has no function nothing()"),
        ("{dir}/bad.pt2", "bad.pt2: not a torch.export program"),
    ],
)
def test_a_bad_torch_reference_is_one_line(capsys, db_url, tmp_path, model_py, ref, said):
    (tmp_path / "bad.pt2").write_bytes(b"\x00 not a zip")
    assert main(["run", ref.format(dir=tmp_path, model=model_py), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_build_file_of_dataclasses_runs_as_an_import_would(capsys, db_url, tmp_path):
    """A model's config as a dataclass (under postponed annotations, which look the module up)."""
    path = tmp_path / "configured.py"
    path.write_text(
        "from __future__ import annotations\n"
        "from dataclasses import dataclass\n"
        "import torch\n\n\n"
        "@dataclass\n"
        "class Config:\n"
        "    width: int = 64\n\n\n"
        "def build():\n"
        "    config = Config()\n"
        "    return torch.nn.Linear(config.width, config.width), (torch.randn(8, config.width),)\n"
    )
    assert main(["run", f"{path}:build", "--db", db_url, "--json"]) == 0
    assert [op["name"] for op in json.loads(capsys.readouterr().out)["ops"]] == ["linear"]
