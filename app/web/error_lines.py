"""An error as one line, as a page or the server's log says it: written one way wherever a failure
is told (a callback's, a job's, a job cache's)."""

from __future__ import annotations

import os

from tilescope.compiler.errors import TilescopeError

LINE_CHARS = 300  # of one line: past this, a message is a dump, not something to read


def first_line(text: str, otherwise: str) -> str:
    """The first line of `text`, cut to LINE_CHARS; `otherwise` when it has none."""
    return (text.splitlines() or [otherwise])[0][:LINE_CHARS] or otherwise


def error_line(err: BaseException) -> str:
    """`err` in one line: tilescope's own errors as they say (written for their reader), a system
    error by its cause without the path it names (a page's reader has no use for the server's
    paths), any other named by its type, as nobody foresaw it."""
    name = type(err).__name__
    if isinstance(err, OSError) and err.errno:
        return f"{name}: {os.strerror(err.errno)}"
    said = first_line(str(err), "")
    if isinstance(err, TilescopeError):
        return said or name
    return first_line(f"{name}: {said}", name) if said else name
