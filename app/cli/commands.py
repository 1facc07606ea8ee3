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

from compiler.errors import TilescopeError
from perfdb.errors import DatabaseError, RunNotFound

from . import runs, serving, stored, tune, validate

GROUPS = (runs, tune, stored, validate, serving)  # in the order `tilescope --help` lists their commands


def _version() -> str:
    try:
        return importlib.metadata.version("tilescope")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    args = _parser().parse_args(argv)
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return args.command_fn(args)
    except (TilescopeError, DatabaseError, RunNotFound) as err:
        print(f"tilescope: error: {err}", file=sys.stderr)
        return 2
    except _sqlalchemy_errors() as err:  # the database failed mid-way: say so in one line
        reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
        print(f"tilescope: error: database: {reason}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # a run stores in one transaction: nothing of it was kept
        print("tilescope: interrupted", file=sys.stderr)
        return 130
