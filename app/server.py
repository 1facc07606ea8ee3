"""Build the Dash app on a database, and serve it."""

from __future__ import annotations

from pathlib import Path

import diskcache
import platformdirs
from dash import Dash, DiskcacheManager

from compiler.target import load_target
from perfdb.engine import open_db, session_factory

from . import callbacks
from .explorer import Explorer
from .layout import page
from .runs import DEFAULT_TARGET
from .thread_jobs import ThreadJobManager

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def create_app(
    db_url: str | None = None, model_ref: str = "zoo:mlp", target: str = DEFAULT_TARGET, job_dir: str | None = None,
) -> Dash:
    """The explorer on `db_url`, opened on `model_ref`; the model is compiled and stored if it has no run."""
    explorer = Explorer(session_factory(open_db(db_url)))
    explorer.ensure_run(model_ref, target)  # the first page load shows a stored run at once
    # compiles and re-runs are background callbacks: each runs in a process of its own, reporting
    # its stage, and the page stays live; the job queue lives in a local cache directory
    jobs = diskcache.Cache(job_dir or platformdirs.user_cache_dir("tilescope") + "/jobs")
    app = Dash(
        __name__, assets_folder=str(ASSETS), title="tilescope", update_title=None,
        background_callback_manager=DiskcacheManager(jobs),
    )
    app.layout = page(explorer.model_options(model_ref), model_ref, load_target(target))
    rerun_jobs = ThreadJobManager(jobs)
    app.tilescope_callbacks = callbacks.register(app, explorer, rerun_jobs)  # type: ignore[attr-defined]  # for tests
    app.explorer = explorer  # type: ignore[attr-defined]
    return app


def serve(db_url: str | None, model_ref: str, target: str, host: str, port: int, debug: bool = False) -> None:
    app = create_app(db_url, model_ref, target)
    print(f"tilescope: serving {model_ref} on http://{host}:{port}", flush=True)
    app.run(host=host, port=port, debug=debug)
