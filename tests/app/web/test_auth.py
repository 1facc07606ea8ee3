"""app.web.auth and the door it puts on a server: users files, password checks, and the rule that a
server other machines can reach has users sign in."""

from __future__ import annotations

import base64
import stat

import pytest

from app.web.auth import Users, is_loopback, read_users, require_door, set_password
from app.cli import main
from app.web.server import SignIn, create_app
from compiler.errors import TilescopeError

MODEL = "zoo:mlp?layers=1"


def _basic(credentials: bytes) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(credentials).decode()}


def test_passwd_writes_a_users_file_only_its_owner_reads(tmp_path, capsys, monkeypatch):
    users = tmp_path / "users"
    monkeypatch.setattr("sys.stdin", _Lines("s3cret\n"))
    assert main(["passwd", str(users), "alice"]) == 0
    assert capsys.readouterr().out == f"added alice in {users}\n"
    monkeypatch.setattr("sys.stdin", _Lines("other\n"))
    assert main(["passwd", str(users), "bob"]) == 0
    monkeypatch.setattr("sys.stdin", _Lines("new\n"))
    assert main(["passwd", str(users), "alice"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"changed the password of alice in {users}"
    assert stat.S_IMODE(users.stat().st_mode) == 0o600
    hashes = read_users(users)
    assert sorted(hashes) == ["alice", "bob"] and "new" not in users.read_text()  # hashes, not passwords
    checker = Users(hashes, "key")
    assert checker.check("alice", "new") and checker.check("bob", "other")
    assert not checker.check("alice", "s3cret") and not checker.check("carol", "new") and not checker.check("bob", "")


class _Lines:
    """Standard input that is not a terminal: the password is its first line."""

    def __init__(self, text: str) -> None:
        self.text = text

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        return self.text


@pytest.mark.parametrize(
    "content, fault",
    [
        ("", "no users"),
        ("alice\n", ":1: expected NAME:HASH"),
        ("# team\nal ice:pbkdf2$x$y\n", ":2: expected NAME:HASH"),
        ("alice:plaintext\n", ":1: expected NAME:HASH"),
    ],
)
def test_a_malformed_users_file_is_one_line(tmp_path, content, fault):
    path = tmp_path / "users"
    path.write_text(content)
    with pytest.raises(TilescopeError) as err:
        read_users(path)
    assert fault in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(TilescopeError, match="no such users file"):
        read_users(tmp_path / "missing")


def test_a_bad_user_name_or_empty_password_is_refused(tmp_path):
    with pytest.raises(TilescopeError, match="a user name is"):
        set_password(tmp_path / "users", "a:b", "x")
    with pytest.raises(TilescopeError, match="an empty password"):
        set_password(tmp_path / "users", "alice", "")


def test_loopback_is_told_from_addresses_other_machines_reach():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert is_loopback("0.0.0.0") is False and is_loopback("::") is False
    assert is_loopback("host.invalid") is None  # no address: the bind reports it


def test_a_server_other_machines_reach_needs_a_door_or_insecure(tmp_path, capsys):
    require_door("127.0.0.1", None, False)
    require_door("0.0.0.0", "users", False)
    require_door("0.0.0.0", None, True)
    db = tmp_path / "perf.db"
    assert main(["serve", "--host", "0.0.0.0", "--db", f"sqlite:///{db}", "--model", MODEL]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--auth" in err and "--insecure" in err and "reachable from other machines" in err
    assert not db.exists()  # refused before anything else


def test_the_door_refuses_without_right_credentials_and_never_fails(tmp_path):
    users = tmp_path / "users"
    set_password(users, "alice", "s3cret")
    app = create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, job_dir=str(tmp_path / "jobs"))
    SignIn(app, Users(read_users(users), "key"), "key")
    client = app.server.test_client()
    assert client.get("/").status_code == 401
    assert client.get("/_dash-layout").status_code == 401
    assert client.get("/", headers=_basic(b"alice:s3cret")).status_code == 200
    for header in (
        _basic(b"alice:wrong"),
        _basic(b"nobody:s3cret"),
        _basic(b"no colon"),
        _basic(b"\xff\xfe:x"),
        {"Authorization": "Bearer token"},
        {"Authorization": "Basic !!!"},
        {"Authorization": ""},
    ):
        assert client.get("/_dash-layout", headers=header).status_code == 401, header


def test_a_stranger_is_refused_before_the_server_reads_a_body(tmp_path):
    """dash-auth reads a callback's body before it asks for credentials; the door asks first, so
    a stranger's body is never parsed nor counted against the large-body limit."""
    users = tmp_path / "users"
    set_password(users, "alice", "s3cret")
    app = create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, job_dir=str(tmp_path / "jobs"))
    SignIn(app, Users(read_users(users), "key"), "key")
    client = app.server.test_client()
    for body in (b"[]", b"{}", b"not json"):
        answer = client.post("/_dash-update-component", data=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 401 and "WWW-Authenticate" in answer.headers, body
    signed = client.post(
        "/_dash-update-component", data=b"[]", headers={"Content-Type": "application/json", **_basic(b"alice:s3cret")}
    )
    assert signed.status_code == 400  # read, once signed in
