"""A real `tilescope serve --auth`: its users file read again when it changes, failed sign-ins
limited per address and per user, and a users file others may write refused."""

from __future__ import annotations

import base64
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tilescope.app.cli import main
from tilescope.app.web.auth import set_password
from tilescope.app.web.sign_in_limits import FAILURES_PER_ADDRESS, FAILURES_PER_USER

from . import serving

MODEL = "zoo:mlp?layers=1"


def _status(url: str, credentials: bytes) -> tuple[int, str | None]:
    """(the status of the page's data asked for with these credentials, its Retry-After)."""
    token = base64.b64encode(credentials).decode()
    request = urllib.request.Request(url + "_dash-layout", headers={"Authorization": f"Basic {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.headers.get("Retry-After")
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Retry-After")


def _passwd(users, name: str, password: str) -> None:
    """`tilescope passwd` in a process of its own, as an operator runs it beside the server."""
    subprocess.run(
        [sys.executable, "-m", "tilescope.app.cli", "passwd", str(users), name],
        input=password + "\n",
        text=True,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def served(tmp_path):
    """(the page's URL, the users file of alice (s3cret) and bob (pw), the server)."""
    users = tmp_path / "users"
    set_password(users, "alice", "s3cret")
    set_password(users, "bob", "pw")
    url, proc = serving.start(MODEL, f"sqlite:///{tmp_path / 'ui.db'}", "--auth", str(users), logs=tmp_path)
    yield url, users, proc
    proc.stop()  # again, should the test have failed before it stopped it


def test_a_changed_password_or_a_removed_user_signs_in_no_more(served):
    url, users, proc = served
    assert _status(url, b"alice:s3cret")[0] == 200 and _status(url, b"bob:pw")[0] == 200
    _passwd(users, "alice", "n3w")
    assert _status(url, b"alice:s3cret")[0] == 401  # known to the server a moment ago
    assert _status(url, b"alice:n3w")[0] == 200
    kept = [line for line in users.read_text().splitlines() if not line.startswith("bob:")]
    users.write_text("\n".join(kept) + "\n")  # bob removed by hand, the file rewritten in place
    assert _status(url, b"bob:pw")[0] == 401
    users.chmod(0o666)  # anyone may now add themselves: nobody is let in on its word
    assert _status(url, b"alice:n3w")[0] == 401
    users.chmod(0o600)
    assert _status(url, b"alice:n3w")[0] == 200
    output = proc.stop()  # its whole log
    assert "Traceback" not in output
    assert output.count("writable by others") == 1  # said once, not at every request


def test_failed_sign_ins_are_limited_per_user_and_per_address(served):
    url, _, proc = served
    assert _status(url, b"alice:s3cret")[0] == 200  # alice's page is open before the guessing starts
    guesses = [_status(url, b"bob:guess%d" % i) for i in range(FAILURES_PER_USER + 1)]
    assert [code for code, _ in guesses] == [401] * FAILURES_PER_USER + [429]
    assert int(guesses[-1][1]) > 0  # says when to come back
    assert _status(url, b"bob:pw")[0] == 429  # a sign-in as bob waits, right password or not
    assert _status(url, b"alice:s3cret")[0] == 200  # a page already signed in goes on
    # other names from the same address, each guessed once: the address's own limit
    codes = [_status(url, b"user%d:guess" % i)[0] for i in range(FAILURES_PER_ADDRESS)]
    refused = FAILURES_PER_ADDRESS - FAILURES_PER_USER
    assert codes == [401] * refused + [429] * (FAILURES_PER_ADDRESS - refused)
    assert _status(url, b"nobody:x")[0] == 429
    assert _status(url, b"alice:s3cret")[0] == 200
    output = proc.stop()  # its whole log
    assert "Traceback" not in output


def _serve_refused(tmp_path, capsys, users) -> str:
    db = tmp_path / "perf.db"
    assert main(["serve", "--auth", str(users), "--db", f"sqlite:///{db}", "--model", MODEL]) == 2
    assert not db.exists()  # refused before anything else
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_a_users_file_others_may_write_is_refused_at_start(tmp_path, capsys):
    users = tmp_path / "users"
    set_password(users, "alice", "s3cret")
    users.chmod(0o666)
    assert "writable by others" in _serve_refused(tmp_path, capsys, users)
    users.chmod(0o620)
    assert "writable by others" in _serve_refused(tmp_path, capsys, users)


def test_an_entry_of_too_much_work_or_an_unknown_method_is_refused_at_start(tmp_path, capsys):
    users = tmp_path / "users"
    set_password(users, "alice", "s3cret")
    hashed = "pbkdf2:sha256:999999999$salt$" + "ab" * 32
    users.write_text(users.read_text() + f"bob:{hashed}\n")
    err = _serve_refused(tmp_path, capsys, users)
    assert f"{users}:2:" in err and "bob" in err and "999,999,999" in err
    users.write_text(f"carol:bcrypt$salt${'ab' * 32}\n")
    err = _serve_refused(tmp_path, capsys, users)
    assert f"{users}:1:" in err and "carol" in err and "'bcrypt'" in err
