"""Who may use a server: HTTP basic authentication against a users file, and the rule that a
server reachable from other machines has it (or is declared `--insecure`).

A users file holds one `name:password-hash` line per user (werkzeug's salted hashes, as
`tilescope passwd FILE NAME` writes them); `#` starts a comment. Behind a reverse proxy that signs
users in (single sign-on), serve on the loopback and let the proxy be the door.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import socket
import threading
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

from compiler.errors import TilescopeError

AUTH_ENV = "TILESCOPE_AUTH_FILE"
USER_NAME = re.compile(r"[A-Za-z0-9._@+-]{1,64}")  # no ':' (the file's separator), nothing to escape
MAX_USERS_BYTES = 1 << 20
VERIFIED_KEPT = 1024  # credentials verified once, then known by a keyed digest: hashing is slow on purpose


def read_users(path: str | Path) -> dict[str, str]:
    """name -> password hash; one line naming the fault for a missing or malformed file."""
    try:
        text = Path(path).expanduser().read_text()[:MAX_USERS_BYTES]
    except FileNotFoundError:
        raise TilescopeError(f"{path}: no such users file (tilescope passwd {path} NAME makes one)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise TilescopeError(f"{path}: cannot read the users file: {err}") from None
    users = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, hashed = line.partition(":")
        if not sep or not USER_NAME.fullmatch(name) or "$" not in hashed:
            raise TilescopeError(f"{path}:{number}: expected NAME:HASH as tilescope passwd writes it")
        users[name] = hashed
    if not users:
        raise TilescopeError(f"{path}: no users (tilescope passwd {path} NAME adds one)")
    return users


def set_password(path: str | Path, name: str, password: str) -> bool:
    """Add the user, or replace their password; True if they were new. The file is readable by
    its owner only."""
    if not USER_NAME.fullmatch(name):
        raise TilescopeError(f"{name!r}: a user name is 1-64 letters, digits or ._@+-")
    if not password:
        raise TilescopeError("an empty password")
    path = Path(path).expanduser()
    lines = path.read_text().splitlines() if path.exists() else []
    entry = f"{name}:{generate_password_hash(password)}"
    kept = [line for line in lines if line.partition(":")[0].strip() != name]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("\n".join([*kept, entry]) + "\n")
    return len(kept) == len(lines)


class Users:
    """Checks a name and password against a users file's hashes. Hashing is slow on purpose, and
    a page makes many requests: credentials verified once are then known by a keyed digest."""

    def __init__(self, hashes: dict[str, str], secret_key: str) -> None:
        self._hashes = hashes
        self._key = secret_key.encode()
        self._verified: dict[bytes, None] = {}
        self._lock = threading.Lock()

    def check(self, name: str, password: str) -> bool:
        digest = hmac.new(self._key, f"{name}\0{password}".encode(), hashlib.sha256).digest()
        with self._lock:
            if digest in self._verified:
                return True
        hashed = self._hashes.get(name)
        if hashed is None or not check_password_hash(hashed, password):
            return False
        with self._lock:
            if len(self._verified) >= VERIFIED_KEPT:
                self._verified.pop(next(iter(self._verified)))
            self._verified[digest] = None
        return True


def new_secret() -> str:
    """A key for one server's sessions, shared by its workers."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool | None:
    """Whether every address `host` stands for is this machine's loopback; None if it stands for none."""
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return None
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def require_door(host: str, users_file: str | None, insecure: bool) -> None:
    """A server other machines can reach needs users to sign in, or the operator's word that it
    does not (`--insecure`). A host that is no address is left for the bind to report."""
    if users_file or insecure or is_loopback(host) is not False:
        return
    raise TilescopeError(
        f"--host {host} is reachable from other machines: give --auth FILE (users, from tilescope passwd) "
        f"or ${AUTH_ENV}, serve on 127.0.0.1 behind a signing-in proxy, or pass --insecure"
    )
