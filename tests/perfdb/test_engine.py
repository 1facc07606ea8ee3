"""open_db: any SQLAlchemy URL; an unusable database is one DatabaseError line naming the cause."""

from __future__ import annotations

import pytest

from tilescope.perfdb import engine as engine_mod
from tilescope.perfdb.engine import DatabaseError, open_db
from tilescope.perfdb.location import ENV_VAR, default_url


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


def test_a_connection_the_server_dropped_is_replaced_unseen(pg_schemas, postgres_url):
    """PostgreSQL ended the pooled connection (a restart, a failover, an idle timeout): the next
    use reconnects rather than failing once."""
    from sqlalchemy import create_engine

    engine = open_db(pg_schemas())
    with engine.connect() as connection:
        pid = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:  # this test's own connection, by its process id
        assert connection.exec_driver_sql(f"SELECT pg_terminate_backend({pid})").scalar()
    admin.dispose()
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT 1").scalar() == 1
    engine.dispose()


def test_the_embedded_database_is_readable_by_its_user_only(tmp_path, monkeypatch):
    """It holds every model's source and run: 0600 in a 0700 directory (it was 0644 in 0755), and
    one an older tilescope made is tightened when opened."""
    import stat

    from tilescope.perfdb.engine import session_factory
    from tilescope.perfdb.store import save_run

    from .test_store import _new_run

    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    folder = tmp_path / "data" / "tilescope"

    def modes() -> dict:
        return {p.name: stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.iterdir()]}

    engine = open_db()
    with session_factory(engine)() as session:
        save_run(session, _new_run())
    assert modes() == {"tilescope": 0o700, "perf.db": 0o600, "perf.db-wal": 0o600, "perf.db-shm": 0o600}
    engine.dispose()
    folder.chmod(0o755)
    (folder / "perf.db").chmod(0o644)
    open_db().dispose()
    assert modes()["tilescope"] == 0o700 and modes()["perf.db"] == 0o600


def test_a_database_file_alone_holds_what_a_command_stored_once_it_exits(tmp_path):
    """`tilescope run` exits without tearing the interpreter down: its connections are closed on
    the way out, so the write-ahead log is folded into the file, and a copy of the file alone
    (what a user shares) holds the run."""
    import shutil
    import subprocess
    import sys

    from tilescope.perfdb.runs import list_runs

    db = tmp_path / "runs.db"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tilescope.app.cli import entry; entry()",
            "run",
            "zoo:mlp",
            "--db",
            f"sqlite:///{db}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "runs.db-wal").exists() or (tmp_path / "runs.db-wal").stat().st_size == 0
    shutil.copy(db, tmp_path / "copy.db")
    with engine_mod.session_factory(open_db(f"sqlite:///{tmp_path / 'copy.db'}"))() as session:
        assert [run.model_ref for run in list_runs(session)] == ["zoo:mlp"]
