"""A PyTorch model in the explorer, in real headless Chromium: served from the operator's own
`model.py:build` (imported by the command, then opened from its stored run), its graph boxed by
its modules, and an op's line of Python in the inspector."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

pytest.importorskip("torch")


from . import serving  # noqa: E402
from .test_browser import _settled, _shot, _tab, _text, _wait, browser  # noqa: E402,F401  # browser: the fixture

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[3]  # the checkout, whose plain-torch layers the model imports
GRAPH = "var gd = document.querySelector('#graph-view .js-plotly-plot');"
MODEL = f"""\
import sys

import torch
from torch import nn

sys.path.insert(0, {str(ROOT)!r})
from tests.compiler.frontend.plain_torch import BertLayer, bert_inputs


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(256, 4, 1024) for _ in range(2)])

    def forward(self, x, mask):
        for layer in self.layer:
            x = layer(x, mask)
        return x


def build():
    return Encoder(), bert_inputs(4, 128, 256)
"""
QUERY = "layer.1.attention.query.linear"


@pytest.fixture(scope="module")
def torch_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("torch")
    path = tmp / "model.py"
    path.write_text(MODEL)
    url, proc = serving.start(f"{path}:build", f"sqlite:///{tmp / 'ui.db'}", logs=tmp)
    yield url
    proc.stop()


def test_a_pytorch_model_opens_boxed_by_its_modules_with_its_lines_of_python(torch_server, browser):  # noqa: F811
    d = browser
    d.set_window_size(1600, 1100)
    d.get(torch_server)
    _wait(d, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=120)
    _wait(d, lambda d: d.execute_script(GRAPH + "return !!(gd && gd.layout.meta && gd.layout.meta.boxes);"))
    boxes = d.execute_script(GRAPH + "return gd.layout.meta.boxes.map(function (b) { return b[3]; });")
    # the module hierarchy is the graph's: each layer a box, its attention and its feed-forward
    # boxes in it (a box is labelled by its path under the box around it)
    assert {"layer", "layer.0", "layer.1", "attention", "intermediate"} <= set(boxes), boxes
    _shot(d, "70-pytorch-graph-by-module")
    d.get(torch_server + "?op=" + QUERY)
    _wait(d, lambda d: QUERY in _text(d, "op-inspector") and _settled(d), timeout=60)
    inspector = _text(d, "op-inspector")
    # the line of the user's BertLayer that called the query projection, and its code
    assert "plain_torch.py:" in inspector and "self.split(self.query(x))" in inspector, inspector
    _shot(d, "71-pytorch-inspector-source-line")
    # the step's time by line of Python: the layer's attention line, its feed-forward line
    _tab(d, "Statistics")
    d.find_element(By.XPATH, "//div[@id='stats-by']//label[normalize-space()='per line of source']").click()
    _wait(d, lambda d: "self.output(F.gelu(self.intermediate(x)))" in _text(d, "stats-table") and _settled(d))
    assert "plain_torch.py:" in _text(d, "stats-table") and "host / idle" in _text(d, "stats-table")
    _shot(d, "72-pytorch-statistics-by-line")
    severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe
    d.get("about:blank")
