"""Data-tiling in the explorer, in real headless Chromium, at BERT-base scale on the AVX-512 CPU
target: ticked in the run bar, the model is compiled again with its matmuls packed (a run of its
own, named so in the summary and the address), the layout level shows the packs and mmt4ds, and
the inspector gives an mmt4d's inner tiles and its operands' packed types."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from . import serving
from .test_browser import _settled, _shot, _text, _wait, browser  # noqa: F401  # browser: the fixture

pytestmark = pytest.mark.browser

FF1 = "encoder.layer.5.intermediate.dense.matmul"


@pytest.fixture(scope="module")
def cpu_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tiling")
    url, proc = serving.start("zoo:bert-base", f"sqlite:///{tmp / 'ui.db'}", "--target", "x86_avx512", logs=tmp)
    yield url
    proc.stop()


def test_ticking_data_tiling_packs_the_matmuls_and_the_inspector_shows_their_tiles(cpu_server, browser):  # noqa: F811
    d = browser
    d.set_window_size(1600, 1100)
    d.get(cpu_server)
    _wait(d, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=180)
    assert "data-tiling" not in _text(d, "run-summary")
    d.find_element(By.XPATH, "//div[@id='data-tiling']//label[normalize-space()='pack']").click()
    # compiled again with data-tiling: a run of its own, said in its summary and in the address
    _wait(d, lambda d: "run #2" in _text(d, "run-summary") and _settled(d), timeout=180)
    assert "data-tiling" in _text(d, "run-summary")
    assert "data_tiling=1" in d.current_url
    d.find_element(By.XPATH, "//div[@id='level-select']//label[normalize-space()='layout']").click()
    _wait(d, _settled, timeout=60)
    _shot(d, "80-data-tiling-layout-level")
    d.get(cpu_server + f"?model=zoo%3Abert-base&target=x86_avx512&level=layout&data_tiling=1&op={FF1}")
    _wait(d, lambda d: FF1 in _text(d, "op-inspector") and _settled(d), timeout=120)
    inspector = _text(d, "op-inspector")
    # bf16 on AVX-512: IREE's 16x16x2; the LHS packed 3072 x 768 -> 192 x 384 x 16 x 2
    assert "mmt4d" in inspector and "16x16x2" in inspector, inspector
    assert "tensor<192x384x16x2xbf16>" in inspector, inspector
    _shot(d, "81-data-tiling-mmt4d-inspector")
