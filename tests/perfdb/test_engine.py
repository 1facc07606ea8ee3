"""open_db: any SQLAlchemy URL; an unusable database is one DatabaseError line naming the cause."""

from __future__ import annotations

import pytest

from perfdb import engine as engine_mod
from perfdb.engine import DatabaseError, open_db
from perfdb.location import ENV_VAR, default_url


def _one_line(err) -> str:
    message = str(err.value)
    assert message and "\n" not in message
    return message


def test_env_var_sets_the_default_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/from_env.db"
    monkeypatch.setenv(ENV_VAR, url)
    assert ENV_VAR == "TILESCOPE_DB"
    assert default_url() == url
    open_db()
    assert (tmp_path / "from_env.db").is_file()


def test_default_url_without_env_is_a_user_sqlite_file(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    url = default_url()
    assert url.startswith("sqlite:///") and url.endswith("perf.db")


def test_empty_env_var_is_ignored(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "")
    assert default_url().endswith("perf.db")


def test_unreachable_postgresql(monkeypatch):
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://nobody:secret@127.0.0.1:1/x"
    with pytest.raises(DatabaseError) as err:
        open_db(url)
    message = _one_line(err)
    assert message.startswith("cannot open database")
    assert "127.0.0.1" in message
    assert "secret" not in message  # the password is hidden


def test_unknown_dialect():
    with pytest.raises(DatabaseError) as err:
        open_db("nosuchdb://host/x")
    assert "not usable" in _one_line(err)


def test_not_a_url():
    with pytest.raises(DatabaseError) as err:
        open_db("just some words")
    assert "not usable" in _one_line(err)


def test_file_that_is_not_a_database(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"definitely not sqlite " * 200)
    with pytest.raises(DatabaseError) as err:
        open_db(f"sqlite:///{path}")
    message = _one_line(err)
    assert "not a database" in message and str(path) in message


def test_directory_that_cannot_be_created(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(DatabaseError) as err:
        open_db(f"sqlite:///{tmp_path}/afile/t.db")
    assert "afile" in _one_line(err)


def test_sqlite_pragmas_are_set(sqlite_url):
    engine = open_db(sqlite_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    assert engine_mod.session_factory(engine)().bind is engine
