"""Bring a perf database to the newest schema with Alembic: empty, current, or made before Alembic.

The migration scripts ship inside the package (perfdb/migrations); Alembic is configured here, so
no alembic.ini is needed. A new revision (edit schema.py first), from the repository root,
compared with a scratch database at the previous head:

    python -c "from alembic import command; from tilescope.perfdb.migrate import config, upgrade; \\
               upgrade('sqlite:///scratch.db'); \\
               command.revision(config('sqlite:///scratch.db'), 'what changed', autogenerate=True, rev_id='0002')"

A revision that copies or moves a table's rows joins REWRITES_TABLES, so an upgrade through it
gives the space they held back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, create_engine

SCRIPTS = Path(__file__).resolve().parent / "migrations"
INITIAL = "0001"  # the schema create_all made before Alembic; older databases are adopted as it
# revisions that rewrite tables, leaving the space their rows held free: an upgrade through one of
# them reclaims it (_reclaim), and no other upgrade does
REWRITES_TABLES = {  # revision -> the databases it rewrites tables of
    "0002": ("sqlite", "postgresql"),  # zones and op_records altered (SQLite's batch mode copies them)
    "0005": ("sqlite", "postgresql"),  # zone rows packed into timeline blocks, their tables dropped
    "0014": ("sqlite",),  # timeline blocks gain a reference to another: SQLite's batch mode copies them
}


def config(url: str | None = None, connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPTS).replace("%", "%%"))  # configparser syntax
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    cfg.attributes["connection"] = connection
    return cfg


@lru_cache(maxsize=1)
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(config())


def head() -> str:
    return _scripts().get_current_head()


def current(connection: Connection) -> str | None:
    """The database's revision; None when it has no alembic_version table (empty, or pre-Alembic)."""
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(db: str | Engine) -> tuple[str | None, str]:
    """Upgrade `db` (a URL or an engine) to the newest revision; returns (revision before, after).

    Safe to call from several processes at once: the check and the migration run under a lock
    (SQLite's write lock, a PostgreSQL advisory lock), and whoever comes second finds it done."""
    engine = create_engine(db) if isinstance(db, str) else db
    try:
        with engine.connect() as connection:  # the usual case, no lock: already current
            before = current(connection)
        if before == head():
            return before, before
        with engine.connect() as connection, _foreign_keys_off(connection), connection.begin():
            _lock(connection)
            before = current(connection)
            if before is not None and before not in {s.revision for s in _scripts().walk_revisions()}:
                raise CommandError(
                    f"its schema revision {before!r} is unknown to this tilescope (newest known {head()!r}); "
                    "was it written by a newer tilescope?"
                )
            broken_before = _foreign_key_violations(connection)
            cfg = config(connection=connection)
            start = before
            if before is None and sa.inspect(connection).has_table("runs"):
                _adopt(connection)
                command.stamp(cfg, INITIAL)
                start = INITIAL
            rewrites = _rewrites_tables(
                start, connection.dialect.name
            )  # nothing, if another process upgraded it meanwhile
            command.upgrade(cfg, "head")
            _check_foreign_keys(connection, broken_before)
        # only after this process's own migration rewrote tables: on PostgreSQL a reclaim is a
        # VACUUM (ANALYZE) of what may be a team's shared database
        if rewrites:
            _reclaim(engine)
        return before, head()
    finally:
        if isinstance(db, str):
            engine.dispose()


def _rewrites_tables(start: str | None, dialect: str) -> bool:
    """Whether an upgrade from `start` to the newest revision runs one that rewrites tables of a
    `dialect` database (from None, an empty database: its tables hold no rows to move)."""
    if start is None:
        return False
    revisions = _scripts().iterate_revisions(head(), start)
    return any(dialect in REWRITES_TABLES.get(script.revision, ()) for script in revisions)


RECLAIMED_FREE = 0.25  # of a SQLite file's pages: past this share free, an upgrade vacuums it


def _reclaim(engine: Engine) -> None:
    """After a migration moved rows (0005 packed zone rows into blocks and dropped their tables):
    SQLite keeps the pages they held as free space in the file (a database of 562 MB was 93% free
    where one made at the newest revision held 44 MB), so it is rewritten without them once a
    quarter of it is free; PostgreSQL frees a dropped table itself, and is told to vacuum and
    analyze the tables, so the planner knows the new ones at once. A database busy past the
    lock's wait is left as it is: its data is whole, only larger."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        try:
            if connection.dialect.name == "sqlite":
                pages = connection.exec_driver_sql("PRAGMA page_count").scalar()
                if connection.exec_driver_sql("PRAGMA freelist_count").scalar() > pages * RECLAIMED_FREE:
                    connection.exec_driver_sql("VACUUM")
            elif connection.dialect.name == "postgresql":
                quote = connection.dialect.identifier_preparer.quote
                tables = sorted(sa.inspect(connection).get_table_names())  # of the schema it uses
                connection.exec_driver_sql(f"VACUUM (ANALYZE) {', '.join(quote(t) for t in tables)}")
        except sa.exc.OperationalError:
            pass


@contextmanager
def _foreign_keys_off(connection: Connection) -> Iterator[None]:
    """SQLite alters a table by copying it to a new one and dropping the old (Alembic's batch mode);
    with foreign keys on, dropping `runs` would cascade-delete every run's ops and zones. The pragma
    only takes effect outside a transaction, so it is set before the migration's and restored after."""
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()
    try:
        yield
    finally:
        if sqlite:
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")
            connection.commit()


def _foreign_key_violations(connection: Connection) -> set[tuple]:
    """Rows pointing at missing rows (SQLite only: PostgreSQL never lets them in). A database may
    hold some already, if a run was deleted with foreign keys off: those are not the migration's."""
    if connection.dialect.name != "sqlite":
        return set()
    return {tuple(row) for row in connection.exec_driver_sql("PRAGMA foreign_key_check").all()}


def _check_foreign_keys(connection: Connection, before: set[tuple]) -> None:
    new = _foreign_key_violations(connection) - before
    if new:
        raise CommandError(f"the migration left {len(new)} rows pointing at missing rows (first: {sorted(new)[0]})")


def _lock(connection: Connection) -> None:
    """Serialize migrations: two processes opening a new database must not both create its tables."""
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock now, not at the first write
    elif connection.dialect.name == "postgresql":  # per schema: tests migrate many at once
        connection.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext('tilescope migrate ' || current_schema()))"))


def _adopt(connection: Connection) -> None:
    """A database created by create_all before Alembic, perhaps by an older tilescope: give it the
    initial revision's missing tables, columns (old rows get the column's default) and indexes,
    keeping every row, so it can be stamped as that revision."""
    initial = _scripts().get_revision(INITIAL).module.schema()
    initial.create_all(connection)  # only the tables it lacks
    inspector = sa.inspect(connection)
    ops = Operations(MigrationContext.configure(connection))
    for table in initial.sorted_tables:
        present = {c["name"] for c in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name not in present:
                default = column.default.arg if column.default is not None else None
                server_default = default if default is None or isinstance(default, str) else sa.text(repr(default))
                ops.add_column(table.name, sa.Column(column.name, column.type, server_default=server_default))
        indexes = {i["name"] for i in inspector.get_indexes(table.name)}
        for index in table.indexes:
            if index.name not in indexes:
                index.create(connection)
