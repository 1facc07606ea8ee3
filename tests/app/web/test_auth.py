"""app.web.auth and the door it puts on a server: users files, password checks, and the rule that a
server other machines can reach has users sign in."""

from __future__ import annotations

import base64
import stat
import sys
import time

import pytest

from tilescope.app.web.auth import SignIn, Users, is_loopback, read_users, require_door, set_password
from werkzeug.security import generate_password_hash

from tilescope.app.cli import main
from tilescope.app.web.server import create_app
from tilescope.app.web.job_book import JOBS_PER_CLIENT
from tilescope.app.web.sign_in_limits import FAILURES_PER_USER, FailureCounts, SignInLimits
from tilescope.app.web.users_file import MAX_PBKDF2_ITERATIONS, UsersFile
from tilescope.compiler.errors import TilescopeError

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
    assert sorted(read_users(users).hashes) == ["alice", "bob"] and "new" not in users.read_text()  # hashes only
    checker = Users(UsersFile(users), "key")
    assert checker.check("alice", "new").allowed and checker.check("bob", "other").allowed
    assert not any(checker.check(name, password).allowed for name, password in _WRONG)


_WRONG = [("alice", "s3cret"), ("carol", "new"), ("bob", "")]


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
        ("alice:pbkdf2:sha256$salt\n", ":1: expected NAME:HASH"),
        (
            f"alice:pbkdf2:sha256:{MAX_PBKDF2_ITERATIONS + 1}$s$00\n",
            ":1: alice's entry: pbkdf2 of 2,000,001 iterations",
        ),
        ("alice:scrypt:1048576:8:1$s$00\n", ":1: alice's entry: scrypt:1048576:8:1 is more work"),
        ("alice:scrypt:1000:8:1$s$00\n", ":1: alice's entry: scrypt:1000:8:1 is no scrypt"),
        ("alice:pbkdf2:whirl:1000$s$00\n", ":1: alice's entry: hash method 'pbkdf2:whirl:1000' is malformed"),
        ("alice:plain$s$00\n", ":1: alice's entry: unknown hash method 'plain'"),
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
    SignIn(app, Users(UsersFile(users), "key"), "key")
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
    SignIn(app, Users(UsersFile(users), "key"), "key")
    client = app.server.test_client()
    for body in (b"[]", b"{}", b"not json"):
        answer = client.post("/_dash-update-component", data=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 401 and "WWW-Authenticate" in answer.headers, body
    signed = client.post(
        "/_dash-update-component", data=b"[]", headers={"Content-Type": "application/json", **_basic(b"alice:s3cret")}
    )
    assert signed.status_code == 400  # read, once signed in


def _hash_calls(check) -> list[str]:
    """The key derivations (scrypt, pbkdf2) that `check()` ran, as the profiler sees C calls."""
    calls = []

    def profile(_frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", "") in ("scrypt", "pbkdf2_hmac"):
            calls.append(arg.__name__)

    sys.setprofile(profile)
    try:
        check()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("method", ["scrypt", "pbkdf2"])
def test_a_name_not_in_the_file_costs_the_check_of_one_in_it(tmp_path, method):
    """Refusing a name nobody has took 1.2 ms and a known name's wrong password 65 ms: the time
    told which names exist. Both now derive a key of the same method and work."""
    users = tmp_path / "users"
    users.write_text(f"alice:{generate_password_hash('s3cret', method)}\n")
    users.chmod(0o600)
    checker = Users(UsersFile(users), "key")
    assert checker.check("alice", "s3cret").allowed  # the file read, its entries checked
    known = _hash_calls(lambda: checker.check("alice", "guess"))
    unknown = _hash_calls(lambda: checker.check("nobody", "guess"))
    assert known == unknown == [{"scrypt": "scrypt", "pbkdf2": "pbkdf2_hmac"}[method]]
    roster = read_users(users)
    assert roster.dummy.partition("$")[0] == roster.hashes["alice"].partition("$")[0]  # the same work factor
    assert not checker.check("nobody", "guess").allowed


def test_failures_are_counted_in_a_window_for_a_bounded_number_of_keys():
    now = [0.0]
    counts = FailureCounts(allowed=3, window_s=60, tracked=100, clock=lambda: now[0])
    for _ in range(3):
        assert counts.wait("10.0.0.1") == 0
        counts.add("10.0.0.1")
    assert counts.wait("10.0.0.1") == 60 and counts.wait("10.0.0.2") == 0
    now[0] = 59.5
    assert counts.wait("10.0.0.1") == 0.5
    now[0] = 60
    assert counts.wait("10.0.0.1") == 0  # the window has passed
    for i in range(100_000):  # an address per failure: the oldest are forgotten
        counts.add(f"10.1.{i >> 8}.{i & 255}")
    assert len(counts) == 100
    limits = SignInLimits(clock=lambda: now[0])
    for i in range(FAILURES_PER_USER):  # names over 64 characters count by their start
        limits.failed(f"10.2.0.{i}", "x" * 64 + str(i))
    assert limits.wait_s("10.3.0.1", "x" * 64 + "other") > 0 and limits.wait_s("10.3.0.1", "alice") == 0


def test_passwd_does_not_write_through_a_link(tmp_path, capsys, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("kept\n")
    users = tmp_path / "users"
    users.symlink_to(victim)
    monkeypatch.setattr("sys.stdin", _Lines("s3cret\n"))
    assert main(["passwd", str(users), "alice"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link" in err
    assert victim.read_text() == "kept\n" and users.is_symlink()
    users.unlink()
    set_password(users, "alice", "s3cret")
    inode = users.stat().st_ino
    set_password(users, "bob", "pw")  # a new file renamed over the old: never half written
    assert users.stat().st_ino != inode and sorted(p.name for p in tmp_path.iterdir()) == ["users", "victim"]
    assert sorted(read_users(users).hashes) == ["alice", "bob"]


def test_a_users_file_rewritten_within_a_clock_tick_is_read_again(tmp_path):
    """File times move in ticks: a rewrite of the same size within one leaves them as they were."""
    users = tmp_path / "users"
    set_password(users, "alice", "s3cret")
    file = UsersFile(users)
    checker = Users(file, "key")
    assert checker.check("alice", "s3cret").allowed
    entry = generate_password_hash("n3w")
    text = users.read_text()
    assert len(entry) == len(text.strip().partition(":")[2])
    with users.open("r+") as out:  # in place: the same inode and size
        out.write(f"alice:{entry}\n")
    assert file.roster().hashes["alice"] == entry
    assert not checker.check("alice", "s3cret").allowed and checker.check("alice", "n3w").allowed


def _wait_for(release):
    while not release.exists():
        time.sleep(0.01)
    return "done"


def test_a_signed_in_user_is_one_client_from_any_address(tmp_path):
    """Jobs are counted per client: with users, the user who signed in at the server's door,
    wherever they ask from (alice on two addresses holds her share, not two per address); two
    users on one address (a proxy's) are two clients."""
    users = tmp_path / "users"
    set_password(users, "alice", "s3cret")
    set_password(users, "bob", "pw")
    app = create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, job_dir=str(tmp_path / "jobs"))
    SignIn(app, Users(UsersFile(users), "key"), "key")
    manager = app._background_manager  # the server's own: jobs in processes, counted in its job book
    release = tmp_path / "release"
    started = []

    def start(credentials: bytes, address: str) -> str | None:
        """A job asked for through the door by `credentials` from `address`: None if it started,
        else the line its page hears."""
        key = manager.build_cache_key(_wait_for, [], [], None)
        context = app.server.test_request_context(headers=_basic(credentials), environ_base={"REMOTE_ADDR": address})
        with context:
            assert app.server.preprocess_request() is None  # let in
            job = manager.call_job_fn(key, manager.make_job_fn(lambda: _wait_for(release), progress=False), [], {})
            if not str(job).startswith("refused:"):
                started.append((key, job))
                return None
            return manager.get_result(key, job)["background_callback_error"]["msg"]

    try:
        assert start(b"alice:s3cret", "10.0.0.1") is None
        assert start(b"alice:s3cret", "10.0.0.2") is None
        said = start(b"alice:s3cret", "10.0.0.3")
        assert said is not None and said.startswith(f"you are running {JOBS_PER_CLIENT} jobs on this server already")
        assert start(b"bob:pw", "10.0.0.1") is None  # the address alice asked from: bob's own share
        assert start(b"bob:pw", "10.0.0.1") is None
    finally:
        release.touch()
        for key, job in started:
            deadline = time.monotonic() + 30
            while not manager.result_ready(key):
                assert time.monotonic() < deadline, "a job left no result"
                time.sleep(0.05)
            assert manager.get_result(key, job) == "done"
