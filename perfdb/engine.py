"""Open the tracing database: SQLite in the user's data directory by default, any SQLAlchemy URL else."""

from __future__ import annotations

import atexit
import os
import time
import weakref
from pathlib import Path

from alembic.util import CommandError
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from tilescope.perfdb.errors import DatabaseError
from tilescope.perfdb.location import default_url, embedded_path, embedded_url, keep_private
from tilescope.perfdb.migrate import upgrade


def _describe(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def open_db(url: str | None = None) -> Engine:
    """Connect, upgrade the schema to the newest revision (perfdb.migrate), and fail with one line
    if the database is unusable. Only the default database's directory is created; a given path must exist."""
    default = url is None
    url = url or default_url()
    try:
        if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
            folder = Path(url.removeprefix("sqlite:///")).expanduser().parent
            if url == embedded_url():
                keep_private(embedded_path())
            elif default:
                folder.mkdir(parents=True, exist_ok=True)
            elif not folder.is_dir():
                raise DatabaseError(f"database {_describe(url)!r}: directory {folder} does not exist")
        # a connection the server ended (a restart, a failover, an idle timeout) is found at
        # checkout and replaced: without the ping the next request after one failed
        engine = create_engine(url, pool_pre_ping=True)
    except (ArgumentError, ImportError) as err:
        raise DatabaseError(f"database URL {_describe(url)!r} is not usable: {err}") from None
    except OSError as err:
        raise DatabaseError(f"database {_describe(url)!r}: {err.strerror}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        _SQLITE[engine] = os.getpid()
    try:
        upgrade(engine)
    except OperationalError as err:
        reason = str(err.orig).strip().splitlines()[0] if err.orig else str(err).splitlines()[0]
        raise DatabaseError(f"cannot open database {_describe(url)!r}: {reason}") from None
    except (SQLAlchemyError, CommandError) as err:
        raise DatabaseError(f"cannot open database {_describe(url)!r}: {str(err).splitlines()[0]}") from None
    return engine


_SQLITE: weakref.WeakKeyDictionary[Engine, int] = weakref.WeakKeyDictionary()  # -> the process that opened it


@atexit.register
def _close_sqlite() -> None:
    """Every SQLite engine's connections closed as the process that opened it ends: the last to
    close folds the write-ahead log into the database file, so the file alone holds every run
    stored (`tilescope` exits without tearing the interpreter down, which left the log beside
    it: a copy of the file alone had lost the run). A forked process leaves its parent's alone."""
    for engine, pid in list(_SQLITE.items()):
        if pid == os.getpid():
            engine.dispose()


BUSY_TIMEOUT_S = 60  # how long a SQLite writer waits for another's write: storing a 100k-op run takes ~15 s


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")
    cursor.execute("PRAGMA foreign_keys=ON")  # cascade deletes of a run's ops and zones
    _use_wal(dbapi_connection, cursor)  # readers (the app) never block a writer (the CLI)
    # in WAL mode, NORMAL syncs at checkpoints rather than at every commit: a crash cannot corrupt
    # the database, and a power cut can lose at most the last runs stored (SQLite's WAL docs)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _use_wal(dbapi_connection, cursor) -> None:
    """Switch the database to WAL unless it is already. The switch needs the database to itself and
    SQLite does not wait for that as it waits for locks (busy_timeout): two processes opening a new
    database at once would fail with "database is locked". So retry, for as long as busy_timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except dbapi_connection.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
