"""The users file of a server whose users sign in: one `name:password-hash` line per user
(werkzeug's salted hashes, as `tilescope passwd FILE NAME` writes them); `#` starts a comment.

A server reads it again whenever it changes, so a changed password or a removed user counts from
the next request. As ssh refuses an authorized_keys file others may write, a users file anyone but
its owner may write (or in a directory others may write) lets nobody in; so does an entry whose
hash would cost a sign-in more than about a second, or that names a method werkzeug does not know.
`tilescope passwd` writes a new file beside the old and renames it over it, never through a link.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from werkzeug.security import DEFAULT_PBKDF2_ITERATIONS, generate_password_hash

from tilescope.compiler.targets.data_file import shown
from tilescope.compiler.errors import TilescopeError

AUTH_ENV = "TILESCOPE_AUTH_FILE"  # the users file, when serve is given no --auth

USER_NAME = re.compile(r"[A-Za-z0-9._@+-]{1,64}")  # no ':' (the file's separator), nothing to escape
MAX_USERS_BYTES = 1 << 20
# a sign-in's work, at most twice werkzeug's defaults (scrypt:32768:8:1, pbkdf2 of 1,000,000
# iterations): a hand-written 999,999,999 iterations made every sign-in take over 10 s
MAX_PBKDF2_ITERATIONS = 2 * DEFAULT_PBKDF2_ITERATIONS
SCRYPT_DEFAULT = (2**15, 8, 1)
MAX_SCRYPT_WORK = 2 * 2**15 * 8  # n * r * p; memory is 128 * n * r bytes
# a file's times move in clock ticks (jiffies): a file changed again within the tick it was read
# in keeps its times, and a rewrite of the same size would go unseen; so it is compared by
# content until its last change is this old
RACY_NS = 2 * 10**9


@dataclass(frozen=True)
class Roster:
    """Who may sign in: name -> password hash; and a hash of their method that no password
    matches, checked for a name that is not there so that it costs a known name's work."""

    hashes: dict[str, str]
    dummy: str

    @classmethod
    def of(cls, hashes: dict[str, str]) -> Roster:
        method = Counter(hashed.partition("$")[0] for hashed in hashes.values()).most_common(1)[0][0]
        return cls(hashes, f"{method}${secrets.token_hex(8)}${'00' * 32}")


def method_fault(hashed: str) -> str:
    """Why a password hash cannot be checked, or at a cost beyond a sign-in's; '' if it can."""
    method, *args = hashed.partition("$")[0].split(":")
    try:
        if method == "scrypt":
            n, r, p = map(int, args) if args else SCRYPT_DEFAULT
            if min(n, r, p) < 1 or n < 2 or n & (n - 1):
                return f"scrypt:{n}:{r}:{p} is no scrypt (n a power of 2, r and p at least 1)"
            if n * r * p > MAX_SCRYPT_WORK:
                return f"scrypt:{n}:{r}:{p} is more work than a sign-in may take (n*r*p at most {MAX_SCRYPT_WORK:,})"
        elif method == "pbkdf2":
            if len(args) > 2:
                return f"{shown(method)} takes a hash name and a number of iterations"
            name = args[0] if args else "sha256"
            iterations = int(args[1]) if len(args) == 2 else DEFAULT_PBKDF2_ITERATIONS
            hashlib.pbkdf2_hmac(name, b"", b"", 1)  # ValueError for a hash Python does not have
            if not 1 <= iterations <= MAX_PBKDF2_ITERATIONS:
                return (
                    f"pbkdf2 of {iterations:,} iterations is more work than a sign-in may take "
                    f"(at most {MAX_PBKDF2_ITERATIONS:,})"
                )
        else:
            return f"unknown hash method {shown(method)} (tilescope passwd writes scrypt)"
    except ValueError:
        return f"hash method {shown(hashed.partition('$')[0])} is malformed"
    return ""


def parse_users(text: str, path: object) -> Roster:
    """The roster a users file's text gives; one line naming the first faulty line."""
    users = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, hashed = line.partition(":")
        if not sep or not USER_NAME.fullmatch(name) or hashed.count("$") < 2:
            raise TilescopeError(f"{path}:{number}: expected NAME:HASH as tilescope passwd writes it")
        fault = method_fault(hashed)
        if fault:
            raise TilescopeError(f"{path}:{number}: {name}'s entry: {fault}")
        users[name] = hashed
    if not users:
        raise TilescopeError(f"{path}: no users (tilescope passwd {path} NAME adds one)")
    return Roster.of(users)


