"""Directories and files only the server's user may read or change: its caches.

The caches hold model source, job results, the secret that signs a page's job handles, and
pickles, which run code as they load. A cache another local user could write (the user who made
a shared `$XDG_CACHE_HOME` first, say) would run that user's code as the server; one they could
read would give them the models and the secret. So a cache directory is made 0700 and its files
0600; one of another user's, or under a directory another user may change, is refused, and the
caller goes on without it.

A directory of this user's that is open to others (made by an older tilescope, 0755) is narrowed
and its entries with it, unless one of them is another user's. What is in a directory others
could reach only through it: an entry open to others in one that was not (diskcache makes its
value directories with the umask's 0755, in a cache that is 0700) was never theirs to reach.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from tilescope.compiler.errors import TilescopeError

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
KEY_BYTES = 32


class NotPrivate(TilescopeError):
    """A path that cannot be kept to this user: one line naming it and why."""


def make_private(directory: Path | str, *, entries: bool = False) -> bool:
    """Make `directory` (and its missing parents) a directory only this user may use, or narrow an
    existing one of this user's to 0700, and with `entries` everything in it (files 0600). Whether
    it was open to others before, so that what it holds may be known to them (what it holds they
    reached only through it, whatever its entries' own modes). NotPrivate when a
    directory above it may be changed by another user, or it or an entry is a link or another
    user's; or when the file system refuses (read-only, no room, no permission)."""
    path = Path(os.path.abspath(directory))
    try:
        for above in reversed(path.parents):
            if not above.exists():
                _make(above)
            _check_above(above)
        if not path.exists():
            _make(path)
        found = os.lstat(path)
        if not stat.S_ISDIR(found.st_mode) and not stat.S_ISLNK(found.st_mode):
            raise NotPrivate(f"{path}: not a directory")
        opened = _narrow(path, found)
        if entries:
            _narrow_entries(path)
    except OSError as err:
        raise _refused(err, path) from None
    return opened


def open_private(path: Path | str) -> int:
    """A descriptor of the regular file `path`, read only, if it is this user's and nobody else's
    to read or write; NotPrivate if not (FileNotFoundError if there is none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP:  # O_NOFOLLOW's answer to a link
            raise NotPrivate(f"{path}: a link") from None
        raise
    found = os.fstat(fd)
    if stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid() and not found.st_mode & 0o077:
        return fd
    os.close(fd)
    kind = None if stat.S_ISREG(found.st_mode) else "not a regular file"
    raise NotPrivate(f"{path}: {_whose(found) or kind or 'readable or writable by others'}")


def create_private(path: Path | str) -> int:
    """A descriptor of a new file `path`, 0600, to write and read back; FileExistsError if anything
    is there."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)


def private_key(path: Path | str) -> bytes:
    """The random key kept in `path` (0600, in a private directory), made on first use. Processes
    asking at once get the same key: each writes its own aside, and the first to link it wins.
    NotPrivate if it cannot be read or made."""
    path = Path(path)
    try:
        if not path.exists():
            aside = path.with_name(f"{path.name}.{os.urandom(8).hex()}.new")
            with os.fdopen(create_private(aside), "wb") as out:
                out.write(os.urandom(KEY_BYTES))
            try:
                os.link(aside, path)  # whole or not at all, and never over another's
            except FileExistsError:
                pass
            finally:
                aside.unlink()
        with os.fdopen(open_private(path), "rb") as f:
            key = f.read(KEY_BYTES + 1)
    except OSError as err:
        raise _refused(err, path) from None
    if len(key) != KEY_BYTES:
        raise NotPrivate(f"{path}: not a key of {KEY_BYTES} bytes")
    return key


def _refused(err: OSError, path: Path) -> NotPrivate:
    """The file system's refusal (read-only, no room, no permission), named where it happened."""
    return NotPrivate(f"{err.filename or path}: {os.strerror(err.errno) if err.errno else err}")


def _make(path: Path) -> None:
    try:
        os.mkdir(path, DIRECTORY_MODE)
    except FileExistsError:  # made meanwhile, by another process or another user: checked next
        pass


def _whose(found: os.stat_result) -> str | None:
    """Why an entry that is another user's, or a link, is refused (None if it is neither)."""
    if stat.S_ISLNK(found.st_mode):
        return "a link"
    if found.st_uid != os.geteuid():
        return f"owned by uid {found.st_uid}, not this user (uid {os.geteuid()})"
    return None


def _check_above(directory: Path) -> None:
    """A directory above a cache: root's or this user's, and nobody else may rename what is in it
    (the system's /tmp may be written by all: its sticky bit keeps others to their own entries; a
    group that may write must be this user's own)."""
    found = os.stat(directory)  # a link above is followed: what it names is checked
    if found.st_uid not in (0, os.geteuid()):
        raise NotPrivate(f"{directory}: owned by uid {found.st_uid}, so not private to this user")
    others_write = found.st_mode & 0o002 or (found.st_mode & 0o020 and found.st_gid != os.getegid())
    if others_write and not found.st_mode & stat.S_ISVTX:
        raise NotPrivate(f"{directory}: other users may write in it, so not private to this user")


def _narrow(path: Path, found: os.stat_result) -> bool:
    """Refuse `path` if it is a link or another user's; else take others' access away from it.
    Whether they had any."""
    why = _whose(found)
    if why:
        raise NotPrivate(f"{path}: {why}")
    if not stat.S_ISDIR(found.st_mode) and not stat.S_ISREG(found.st_mode):
        raise NotPrivate(f"{path}: neither a directory nor a regular file")
    mode = DIRECTORY_MODE if stat.S_ISDIR(found.st_mode) else FILE_MODE
    if stat.S_IMODE(found.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(found.st_mode) & mode, follow_symlinks=False)
        return True
    return False


def _narrow_entries(directory: Path) -> None:
    """Narrow everything in `directory`; an entry removed meanwhile (another server of this user's
    on the same cache goes on working in it) is passed over."""
    for top, dirs, files in os.walk(directory):  # links are not followed: _narrow refuses them
        for name in dirs + files:
            entry = Path(top) / name
            try:
                _narrow(entry, os.lstat(entry))
            except FileNotFoundError:
                pass
