"""A PyTorch program uploaded as a .pt2, called as the page calls it: read in a child process,
no pickle in it opened, stored as a model with its run; a hostile archive's payloads never run."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tilescope.app.web.server import create_app  # noqa: E402
from tilescope.app.workbench.model_access import ModelAccess  # noqa: E402
from tilescope.perfdb.runs import list_runs  # noqa: E402

from tests.compiler.frontend import plain_torch  # noqa: E402
from tests.compiler.frontend.hostile_pt2 import hostile_pt2  # noqa: E402

from ..web.panels.conftest import MODEL, TARGET  # noqa: E402
from ..web.panels.conftest import data_url as _data_url  # noqa: E402
from ..web.panels.conftest import progress as _progress  # noqa: E402


def _upload(app, data: bytes, filename: str) -> dict:
    return app.tilescope_callbacks["upload_model"](_progress, _data_url(data), filename, TARGET, "dram-interleaved")


def test_a_hostile_pt2_upload_is_stored_and_its_pickles_never_run(tmp_path):
    app = create_app(
        f"sqlite:///{tmp_path}/ui.db", MODEL, TARGET, job_dir=str(tmp_path / "jobs"), access=ModelAccess.of([])
    )
    marker = tmp_path / "ran"
    module, inputs = plain_torch.Bottleneck(64, 32, 128, 1).eval(), plain_torch.bottleneck_inputs(1, 64, 14)
    shown = _upload(app, hostile_pt2(module, inputs, marker), "block.pt2")
    assert not marker.exists()
    assert shown["message"].children == "Loaded block.pt2."
    ref = shown["model"]
    assert ref.startswith("upload/") and ref.endswith("/block.pt2")
    with app.explorer.sessions() as session:
        (run,) = list_runs(session, ref)
    record = app.explorer.op_record(run.id, "conv2.conv2d")
    # the line of Python the archive's graph kept, though its weights were never read
    assert record is not None and record.code_line.rsplit("/", 1)[-1].startswith("plain_torch.py:")
    assert record.code == "y = F.relu(self.bn2(self.conv2(y)))"


def test_a_damaged_pt2_upload_is_one_line(tmp_path):
    app = create_app(
        f"sqlite:///{tmp_path}/ui.db", MODEL, TARGET, job_dir=str(tmp_path / "jobs"), access=ModelAccess.of([])
    )
    message = _upload(app, b"PK\x03\x04 not really a zip", "broken.pt2")["message"].children
    assert message.startswith("broken.pt2: not a torch.export program") and "\n" not in message
