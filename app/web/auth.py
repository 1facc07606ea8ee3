"""Who may use a server: HTTP basic authentication against a users file (app.web.users_file),
and the rule that a server reachable from other machines has it (or is declared `--insecure`).

Behind a reverse proxy that signs users in (single sign-on), serve on the loopback and let the
proxy be the door.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import ipaddress
import secrets
import socket
import sys
import threading
from dataclasses import dataclass

import flask
from dash import Dash
from dash_auth.auth import Auth
from werkzeug.security import check_password_hash

from tilescope.compiler.errors import TilescopeError

from tilescope.app.web.sign_in_limits import SignInLimits
from tilescope.app.web.users_file import AUTH_ENV, Roster, UsersFile, read_users, set_password

__all__ = [
    "AUTH_ENV",
    "SignIn",
    "Users",
    "is_loopback",
    "new_secret",
    "read_users",
    "require_door",
    "set_password",
    "signed_in",
]

VERIFIED_KEPT = 1024  # credentials verified once, then known by a keyed digest: hashing is slow on purpose


@dataclass(frozen=True)
class Answer:
    """A sign-in's outcome: let in, refused, or (wait_s > 0) not heard after too many failures."""

    allowed: bool
    wait_s: int = 0


LET_IN, REFUSED = Answer(True), Answer(False)


class Users:
    """Checks a name and password against a users file as it is now. Hashing is slow on purpose,
    and a page makes many requests: credentials verified once are then known by a keyed digest,
    until the file changes. A name not in the file costs the same check as one in it (against a
    hash nobody matches), so the time of a refusal does not tell which names exist."""

    def __init__(self, users: UsersFile, secret_key: str, limits: SignInLimits | None = None) -> None:
        self._file = users
        self._key = secret_key.encode()
        self._limits = limits or SignInLimits()
        self._roster: Roster | None = None  # the one the digests were verified against
        self._verified: dict[bytes, None] = {}
        self._lock = threading.Lock()

    def check(self, name: str, password: str, address: str = "") -> Answer:
        roster = self._file.roster()
        if roster is None:
            return REFUSED
        digest = hmac.new(self._key, f"{name}\0{password}".encode(), hashlib.sha256).digest()
        with self._lock:
            if roster is not self._roster:
                self._roster = roster
                self._verified.clear()
            elif digest in self._verified:
                return LET_IN
        wait_s = self._limits.wait_s(address, name)
        if wait_s:
            return Answer(False, wait_s)
        hashed = roster.hashes.get(name)
        if not _matches(hashed or roster.dummy, password) or hashed is None:
            self._limits.failed(address, name)
            return REFUSED
        with self._lock:
            if roster is self._roster:
                if len(self._verified) >= VERIFIED_KEPT:
                    self._verified.pop(next(iter(self._verified)))
                self._verified[digest] = None
        return LET_IN


def _matches(hashed: str, password: str) -> bool:
    try:
        return check_password_hash(hashed, password)
    except (ValueError, OverflowError, MemoryError) as err:  # the file's entries were checked as it was read
        sys.stderr.write(f"tilescope: a password hash could not be checked: {err}\n")
        return False


def credentials(header: str) -> tuple[str, str] | None:
    """(name, password) of a Basic Authorization header; None for anything else."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        name, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (name, password) if sep else None


class SignIn(Auth):
    """HTTP basic authentication (dash-auth's door) against a users file. A malformed
    Authorization header is refused like a wrong password; past the failed sign-ins a server
    hears, the answer is 429 with the seconds to wait."""

    def __init__(self, app: Dash, users: Users, secret_key: str) -> None:
        super().__init__(app)
        app.server.secret_key = secret_key
        self._users = users
        self._open = False
        # first of all: dash-auth's own check reads a callback's body before the credentials,
        # and the request limits would count a stranger's large body against everyone's
        app.server.before_request_funcs.setdefault(None, []).insert(0, self._refuse_strangers)

    def _refuse_strangers(self):
        if self.is_authorized():
            return None
        wait_s = self._answer().wait_s
        if wait_s:
            said = f"Too many failed sign-ins: try again in {wait_s} s"
            return flask.Response(said, status=429, headers={"Retry-After": str(wait_s)})
        return self.login_request()

    @contextlib.contextmanager
    def opened(self):
        """Open while the process renders its own page, before it serves anyone."""
        self._open = True
        try:
            yield
        finally:
            self._open = False

    def is_authorized(self) -> bool:
        return self._open or self._answer().allowed

    def _answer(self) -> Answer:
        """This request's answer, checked once however often it is asked for (a failure counts once)."""
        if "sign_in" not in flask.g:
            given = credentials(flask.request.headers.get("Authorization", ""))
            address = flask.request.remote_addr or ""
            flask.g.sign_in = self._users.check(*given, address) if given else REFUSED
            if flask.g.sign_in.allowed:
                flask.g.signed_in = given[0]
        return flask.g.sign_in

    def login_request(self):
        return flask.Response("Sign in", status=401, headers={"WWW-Authenticate": 'Basic realm="tilescope"'})


def signed_in() -> str | None:
    """The name this request signed in with at the server's door; None without a door, or
    outside a request. Kept for the request alone: the credentials come with every request."""
    return flask.g.get("signed_in") if flask.has_request_context() else None


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
