"""The `tilescope` command line: a module per command group (runs, stored, serving), joined by
the parser in commands.py."""

from __future__ import annotations

import atexit
import os
import sys
import threading

from tilescope.app.cli.commands import main

__all__ = ["main", "entry"]


def entry() -> None:
    """The `tilescope` executable: `main`, then out without tearing the interpreter down. A run
    holds compilations of millions of objects, and freeing them one by one at exit, as the
    interpreter does, took seconds on large models for memory the system takes back at once.
    Exit handlers still run; with another thread still working, the exit is the usual one."""
    code = main()
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader left (`| head`): what is unread is not wanted
        pass
    os._exit(code)