def _unsafe(path: Path, st: os.stat_result) -> str:
    """Why a users file cannot be trusted as who may sign in, or ''."""
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: not a regular file"
    if st.st_mode & 0o022:
        return f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):04o}): chmod 600 {path}"
    if st.st_uid not in (os.geteuid(), 0):
        return f"{path} belongs to user {st.st_uid}, not to the server's user or root"
    folder = os.stat(path.parent)
    if folder.st_mode & 0o002 and not folder.st_mode & stat.S_ISVTX:  # others could rename it away
        return f"{path.parent} is writable by others: keep the users file in a directory of your own"
    return ""


def read_text(path: Path) -> tuple[str, os.stat_result]:
    """The users file's text, and its status when read; one line naming the fault."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO named as the file does not block
    except FileNotFoundError:
        raise TilescopeError(f"{path}: no such users file (tilescope passwd {path} NAME makes one)") from None
    except OSError as err:
        raise TilescopeError(f"{path}: cannot read the users file: {err.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        st = os.fstat(fd)
        unsafe = _unsafe(path, st)
        if unsafe:
            raise TilescopeError(unsafe)
        try:
            return file.read(MAX_USERS_BYTES).decode(), st
        except (OSError, UnicodeDecodeError) as err:
            raise TilescopeError(f"{path}: cannot read the users file: {err}") from None


def read_users(path: str | Path) -> Roster:
    """Who may sign in, from a users file; one line naming the fault for a missing, unsafe or
    malformed file."""
    path = Path(path).expanduser()
    return parse_users(read_text(path)[0], path)


def set_password(path: str | Path, name: str, password: str) -> bool:
    """Add the user, or replace their password; True if they were new. The file is readable by
    its owner only; a link named as the file is refused, not followed."""
    if not USER_NAME.fullmatch(name):
        raise TilescopeError(f"{name!r}: a user name is 1-64 letters, digits or ._@+-")
    if not password:
        raise TilescopeError("an empty password")
    path = Path(path).expanduser()
    lines = _lines_of(path)
    kept = [line for line in lines if line.partition(":")[0].strip() != name]
    _replace(path, "\n".join([*kept, f"{name}:{generate_password_hash(password)}"]) + "\n")
    return len(kept) == len(lines)


def _lines_of(path: Path) -> list[str]:
    """The lines of the users file now at `path`, none if there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return []
    except OSError as err:
        if os.path.islink(path):
            raise TilescopeError(f"{path} is a symbolic link: name the users file itself") from None
        raise TilescopeError(f"{path}: cannot read the users file: {err.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TilescopeError(f"{path}: not a regular file")
        try:
            return file.read(MAX_USERS_BYTES).decode().splitlines()
        except UnicodeDecodeError as err:
            raise TilescopeError(f"{path}: cannot read the users file: {err}") from None


def _replace(path: Path, text: str) -> None:
    """Write `text` as the file at `path`, whole or not at all: a new file of its own beside it,
    then renamed over it (a rename replaces a link; it never writes through one)."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as err:
        temporary.unlink(missing_ok=True)
        raise TilescopeError(f"{path}: cannot write the users file: {err.strerror}") from None


@dataclass(frozen=True)
class _Seen:
    """What a stat tells of a file's content and safety: any change means read it again."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    mode: int
    owner: int

    @classmethod
    def of(cls, st: os.stat_result) -> _Seen:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid)


class UsersFile:
    """A users file as it is now: read again when a stat (a few microseconds, at each sign-in)
    says it changed. While it is missing, unsafe or malformed nobody signs in, and the server's
    log says why, once."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._seen: _Seen | None = None
        self._text = ""
        self._roster: Roster | None = None
        self._said = ""
        self._lock = threading.Lock()

    def roster(self) -> Roster | None:
        """Who may sign in now; None if nobody may."""
        try:
            seen = _Seen.of(os.stat(self.path))
        except OSError:
            seen = None
        with self._lock:
            if seen is None or seen != self._seen or time.time_ns() - seen.mtime_ns < RACY_NS:
                self._read(seen)
            return self._roster

    def _read(self, seen: _Seen | None) -> None:
        try:
            text, st = read_text(self.path)
            if text != self._text or self._roster is None:  # the same text keeps its verified sign-ins
                self._roster, self._text = parse_users(text, self.path), text
            self._seen, self._said = _Seen.of(st), ""
        except TilescopeError as err:
            self._roster, self._seen, self._text = None, seen, ""
            if str(err) != self._said:
                self._said = str(err)
                sys.stderr.write(f"tilescope: nobody may sign in until the users file is fixed: {err}\n")
