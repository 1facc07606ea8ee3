"""IREE's two-device example in the explorer, in real headless Chromium, on two sockets: the
timeline has each device's row, the links between them, and each device's matmul on its own row;
Statistics splits the step per device."""

from __future__ import annotations

from pathlib import Path

import pytest
from iree.compiler import tools

from . import serving
from .test_browser import TIMELINE, _settled, _shot, _tab, _text, _wait, browser  # noqa: F401  # browser: the fixture

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).parents[2] / "compiler" / "frontend" / "iree_inputs" / "two_devices.mlir"


@pytest.fixture(scope="module")
def two_socket_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two")
    program = tmp / "two_devices.global-opt.mlir"
    program.write_bytes(tools.compile_str(EXAMPLE.read_text(), extra_args=["--compile-to=global-optimization"]))
    url, proc = serving.start(str(program), f"sqlite:///{tmp / 'ui.db'}", "--target", "x86_avx512_2p", logs=tmp)
    yield url
    proc.stop()


def _rows(driver) -> list[str]:
    return driver.execute_script(TIMELINE + "return gd && gd.layout.meta ? gd.layout.meta.rows || [] : [];")


def test_each_device_has_its_row_and_the_transfers_their_links(two_socket_server, browser):  # noqa: F811
    d = browser
    d.set_window_size(1600, 1100)
    d.get(two_socket_server)
    _wait(d, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=120)
    _tab(d, "Timeline")
    _wait(d, lambda d: "device 1" in _rows(d))
    rows = _rows(d)
    assert {"device 0", "device 1", "link device 0,device 1", "link device 1,device 0"} <= set(rows), rows
    _shot(d, "82-two-devices-timeline")
    _tab(d, "Statistics")
    _wait(d, lambda d: "Per device: 2 devices" in _text(d, "load-ops-view"))
    assert "device 1" in _text(d, "load-ops-view")
    _shot(d, "83-two-devices-statistics")
