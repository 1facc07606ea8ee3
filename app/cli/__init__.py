"""The `tilescope` command line: one module per command group beside the parser (commands.py)."""

from .commands import main

__all__ = ["main"]
