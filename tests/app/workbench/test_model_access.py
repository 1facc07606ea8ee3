"""What a page may name: zoo models, shipped examples, stored models and files under --models-dir;
nothing else is opened, and a first compile is bounded and isolated. Called as the page calls it,
through the app's callbacks."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

import pytest
from dash import no_update

from tilescope.app.workbench.model_access import MAX_SOURCE_BYTES, ModelAccess
from tilescope.app.web.server import create_app
from tilescope.perfdb.runs import list_runs

from ..web.panels.conftest import MODEL, TARGET
from ..web.panels.conftest import data_url as _data_url
from ..web.panels.conftest import progress as _progress

OPENED: list[str] | None = None  # paths opened while a test records them


def _audit(event: str, args: tuple) -> None:
    if OPENED is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # for the whole session: hooks cannot be removed; it records only inside `opened`


@contextlib.contextmanager
def recording():
    """The paths this process opens inside the block."""
    global OPENED
    OPENED = []
    try:
        yield OPENED
    finally:
        OPENED = None


def _app(tmp_path, access: ModelAccess | None = None):
    return create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, TARGET, job_dir=str(tmp_path / "jobs"), access=access)


def _choose(app, model, target=TARGET):
    return app.tilescope_callbacks["choose_model"](model, target, "dram-interleaved")


def _message(chosen: dict) -> str:
    assert chosen["run_options"] is no_update and chosen["run_id"] is no_update, "nothing is shown for a refused model"
    text = chosen["status"].children
    assert "\n" not in text and "Traceback" not in text
    return text


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.mlir"
    path.parent.mkdir()
    shutil.copy(Path(__file__).parents[2] / "data" / "tiny_mlp.mlir", path)
    return path


@pytest.mark.parametrize("ref", ["/etc/passwd", "/dev/zero", "../../etc/passwd", "secret.mlir", "~/x.mlir"])
def test_a_path_is_not_an_allowed_model_and_is_never_opened(tmp_path, ref):
    app = _app(tmp_path)
    with recording() as opened:
        text = _message(_choose(app, ref))
    assert text.startswith(f"{ref}: not an allowed model;") and "zoo models" in text
    assert not [p for p in opened if p.endswith(("passwd", "zero", "secret.mlir", "x.mlir"))], opened


def test_a_file_outside_the_models_directories_is_refused_unread(tmp_path, secret):
    models = tmp_path / "models"
    models.mkdir()
    (models / "link.mlir").symlink_to(secret)  # a link inside that points outside
    app = _app(tmp_path, ModelAccess.of([models]))
    with recording() as opened:
        for ref in (str(secret), str(models / ".." / "outside" / "secret.mlir"), "../outside/secret.mlir", "link.mlir"):
            assert "not an allowed model" in _message(_choose(app, ref)), ref
    assert str(secret) not in opened
    with app.explorer.sessions() as session:
        assert [r.model_ref for r in list_runs(session)] == [MODEL]  # nothing else stored


def test_a_file_under_a_models_directory_opens(tmp_path, secret):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(secret, models / "mlp.mlir")
    app = _app(tmp_path, ModelAccess.of([models]))
    assert str(models / "mlp.mlir") in app.explorer.model_options()  # offered in the menu
    for ref in (str(models / "mlp.mlir"), "mlp.mlir"):
        chosen = _choose(app, ref)
        run_id, status = chosen["run_id"], chosen["status"]
        assert status is None and isinstance(run_id, int), status
        assert app.explorer.run(run_id).model.source_text == secret.read_text()


def test_a_device_or_a_huge_file_in_a_models_directory_is_one_line(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    os.mkfifo(models / "pipe.mlir")  # opening it to read would wait for a writer forever
    with open(models / "huge.mlir", "wb") as huge:
        huge.truncate(MAX_SOURCE_BYTES + 1)  # sparse: takes no disk
    app = _app(tmp_path, ModelAccess.of([models]))
    assert _message(_choose(app, "pipe.mlir")) == "pipe.mlir: not a regular file"
    assert _message(_choose(app, "huge.mlir")) == "huge.mlir: over this server's 64 MiB limit for a model file"


def test_shipped_examples_open_from_the_package_not_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ffn.mlir").write_text("not the example")
    app = _app(tmp_path)
    with recording() as opened:
        chosen = _choose(app, "ffn.mlir")
    run_id, status = chosen["run_id"], chosen["status"]
    assert status is None and "ffn.fc1" in app.explorer.run(run_id).model.source_text
    assert str(tmp_path / "ffn.mlir") not in opened and "ffn.mlir" not in opened


def test_a_stored_model_opens_from_its_stored_text_on_another_target(tmp_path, secret):
    app = _app(tmp_path)
    from tilescope.app.workbench.runs import execute

    execute(app.explorer.sessions, str(secret))  # stored by the command line, which reads any path
    with recording() as opened:
        chosen = _choose(app, str(secret), "blackhole_p150")
    run_id, status = chosen["run_id"], chosen["status"]
    assert status is None and app.explorer.run(run_id).target.name == "blackhole_p150"
    assert str(secret) not in opened


@pytest.mark.parametrize("target", ["/etc/passwd.toml", "../x.toml", "nosuch"])
def test_a_target_file_is_not_an_allowed_target(tmp_path, target):
    app = _app(tmp_path)
    with recording() as opened:
        text = _message(_choose(app, "zoo:mlp?layers=2", target))
        assert app.tilescope_callbacks["form_choices"](target) is no_update
    assert text.startswith(f"{target}: not an allowed target;")
    assert not [p for p in opened if p.endswith(".toml") and "targets" not in p]


def test_a_model_over_the_ops_limit_is_refused_and_nothing_is_stored(tmp_path):
    app = _app(tmp_path, ModelAccess.of([], max_ops=50))
    text = _message(_choose(app, "zoo:mlp?layers=20"))
    assert (
        text == "zoo:mlp?layers=20: 100 ops is over this server's limit of 50 "
        "(tilescope serve --max-ops; the command line has none)"
    )
    with app.explorer.sessions() as session:
        assert len(list_runs(session)) == 1  # the opening model's run only


def test_a_zoo_model_far_over_the_default_limit_is_refused(tmp_path):
    app = _app(tmp_path, ModelAccess.of([]))
    text = _message(_choose(app, "zoo:llama-3.2-1b?layers=1000"))
    assert text == (
        "zoo:llama-3.2-1b?layers=1000: 75,021 ops is over this server's limit of 50,000 "
        "(tilescope serve --max-ops; the command line has none)"
    )


def test_an_upload_is_compiled_in_a_child_and_its_failure_is_one_line(tmp_path):
    app = _app(tmp_path, ModelAccess.of([], max_ops=3))
    text = (Path(__file__).parents[2] / "data" / "tiny_mlp.mlir").read_bytes()  # four ops
    message = app.tilescope_callbacks["upload_model"](
        _progress, _data_url(text), "tiny.mlir", TARGET, "dram-interleaved"
    )["message"]
    assert message.children.endswith(
        "tiny.mlir: 4 ops is over this server's limit of 3 (tilescope serve --max-ops; the command line has none)"
    )


def test_models_directories_and_limits_are_checked_at_start(tmp_path):
    from tilescope.compiler.errors import TilescopeError

    with pytest.raises(TilescopeError, match=r"^--models-dir .*nowhere: no such directory$"):
        ModelAccess.of([tmp_path / "nowhere"])
    with pytest.raises(TilescopeError, match=r"^--max-ops 0: a model has at least one op$"):
        ModelAccess.of([], max_ops=0)


def test_an_upload_name_with_a_newline_stays_one_line(tmp_path):
    app = _app(tmp_path)
    message = app.tilescope_callbacks["upload_model"](
        _progress,
        _data_url(b"\xff\xfe not text"),
        "evil\nname\r.mlir",
        TARGET,
        "dram-interleaved",
    )["message"]
    assert message.children == "evil?name?.mlir: not MLIR text (not UTF-8)"


def test_an_overrides_file_past_its_limit_is_refused_before_decoding():
    from tilescope.app.workbench import override_form
    from tilescope.compiler.errors import TilescopeError

    with pytest.raises(TilescopeError, match=r"^o.json: 4.0 MiB is over the 4 MiB overrides file limit$"):
        override_form.imported_overrides("o.json", "data:;base64," + "A" * (4 * 2**20 // 3 * 4 + 8))


def test_an_overrides_file_of_many_bad_items_lists_the_first_few(tmp_path):
    from tilescope.app.workbench.override_form import SHOWN_PROBLEMS, imported_overrides

    text = "override-output-layout=" + ",".join(f"op{i}=nonsense" for i in range(500))
    found, problems = imported_overrides("many.txt", _data_url(text.encode()))
    assert found == [] and len(problems) == SHOWN_PROBLEMS + 1 and problems[-1] == "... and 480 more problems"
