"""Files a command writes: said to be writable before the command's work, and written whole."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from tilescope.compiler.errors import TilescopeError


def check_writable(path: Path, force: bool) -> None:
    """One line, before any work, if `path` cannot be written: a directory, no such directory, or
    a file (or link) there already without `force`."""
    try:
        if path.is_dir() or not path.parent.is_dir():
            raise TilescopeError(f"{path}: cannot write: {'a directory' if path.is_dir() else 'no such directory'}")
    except OSError as err:  # a name longer than the file system takes, say
        raise TilescopeError(f"{path}: cannot write: {err.strerror or err}") from None
    if os.path.lexists(path) and not force:
        raise TilescopeError(f"{path}: exists; give --force to replace it")


def replace_file(path: Path, text: str) -> None:
    """Write `text` to a new file beside `path`, then rename it over `path`: a link at `path` is
    replaced, not written through, and a failed write leaves the old file whole."""
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as err:
        raise TilescopeError(f"{path}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(temporary, 0o666 & ~_umask())  # as a plain new file would be, not mkstemp's 0600
        os.replace(temporary, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise TilescopeError(f"{path}: cannot write: {err.strerror or err}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
