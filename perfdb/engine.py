"""Open the tracing database: SQLite in the user's data directory by default, any SQLAlchemy URL else."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from .schema import Base

ENV_VAR = "TILESCOPE_DB"


class DatabaseError(Exception):
    """The database cannot be reached or used; str() is one line naming the cause."""


def default_url() -> str:
    if os.environ.get(ENV_VAR):
        return os.environ[ENV_VAR]
    return f"sqlite:///{Path(user_data_dir('tilescope')) / 'perf.db'}"


def _describe(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def open_db(url: str | None = None) -> Engine:
    """Connect, create missing tables and columns, and fail with one line if the database is
    unusable. Only the default database's directory is created; a given path must exist."""
    default = url is None
    url = url or default_url()
    try:
        if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
            folder = Path(url.removeprefix("sqlite:///")).expanduser().parent
            if default:
                folder.mkdir(parents=True, exist_ok=True)
            elif not folder.is_dir():
                raise DatabaseError(f"database {_describe(url)!r}: directory {folder} does not exist")
        engine = create_engine(url)
    except (ArgumentError, ImportError) as err:
        raise DatabaseError(f"database URL {_describe(url)!r} is not usable: {err}") from None
    except OSError as err:
        raise DatabaseError(f"database {_describe(url)!r}: {err.strerror}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    try:
        Base.metadata.create_all(engine)
        _add_missing_columns(engine)
    except OperationalError as err:
        reason = str(err.orig).strip().splitlines()[0] if err.orig else str(err).splitlines()[0]
        raise DatabaseError(f"cannot open database {_describe(url)!r}: {reason}") from None
    except SQLAlchemyError as err:
        raise DatabaseError(f"cannot open database {_describe(url)!r}: {str(err).splitlines()[0]}") from None
    return engine


def _add_missing_columns(engine: Engine) -> None:
    """A database written by an earlier tilescope lacks columns added since: add them, with their
    defaults, so its runs stay readable and new runs can be stored next to them."""
    inspector = inspect(engine)
    with engine.begin() as connection:
        for table in Base.metadata.sorted_tables:
            present = {c["name"] for c in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name in present:
                    continue
                kind = column.type.compile(dialect=engine.dialect)
                default = column.default.arg if column.default is not None and not callable(column.default.arg) else None
                literal = "" if default is None else f" DEFAULT {default!r}" if isinstance(default, str) else f" DEFAULT {default}"
                connection.execute(text(f'ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}{literal}'))


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")  # cascade deletes of a run's ops and zones
    cursor.execute("PRAGMA journal_mode=WAL")  # readers (the app) never block a writer (the CLI)
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
