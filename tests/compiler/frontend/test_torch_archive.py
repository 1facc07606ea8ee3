"""A .pt2 read without running anything in it: its graph, its weights empty tensors of their
shapes; a hostile archive's pickles never run."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tilescope.compiler.errors import ModelLoadError  # noqa: E402
from tilescope.compiler.frontend import torch_archive  # noqa: E402
from tilescope.compiler.frontend.torch_models import import_pt2, import_torch  # noqa: E402

from tests.compiler.frontend import plain_torch  # noqa: E402
from tests.compiler.frontend.hostile_pt2 import evaluated_size, hostile_pt2, retargeted, rewritten_graph  # noqa: E402


def _block():
    return plain_torch.Bottleneck(64, 32, 128, 1).eval(), plain_torch.bottleneck_inputs(1, 64, 14)


def test_the_payloads_are_live_where_torch_loads_the_archive(tmp_path):
    """The check below can fail: torch.export.load runs the archive's pickles."""
    marker = tmp_path / "ran"
    path = tmp_path / "hostile.pt2"
    path.write_bytes(hostile_pt2(*_block(), marker))
    try:
        torch.export.load(str(path))
    except Exception:  # noqa: BLE001  # the payload is no tensor: loading fails after it ran
        pass
    assert marker.exists()


def test_a_hostile_archive_imports_without_running_its_pickles(tmp_path):
    marker = tmp_path / "ran"
    module, inputs = _block()
    data = hostile_pt2(module, inputs, marker)
    imported = import_pt2(data, name="hostile.pt2")
    assert not marker.exists()
    # the graph is the module's: the weights' values were never needed
    assert imported.text == import_torch(module, inputs).text
    path = tmp_path / "hostile.pt2"
    path.write_bytes(data)
    import_pt2(path)
    assert not marker.exists()


def test_an_archive_without_a_program_is_one_line(tmp_path):
    import zipfile

    path = tmp_path / "empty.pt2"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x/data/weights/weight_0", b"\x80\x04N.")
    with pytest.raises(ModelLoadError, match=r"empty\.pt2: not a torch.export program \(no models/\*\.json"):
        import_pt2(path)


def test_an_archive_of_too_many_files_is_refused_before_any_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(torch_archive, "MAX_MEMBERS", 5)
    path = tmp_path / "many.pt2"
    path.write_bytes(hostile_pt2(*_block(), tmp_path / "ran"))
    with pytest.raises(ModelLoadError, match=r"files in the archive, over 5$"):
        import_pt2(path)


def test_a_graph_of_another_schema_is_one_line(tmp_path):
    import zipfile

    path = tmp_path / "odd.pt2"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("odd/models/model.json", b'{"graph_module": 7}')
    with pytest.raises(ModelLoadError, match=r"/odd\.pt2: not a torch\.export program \(no graph in its JSON\)$"):
        import_pt2(path)


def _saved() -> bytes:
    import io

    module, inputs = _block()
    saved = io.BytesIO()
    torch.export.save(torch.export.export(module, inputs), saved)
    return saved.getvalue()


def test_a_size_torch_would_evaluate_is_refused_before_torch_reads_it(tmp_path):
    """torch's deserializer sympifies a symbolic size (eval): the check is live where torch reads it."""
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _bytes_to_dataclass

    marker = tmp_path / "ran"
    data = rewritten_graph(_saved(), evaluated_size(marker))
    with pytest.raises(ModelLoadError, match=r"^sized\.pt2: a program of symbolic shapes|its graph holds 'as_expr'"):
        import_pt2(data, name="sized.pt2")
    assert not marker.exists()
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        raw = archive.read(next(n for n in archive.namelist() if "/models/" in n and n.endswith(".json")))
    with pytest.raises(Exception):  # noqa: B017  # torch fails on it, having run it
        ExportedProgramDeserializer().deserialize(_bytes_to_dataclass(schema.ExportedProgram, raw), {}, {}, None)
    assert marker.exists()


@pytest.mark.parametrize("target", ["torch.hub.load", "torch.save", "builtins.eval", "#extension"])
def test_a_node_calling_other_than_an_aten_op_is_refused(target):
    data = rewritten_graph(_saved(), retargeted(target))
    with pytest.raises(ModelLoadError, match=rf"^t\.pt2: a node calls {target!r}, not an aten op$"):
        import_pt2(data, name="t.pt2")
