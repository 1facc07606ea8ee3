"""Build the Dash app on a database, and serve it."""

from __future__ import annotations

import contextlib
import errno
import faulthandler
import os
import signal
import socket
import sys
from pathlib import Path

from dash import Dash, html, set_props
from dash.exceptions import BackgroundCallbackError

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.targets.catalog import load_target
from tilescope.perfdb.engine import open_db, session_factory

from tilescope.app.web import celery_jobs
from tilescope.app.web import ids
from tilescope.app.web import panels
from tilescope.app.web.error_lines import error_line, first_line
from tilescope.app.web.caches import CacheDirs, cache_dirs, default_jobs_dir, keep_compilations_in, open_job_cache
from tilescope.app.workbench.explorer import Explorer
from tilescope.app.web.auth import SignIn, Users, is_loopback, new_secret, read_users, require_door
from tilescope.app.web.jobs import ProcessJobs
from tilescope.app.workbench.model_access import ModelAccess
from tilescope.app.web.page import page
from tilescope.app.web.panel import PageContext, Wiring
from tilescope.app.web.request_limits import limit_requests
from tilescope.app.workbench.defaults import DEFAULT_TARGET
from tilescope.app.web.thread_jobs import ThreadJobManager
from tilescope.app.web.users_file import UsersFile


# the page's CSS and JS: tilescope/assets, in the checkout and in an installed wheel alike
ASSETS = Path(__file__).resolve().parents[2] / "assets"
JOB_FAILED = "An error occurred inside a background callback: "  # how Dash words a job's error


def create_app(
    db_url: str | None = None,
    model_ref: str = "zoo:mlp",
    target: str = DEFAULT_TARGET,
    job_dir: str | None = None,
    rerun_in_thread: bool = True,
    store_opening_run: bool = True,
    access: ModelAccess | None = None,
    caches: CacheDirs | None = None,
) -> Dash:
    """The explorer on `db_url`, opened on `model_ref`; the model is compiled and stored if it has no
    run (unless `store_opening_run` is False: a Celery worker builds the app only for its tasks, and
    would race the server to store it). Re-runs run in a thread of this process, or
    (`rerun_in_thread` False: several processes serve the page, and the next poll of a job may
    reach another) as processes like compiles; with a Celery broker configured (app.celery_jobs),
    both run on Celery workers. Requests may name what `access` allows (by default, no
    directory of models). Jobs keep their results in `caches` (by default, as `job_dir` or the
    user's cache directory has them: app.web.caches)."""
    broker = celery_jobs.broker_url()
    if broker:
        celery_jobs.check_broker(broker)
    explorer = Explorer(session_factory(open_db(db_url)))
    caches = caches or cache_dirs(Path(job_dir) if job_dir else default_jobs_dir())
    keep_compilations_in(caches.compilations)  # a restart then shows a big model at once
    if store_opening_run:  # the operator's model, whatever it is: before requests are limited
        explorer.ensure_run(model_ref, target)  # the first page load shows a stored run at once
    explorer.access = access or ModelAccess()
    # compiles and re-runs are background callbacks: each runs in a process of its own, reporting
    # its stage, and the page stays live; the job queue lives in a local cache directory
    jobs = open_job_cache(caches.jobs)
    manager = celery_jobs.CeleryJobs(celery_jobs.celery_app(broker)) if broker else ProcessJobs(jobs)
    app = Dash(
        __name__,
        assets_folder=str(ASSETS),
        title="tilescope",
        update_title=None,
        background_callback_manager=manager,
        on_error=_callback_failed,
    )
    limit_requests(app.server)
    app.layout = page(PageContext(explorer.model_options(model_ref), model_ref, load_target(target)))
    rerun_jobs = ThreadJobManager(jobs) if rerun_in_thread and not broker else None
    wiring = Wiring(app, explorer, rerun_jobs)
    app.tilescope_callbacks = panels.register(wiring)  # type: ignore[attr-defined]  # for tests
    app.explorer = explorer  # type: ignore[attr-defined]
    return app


def _callback_failed(err: Exception) -> None:
    """A callback that failed on something nobody foresaw: one line on the page and in the log
    (not an error 500 and a traceback); the page keeps what it shows."""
    if isinstance(err, BackgroundCallbackError):  # a job's failure: what the job said, without Dash's wording
        line = first_line(str(err).removeprefix(JOB_FAILED), type(err).__name__)
    else:
        line = error_line(err)
    sys.stderr.write(f"tilescope: a request failed: {line}\n")  # one write: threads' lines stay whole
    set_props(ids.PAGE_MESSAGE, {"children": html.P(f"That failed: {line}", className="error")})


