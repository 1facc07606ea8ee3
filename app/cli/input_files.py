"""Files a command reads, named on its command line: read whole, or one line naming why not."""

from __future__ import annotations

from pathlib import Path

from tilescope.compiler.errors import TilescopeError


def read_bytes(name: str, limit: int | None = None) -> bytes:
    """The file's bytes; refused, before it is read, when larger than `limit` bytes."""
    path = Path(name)
    try:
        size = path.stat().st_size
        if limit is not None and size > limit:
            raise TilescopeError(f"{name}: {size / 2**20:,.0f} MiB; read up to {limit >> 20} MiB")
        return path.read_bytes()
    except FileNotFoundError:
        raise TilescopeError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise TilescopeError(f"{name}: a directory, not a file") from None
    except OSError as err:  # a name longer than the file system takes, no permission
        raise TilescopeError(f"{name}: cannot read: {err.strerror or err}") from None


def read_text(name: str) -> str:
    """The file as UTF-8 text (a byte order mark dropped)."""
    try:
        return read_bytes(name).decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise TilescopeError(f"{name}: cannot read: {err}") from None
