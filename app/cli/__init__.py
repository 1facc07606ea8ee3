"""The `tilescope` command line: a module per command group (runs, stored, serving), joined by
the parser in commands.py."""

from .commands import main

__all__ = ["main"]
