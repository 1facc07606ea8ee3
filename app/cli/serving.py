"""`tilescope serve`, `passwd` and `worker`: the web app, its users, and its Celery workers."""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from tilescope.compiler.errors import TilescopeError

from tilescope.app.web.users_file import AUTH_ENV, set_password
from tilescope.app.workbench.defaults import DEFAULT_TARGET
from tilescope.app.cli.options import EXAMPLE_MODEL, MODEL_HELP, TARGET_HELP, add_common, add_web_limits

PORT_ENV, DEFAULT_PORT = "TILESCOPE_PORT", 8050


def add(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="start the web app")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=port_number,
        default=None,
        help=f"port to listen on (default ${PORT_ENV} or {DEFAULT_PORT})",
    )
    serve.add_argument(
        "--model",
        default=EXAMPLE_MODEL,
        help="model the page opens on, compiled and stored if it has no run yet: " + MODEL_HELP,
    )
    serve.add_argument("--target", default=DEFAULT_TARGET, help=TARGET_HELP)
    serve.add_argument(
        "--debug",
        action="store_true",
        help="Dash's debug mode on Flask's development server, one process: reload on code changes, errors in the page",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="gunicorn worker processes, for several users at once (default 1)",
    )
    serve.add_argument(
        "--auth",
        metavar="FILE",
        default=None,
        help=f"users who may sign in (HTTP basic), one NAME:HASH a line "
        f"as tilescope passwd writes (default ${AUTH_ENV})",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="serve on an address other machines reach without signing in (anyone there reads every run)",
    )
    add_web_limits(serve)
    add_common(serve, target=False)

    passwd = sub.add_parser("passwd", help="add a user to a users file for serve --auth, or change their password")
    passwd.add_argument("file", help="the users file (made, readable by its owner only, if missing)")
    passwd.add_argument("name", help="user name: letters, digits, ._@+-")

    worker = sub.add_parser(
        "worker",
        help="run compile and re-run jobs for the app on Celery ($TILESCOPE_CELERY_BROKER, e.g. redis://...)",
    )
    worker.add_argument("--model", default=EXAMPLE_MODEL, help="the model the app opens on (as given to serve)")
    worker.add_argument("--target", default=DEFAULT_TARGET, help="the app's target (as given to serve)")
    worker.add_argument(
        "--concurrency", type=int, metavar="N", help="jobs run at once (default: as many as one server runs at once)"
    )
    add_web_limits(worker, "(as given to serve)")
    add_common(worker, target=False)
    serve.set_defaults(command_fn=cmd_serve)
    passwd.set_defaults(command_fn=cmd_passwd)
    worker.set_defaults(command_fn=cmd_worker)


def cmd_worker(args) -> int:
    from tilescope.app.web.celery_jobs import BROKER_ENV, broker_url, work
    from tilescope.app.web.job_book import JOBS_AT_ONCE
    from tilescope.app.web.server import create_app
    from tilescope.app.workbench.model_access import ModelAccess

    url = broker_url()
    if url is None:
        raise TilescopeError(f"no broker: set {BROKER_ENV} (e.g. redis://127.0.0.1:6379/0), as for the app")
    # registers the app's background callbacks as tasks; the server stores the opening run
    create_app(
        args.db, args.model, args.target, store_opening_run=False, access=ModelAccess.of(args.models_dir, args.max_ops)
    )
    work(url, args.concurrency or JOBS_AT_ONCE)
    return 0


def port_number(text: str) -> int:
    if not (text.strip().isascii() and text.strip().isdigit()) or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def port_from_env() -> int:
    """The port to serve on when none is given: $TILESCOPE_PORT, else the default."""
    text = os.environ.get(PORT_ENV, "").strip()
    try:
        return port_number(text) if text else DEFAULT_PORT
    except argparse.ArgumentTypeError:
        raise TilescopeError(f"${PORT_ENV}={text!r} is not a port number (1-65535)") from None


def cmd_serve(args) -> int:
    from tilescope.app.web.server import serve
    from tilescope.app.workbench.model_access import ModelAccess

    if args.workers < 1:
        raise TilescopeError(f"--workers {args.workers}: a number of processes is at least 1")
    port = args.port if args.port is not None else port_from_env()
    _store_torch_model(args)
    serve(
        db_url=args.db,
        model_ref=args.model,
        target=args.target,
        host=args.host,
        port=port,
        debug=args.debug,
        workers=args.workers,
        access=ModelAccess.of(args.models_dir, args.max_ops),
        users_file=args.auth or os.environ.get(AUTH_ENV) or None,
        insecure=args.insecure,
    )
    return 0


def _store_torch_model(args) -> None:
    """A PyTorch model the operator named (model.pt2, model.py:build) is imported here, in the
    command they typed, and its run stored: the server opens it from the stored text and never
    reads the file, whose loading runs code."""
    from tilescope.app.cli.torch_refs import is_torch_ref, load_torch_ref

    if not is_torch_ref(args.model):
        return
    from tilescope.perfdb.engine import open_db, session_factory

    from tilescope.app.workbench.explorer import Explorer

    text = load_torch_ref(args.model).text
    Explorer(session_factory(open_db(args.db))).ensure_run(args.model, args.target, source_text=text)


def cmd_passwd(args) -> int:
    password = _password(args.name)
    new = set_password(args.file, args.name, password)
    print(f"{'added' if new else 'changed the password of'} {args.name} in {args.file}")
    return 0


def _password(name: str) -> str:
    """Asked twice on a terminal; else the first line of standard input (for scripts), without its
    end: LF, or CR LF as a file written on Windows ends it."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    first = getpass.getpass(f"password for {name}: ")
    if getpass.getpass("again: ") != first:
        raise TilescopeError("the passwords differ")
    return first
