"""Build the Dash app on a database, and serve it."""

from __future__ import annotations

from pathlib import Path

import diskcache
import platformdirs
from dash import Dash

from compiler.target import load_target
from perfdb.engine import open_db, session_factory

from . import callbacks, celery_jobs
from .explorer import Explorer
from .jobs import ProcessJobs
from .layout import page
from .runs import DEFAULT_TARGET
from .thread_jobs import ThreadJobManager

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def create_app(
    db_url: str | None = None, model_ref: str = "zoo:mlp", target: str = DEFAULT_TARGET, job_dir: str | None = None,
    rerun_in_thread: bool = True,
) -> Dash:
    """The explorer on `db_url`, opened on `model_ref`; the model is compiled and stored if it has no
    run. Re-runs run in a thread of this process, or (`rerun_in_thread` False: several processes
    serve the page, and the next poll of a job may reach another) as processes like compiles; with
    a Celery broker configured (app.celery_jobs), both run on Celery workers."""
    broker = celery_jobs.broker_url()
    if broker:
        celery_jobs.check_broker(broker)
    explorer = Explorer(session_factory(open_db(db_url)))
    explorer.ensure_run(model_ref, target)  # the first page load shows a stored run at once
    # compiles and re-runs are background callbacks: each runs in a process of its own, reporting
    # its stage, and the page stays live; the job queue lives in a local cache directory
    jobs = diskcache.Cache(job_dir or platformdirs.user_cache_dir("tilescope") + "/jobs")
    manager = celery_jobs.CeleryJobs(celery_jobs.celery_app(broker)) if broker else ProcessJobs(jobs)
    app = Dash(
        __name__, assets_folder=str(ASSETS), title="tilescope", update_title=None, background_callback_manager=manager,
    )
    app.layout = page(explorer.model_options(model_ref), model_ref, load_target(target))
    rerun_jobs = ThreadJobManager(jobs) if rerun_in_thread and not broker else None
    app.tilescope_callbacks = callbacks.register(app, explorer, rerun_jobs)  # type: ignore[attr-defined]  # for tests
    app.explorer = explorer  # type: ignore[attr-defined]
    return app


def serve(
    db_url: str | None, model_ref: str, target: str, host: str, port: int, debug: bool = False, workers: int = 0,
) -> None:
    """Serve the explorer: in this process (Flask's server), or with `workers` processes under gunicorn."""
    if workers:
        _serve_workers(db_url, model_ref, target, host, port, workers)
        return
    app = create_app(db_url, model_ref, target)
    print(f"tilescope: serving {model_ref} on http://{host}:{port}", flush=True)
    app.run(host=host, port=port, debug=debug)


THREADS_PER_WORKER = 8  # a page sends several callbacks at once; a worker serves them side by side


def _serve_workers(db_url: str | None, model_ref: str, target: str, host: str, port: int, workers: int) -> None:
    """Several users at once: gunicorn's workers, each with the app, on one database."""
    from gunicorn.app.base import BaseApplication  # noqa: PLC0415  # only this way of serving needs it

    broker = celery_jobs.broker_url()
    if broker:  # before any worker starts, so a wrong broker is one line, not a worker per retry
        celery_jobs.check_broker(broker)
    # the opening model's run is stored once, here, before the workers start and look for it
    engine = open_db(db_url)
    Explorer(session_factory(engine)).ensure_run(model_ref, target)
    engine.dispose()

    class Workers(BaseApplication):
        def load_config(self) -> None:
            for key, value in {
                "bind": f"{host}:{port}", "workers": workers, "worker_class": "gthread", "threads": THREADS_PER_WORKER,
                "accesslog": None, "timeout": 120,
            }.items():
                self.cfg.set(key, value)

        def load(self):
            app = create_app(db_url, model_ref, target, rerun_in_thread=False)
            # Dash registers the scripts it may serve when it renders the page; a worker whose first
            # request is a script, the page having come from another worker, would refuse it
            app.server.test_client().get("/")
            return app.server

    print(f"tilescope: serving {model_ref} on http://{host}:{port} with {workers} workers", flush=True)
    Workers().run()
