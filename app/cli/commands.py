"""The `tilescope` command line: the parser, each command group adding its own commands
(runs.py, stored.py, serving.py), and one line for any error.

Building the parser imports only the light modules its choices and help name; each command
imports the compiler, the database and the app when it runs. Importing those (the MLIR bindings,
SQLAlchemy, Alembic, numpy) takes most of a second, which `tilescope --help` should not wait for.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import sys
from collections.abc import Sequence
from typing import NoReturn

from tilescope.compiler.errors import TilescopeError
from tilescope.perfdb.errors import DatabaseError, RunNotFound

from tilescope.app.cli import calibrate
from tilescope.app.cli import replay
from tilescope.app.cli import runs
from tilescope.app.cli import serving
from tilescope.app.cli import stored
from tilescope.app.cli import tune
from tilescope.app.cli import validate
from tilescope.app.cli.messages import error, one_line, undecodable

# in the order `tilescope --help` lists their commands
GROUPS = (runs, tune, stored, replay, validate, calibrate, serving)


def _version() -> str:
    try:
        return importlib.metadata.version("tilescope")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its sub-commands' too), with a usage error in one line, as every other
    error: `tilescope COMMAND --help` shows the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tilescope", description="Tune ML accelerator compilation: compile, simulate, store, compare."
    )
    parser.add_argument("--version", action="version", version=f"tilescope {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.add(sub)
    return parser


# Collect cycles every 100k allocations rather than 700: a compilation makes hundreds of
# thousands of long-lived objects, and at the default each full collection walks them all again
# (a third of a re-run's time on a 10k-op model). tilescope makes few reference cycles.
GC_THRESHOLDS = (100_000, 50, 100)


def _sqlalchemy_errors() -> tuple[type[Exception], ...]:
    """SQLAlchemy's base error if a command imported SQLAlchemy; a command that did not cannot raise it."""
    exc = sys.modules.get("sqlalchemy.exc")
    return (exc.SQLAlchemyError,) if exc is not None else ()


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    typed = undecodable(argv)
    if typed is not None:
        error(f"argument '{typed}' is not valid UTF-8: models, labels and paths are kept as text")
        return 2
    args = _parser().parse_args(argv)
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return args.command_fn(args)
    except (TilescopeError, DatabaseError, RunNotFound) as err:
        error(str(err))
        return 2
    except _sqlalchemy_errors() as err:  # the database failed mid-way: say so in one line
        reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
        error(f"database: {reason}")
        return 2
    except BrokenPipeError:
        return 0
    except OSError as err:  # a file named on the command line that the system refused (a name too long)
        error(f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err))
        return 2
    except KeyboardInterrupt:  # a run stores in one transaction: nothing of it was kept
        print("tilescope: interrupted", file=sys.stderr)
        return 130