def serve(
    db_url: str | None,
    model_ref: str,
    target: str,
    host: str,
    port: int,
    debug: bool = False,
    workers: int = 1,
    access: ModelAccess | None = None,
    users_file: str | None = None,
    insecure: bool = False,
) -> None:
    """Serve the explorer under gunicorn with `workers` processes; `debug` serves one process on
    Flask's own server instead, for its reloader and in-page errors while changing the code.
    Requests may name what `access` allows; with `users_file`, users sign in (HTTP basic), which
    a server other machines can reach must have unless `insecure`."""
    require_door(host, users_file, insecure)
    users = read_users(users_file) if users_file else None
    secret = new_secret()  # made here, so every worker signs sessions alike
    broker = celery_jobs.broker_url()
    if broker:  # before any worker starts, so a wrong broker is one line, not a worker per retry
        celery_jobs.check_broker(broker)
    _check_address(host, port)
    caches = cache_dirs(default_jobs_dir())  # once: the workers share the jobs' directory
    # the opening model's run is stored once, here, before the workers start and look for it; a
    # compilation made here is cached, and the forked workers inherit it
    engine = open_db(db_url)
    Explorer(session_factory(engine)).ensure_run(model_ref, target)
    engine.dispose()
    open_to = "signing in" if users else "insecure: no signing in" if not is_loopback(host) else "this machine only"

    def make_app() -> Dash:
        app = create_app(db_url, model_ref, target, rerun_in_thread=in_thread, access=access, caches=caches)
        # Flask takes no door once it has served a request, so the door comes first, open only
        # for the process's own first render: Dash registers the scripts it may serve when it
        # renders the page, and a worker whose first request is a script, the page having come
        # from another worker, would refuse it
        door = SignIn(app, Users(UsersFile(users_file), secret), secret) if users else None
        with door.opened() if door else contextlib.nullcontext():
            app.server.test_client().get("/")
        return app

    # re-runs run in a thread of the one worker, where the views find the compilation cached;
    # with several, the next poll of a job may reach another worker, so jobs run as processes
    in_thread = workers == 1 or debug
    if debug:
        print(
            f"tilescope: serving {model_ref} on http://{host}:{port} ({open_to}; debug: Flask's development server)",
            flush=True,
        )
        make_app().run(host=host, port=port, debug=True)
        return
    processes = f"{workers} gunicorn workers" if workers > 1 else "gunicorn, one worker"
    serving = f"tilescope: serving {model_ref} on http://{host}:{port} ({processes}; {open_to}); Ctrl+C stops it"
    _gunicorn(host, port, workers, serving, make_app)


def _check_address(host: str, port: int) -> None:
    """One line, before the opening model compiles, if the address cannot be listened on (gunicorn
    would retry five times and print ten lines)."""
    try:
        with socket.create_server((host, port)):  # SO_REUSEADDR, as gunicorn binds
            pass
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise TilescopeError(
                f"{host}:{port} is in use (choose another port with --port or $TILESCOPE_PORT)"
            ) from None
        # create_server adds the address to the reason; the message names it once
        reason = os.strerror(err.errno) if err.errno and err.errno > 0 else "no such host"
        raise TilescopeError(f"cannot listen on {host}:{port}: {reason} (see --host)") from None


# gunicorn takes the USR signals (reopen logs, upgrade); real-time signals are free
STACKS_SIGNAL = signal.SIGRTMIN
THREADS_PER_WORKER = 8  # a page sends several callbacks at once; a worker serves them side by side


def _worker_gone(arbiter, worker) -> None:
    """One line when a worker ends while the server still serves: gunicorn says nothing of a worker
    that exits cleanly, and starts another in its place."""
    if arbiter.LISTENERS:  # emptied as the server stops
        sys.stderr.write(f"tilescope: server worker {worker.pid} ended; a new one starts\n")


def _stacks_on_request(_arbiter=None, _worker=None) -> None:
    """STACKS_SIGNAL makes the process write every thread's stack to its log: what a stuck server
    is doing, without stopping it."""
    faulthandler.register(STACKS_SIGNAL, all_threads=True)


def _gunicorn(host: str, port: int, workers: int, serving: str, make_app) -> None:
    """gunicorn's workers, each with an app from `make_app`, until gunicorn is stopped; `serving`
    is printed once the socket listens, so the line never names an address that does not answer."""
    from gunicorn.app.base import BaseApplication  # noqa: PLC0415  # only this way of serving needs it

    from tilescope.app.web.slow_clients import PacedThreadWorker  # noqa: PLC0415

    class Workers(BaseApplication):
        def load_config(self) -> None:
            for key, value in {
                "bind": f"{host}:{port}",
                "workers": workers,
                "worker_class": PacedThreadWorker,
                "threads": THREADS_PER_WORKER,
                "accesslog": None,
                "timeout": 120,
                "loglevel": "warning",
                "when_ready": lambda _arbiter: print(serving, flush=True),
                "child_exit": _worker_gone,
                "post_fork": _stacks_on_request,
            }.items():
                self.cfg.set(key, value)

        def load(self):
            return make_app().server

    _stacks_on_request()
    Workers().run()
